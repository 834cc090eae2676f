"""A served session cannot hold the machine's measurement slots for long (lab.served_budget):
a bench beyond its budget is refused in the browser before it starts, a run beyond its
budget before any runner exists, and a runner still holding its slot at the cap is killed,
its slot free at once."""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import aiohttp
import pytest

from tests.serve.test_serve_autogroup import _sessions
from tfolab.core import slots
from tfolab.core.errors import UserError
from tfolab.lab import served_budget, session
from tfolab.lab.catalog import find_lab
from tfolab.lab.plan import plan
from tfolab.lab.prediction import predict
from tfolab.lab.run_plan import for_real
from tfolab.runner import client
from tfolab.runner.protocol import BenchJob, Failed, SlotTaken
from tfolab.runner.served_class import SERVED_BY_ENV

ROOT = Path(__file__).resolve().parents[2]
ESCAPES = re.compile(r"\x1b\[[0-9;?<>=]*[A-Za-z]|\x1b[()][A-Z0-9]|\x1b[=>]")
SHIFT_TAB, HOME, CLEAR_RIGHT = "\x1b[Z", "\x01", "\x0b"


class Screen:
    """What the served UI drew, escape sequences stripped."""

    def __init__(self) -> None:
        self.text = ""
        self.received = 0  # bytes drawn, escapes included (a focus change is escapes only)

    async def read(self, websocket: aiohttp.ClientWebSocketResponse) -> None:
        async for message in websocket:
            if message.type == aiohttp.WSMsgType.BINARY:
                self.received += len(message.data)
                self.text += ESCAPES.sub("", message.data.decode(errors="replace"))

    async def redrawn_since(self, received: int, cap_s: float = 5) -> None:
        """Until the session has drawn anything past `received` bytes (at most `cap_s`):
        the key sent then has been handled, however long the machine took to get to it."""
        deadline = time.monotonic() + cap_s
        while self.received == received and time.monotonic() < deadline:
            await asyncio.sleep(0.02)

    async def wait_for(self, text: str, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while text not in self.text:
            assert time.monotonic() < deadline, f"no {text!r} on the screen"
            await asyncio.sleep(0.2)

    async def settled(self, quiet_s: float, cap_s: float = 15) -> None:
        """Until the session has drawn nothing new for `quiet_s` (at most `cap_s`): what
        the last key changed is on the screen, however busy the machine is."""
        started = quiet_since = time.monotonic()
        drawn = len(self.text)
        while time.monotonic() - started < cap_s:
            await asyncio.sleep(0.05)
            if len(self.text) != drawn:
                drawn, quiet_since = len(self.text), time.monotonic()
            elif time.monotonic() - quiet_since >= quiet_s:
                return


@contextlib.asynccontextmanager
async def served_ui(served) -> AsyncIterator[tuple[Screen, Callable[..., Awaitable[None]]]]:
    """A session of `served` over a real websocket, on its start screen: what it drew,
    and a way to type into it."""
    screen = Screen()
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(served.ws_url("width=300&height=50"), max_msg_size=0) as websocket,
    ):
        reader = asyncio.create_task(screen.read(websocket))
        try:
            await screen.wait_for("Labs")
            await asyncio.sleep(1)

            async def keys(*sequence: str) -> None:
                # A key goes to the widget focused when it is handled, and a focus
                # change is handled after the keys already sent: each key waits until
                # the session has drawn something after it, then nothing more for a
                # moment (on a busy machine a fixed pause was not enough: "200" typed
                # into a field still focused before its tab was handled; nor was a quiet
                # moment alone: CI's session had not yet drawn a tab's focus change when
                # the next "4D" went out, and a prediction landed in another field).
                for key in sequence:
                    drawn = screen.received
                    await websocket.send_json(["stdin", key])
                    await screen.redrawn_since(drawn)
                    await screen.settled(0.4 if key in ("\t", "\r", SHIFT_TAB) else 0.15)

            yield screen, keys
        finally:
            reader.cancel()


async def test_a_served_bench_beyond_its_budget_is_refused_before_it_starts(serve) -> None:
    served = serve()
    async with served_ui(served) as (screen, keys):
        await keys("b")
        await screen.wait_for("Press r to run the bench")
        # 100,000 requests one at a time at 300 and 200 ms: days in the slots.
        await keys(*[SHIFT_TAB] * 4, HOME, CLEAR_RIGHT, *"300,200")
        await keys("\t", HOME, CLEAR_RIGHT, *"100000", "\t", HOME, CLEAR_RIGHT, "1")
        await keys("\t", "\t", "\r")  # past the peer, to Run
        await screen.wait_for("a served session's bench may take 120 s")
        assert "Running the bench" not in screen.text
        (ui,) = _sessions(served.process.pid)
        assert not _descendants_running(ui, "tfolab.runner.bench_main")


async def test_a_served_run_beyond_its_budget_is_refused_in_the_browser(serve, tmp_path) -> None:
    served = serve()
    async with served_ui(served) as (screen, keys):
        try:
            await keys("\r")  # the first lab; the focus is on its first prediction
            await screen.wait_for("preset D/RTT ms")
            # 200 iterations at 400 ms one way: over 5 minutes in the slots.
            await keys(*["\t"] * 5, HOME, CLEAR_RIGHT, *"400")  # the delay field
            await screen.wait_for("D = 400 ms one way")
            await keys(*["\t"] * 3, HOME, CLEAR_RIGHT, *"200")  # the iterations field
            await keys("\t", "\t", *"4D", "\t", *"4D", "\r")  # predict first, as one must
            await keys("r")
            await screen.wait_for("a served session's run may take 60 s")
        except AssertionError:
            kept = tmp_path / "served-budget-screen.txt"
            kept.write_text(screen.text)
            print(f"what the session drew (escapes stripped): {kept}")
            raise
        (ui,) = _sessions(served.process.pid)
        assert not _descendants_running(ui, "tfolab.runner")


def _descendants_running(pid: int, module: str) -> list[int]:
    from tests.serve.test_serve import _descendants

    found = []
    for child in _descendants(pid):
        try:
            if module.encode() in Path(f"/proc/{child}/cmdline").read_bytes():
                found.append(child)
        except OSError:
            continue
    return found


async def test_a_served_run_beyond_its_budget_is_refused_before_any_runner(monkeypatch) -> None:
    monkeypatch.setenv(SERVED_BY_ENV, "1")

    def no_runner(*args: object, **kwargs: object) -> None:
        raise AssertionError("a runner was started")

    monkeypatch.setattr(client, "stream_events", no_runner)
    lab = find_lab("handshake")
    planned = plan(lab, iterations=200, delay_ms=400.0)
    with pytest.raises(UserError, match="a served session's run may take 60 s"):
        await session.run(for_real(planned, "auto"))
    small = predict(plan(lab, delay_ms=10.0), backend="auto")
    served_budget.check_run(small)  # the lab's own runs fit easily
    assert served_budget.run_seconds(small) < served_budget.RUN_BUDGET_S / 4
    monkeypatch.delenv(SERVED_BY_ENV)
    served_budget.check_run(predict(planned, backend="auto"))  # a terminal's


async def test_a_runner_holding_its_slot_past_the_cap_is_killed(monkeypatch, tmp_path) -> None:
    monkeypatch.chdir(ROOT)  # python -m tests.serve.slot_holder
    monkeypatch.setenv(slots.DIR_ENV, str(tmp_path / "slots"))  # private slots: nobody waits
    monkeypatch.setenv(slots.SIZE_ENV, "1")
    job = BenchJob(delay_ms=0, backend="none", requests=1, concurrency=1, servers=("tfolab",))
    started = time.monotonic()
    events = [
        event
        async for event in client.stream_events(
            job, module="tests.serve.slot_holder", hold_cap_s=1.0
        )
    ]
    assert isinstance(events[0], SlotTaken)
    assert isinstance(events[-1], Failed) and "held a measurement slot for 1 s" in events[-1].reason
    assert time.monotonic() - started < 10
    table = slots.SlotTable.open()
    slot = await asyncio.wait_for(asyncio.to_thread(table.acquire), 5)  # free at once
    slot.release()

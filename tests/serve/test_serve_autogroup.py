"""How `tfolab serve` makes room for measuring runs: one scheduler autogroup at nice 19
that all its sessions share (tfolab.core.autogroup.lead_low_group), whether started as a
shell's job or not; and its sessions name it, so that their runs can keep the class off a
CPU while they measure (tfolab.runner.served_class)."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import aiohttp
import pytest

from tests.processes import running
from tests.serve.test_serve import _descendants
from tfolab.runner import served_class

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/autogroup").exists()
    or Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() != "1",
    reason="no scheduler autogroups here (CONFIG_SCHED_AUTOGROUP, kernel.sched_autogroup_enabled)",
)


async def _first_screen(
    ws_url: str, http: aiohttp.ClientSession
) -> aiohttp.ClientWebSocketResponse:
    websocket = await http.ws_connect(ws_url)
    received, deadline = 0, time.monotonic() + 60
    while received < 2000 and time.monotonic() < deadline:
        message = await asyncio.wait_for(websocket.receive(), 60)
        if message.type == aiohttp.WSMsgType.BINARY:
            received += len(message.data)
    assert received >= 2000
    return websocket


def _sessions(pid: int) -> list[int]:
    """The UI processes (`python -m tfolab`) under serve."""
    found = []
    for child in _descendants(pid):
        try:
            args = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if args[-3:] == [b"-m", b"tfolab", b""]:
            found.append(child)
    return found


@pytest.mark.parametrize("as_a_shell_job", [False, True], ids=["child", "shell-job"])
async def test_every_session_shares_one_autogroup_at_nice_19(serve, as_a_shell_job: bool) -> None:
    # Ours may be any group, or none shown at all: a process never under a setsid
    # (a container's, a CI runner's) is in the root group, whose file is empty.
    ours_before = Path("/proc/self/autogroup").read_text()
    served = serve(as_a_shell_job=as_a_shell_job)
    ws_url = served.ws_url()
    async with aiohttp.ClientSession() as http:
        sockets = [await _first_screen(ws_url, http) for _ in range(2)]
        sessions = _sessions(served.process.pid)
        groups = {Path(f"/proc/{pid}/autogroup").read_text().strip() for pid in sessions}
        for websocket in sockets:
            await websocket.close()
    assert len(sessions) == 2
    assert len(groups) == 1 and groups.pop().endswith("nice 19")
    assert Path("/proc/self/autogroup").read_text() == ours_before  # ours untouched
    if as_a_shell_job:
        # What Ctrl+C does: SIGINT to the job; the server behind it stops too.
        everything = [served.process.pid, *_descendants(served.process.pid)]
        served.process.send_signal(signal.SIGINT)
        served.process.wait(timeout=30)
        deadline = time.monotonic() + 10
        while any(running(pid) for pid in everything) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [pid for pid in everything if running(pid)]


async def test_sessions_name_their_server_for_the_spare_cpu(serve) -> None:
    served = serve(as_a_shell_job=True)  # the server is then the waiter's child
    ws_url = served.ws_url()
    async with aiohttp.ClientSession() as http:
        websocket = await _first_screen(ws_url, http)
        (session,) = _sessions(served.process.pid)
        environment = Path(f"/proc/{session}/environ").read_bytes().split(b"\0")
        named = [v for v in environment if v.startswith(served_class.SERVED_BY_ENV.encode() + b"=")]
        assert len(named) == 1
        server = int(named[0].split(b"=")[1])
        assert session in served_class.the_class(server, measuring=0)
        await websocket.close()

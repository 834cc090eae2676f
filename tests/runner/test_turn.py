"""A runner's measuring turn (tfolab.runner.turn), in real processes: while it holds its
slot a lab's turn leads its own session, runs itself and its server at SCHED_FIFO and
keeps a served class off the last CPU; however the turn ends (an exception inside it,
SIGTERM, SIGHUP) the lab is dismantled and the class, the scheduling and the slot are
given back, once, by the process itself, not by its death. A bench's turn is the slot
alone, and a wait for quiet before setup counts as time in line.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.environment import require_or_skip
from tests.processes import running
from tests.runner.holders import ROOT, Holder
from tfolab.core.slots import SIZE_ENV
from tfolab.runner import priority
from tfolab.runner.served_class import SERVED_BY_ENV

pytestmark = pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to keep one free"
)


class Turn:
    """tests/runner/turn_holder.py, followed line by line."""

    def __init__(self, directory: Path, what: str, served_by: int | None = None) -> None:
        env = dict(os.environ, **{SIZE_ENV: "1"}, PYTHONPATH=str(ROOT))
        env.pop(SERVED_BY_ENV, None)
        if served_by is not None:
            env[SERVED_BY_ENV] = str(served_by)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.runner.turn_holder", str(directory), what],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,  # unbuffered: a line read never holds the next one back from select
            env=env,
            cwd=ROOT,
        )
        self.lines: list[str] = []

    def until(self, prefix: str, timeout_s: float = 20.0) -> str:
        """The rest of the first line (from now) that starts with `prefix`."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout_s
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            while True:
                if not selector.select(max(deadline - time.monotonic(), 0)):
                    raise AssertionError(f"no {prefix} in {timeout_s} s; so far {self.lines}")
                line = self.process.stdout.readline().decode().strip()
                if not line:
                    raise AssertionError(f"it ended before {prefix}; so far {self.lines}")
                self.lines.append(line)
                if line.startswith(prefix + " ") or line == prefix:
                    return line[len(prefix) :].strip()

    def event(self, name: str) -> dict[str, object]:
        found = [line.split(" ", 2)[2] for line in self.lines if line.startswith(f"EVENT {name} ")]
        assert len(found) == 1, self.lines
        return dict(json.loads(found[0]))

    def measuring(self) -> tuple[int, int]:
        server, delayer = self.until("MEASURING").split()
        return int(server), int(delayer)

    def say(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{line}\n".encode())

    def after(self) -> dict[str, object]:
        return dict(json.loads(self.until("AFTER")))

    def finish(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        assert self.process.wait(timeout=10) == 0

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


def _record(directory: Path) -> str:
    """What the slot file says of its last hand-over: "T" taken, "R" given back."""
    return (directory / "slot-0").read_text().split()[0]


def _realtime_or_skip() -> None:
    if not priority.realtime_permitted()[0]:
        require_or_skip("root", "SCHED_FIFO needs root (or CAP_SYS_NICE)")


def test_an_error_inside_a_lab_turn_gives_everything_back_once(
    slot_dir: Path, served_class: tuple[int, int, int]
) -> None:
    _realtime_or_skip()
    served, ui, waiting = served_class
    every = os.sched_getaffinity(served)
    turn = Turn(slot_dir, "lab", served_by=served)
    try:
        server, delayer = turn.measuring()
        # Measuring: its own session (autogroup), SCHED_FIFO for it and its server (the
        # delayer keeps its own), and the class off the last CPU.
        assert os.getsid(turn.process.pid) == turn.process.pid
        assert os.sched_getscheduler(turn.process.pid) == os.SCHED_FIFO
        assert os.sched_getscheduler(server) == os.SCHED_FIFO
        assert os.sched_getscheduler(delayer) == os.SCHED_OTHER
        assert os.sched_getaffinity(ui) == os.sched_getaffinity(waiting) == every - {max(every)}
        assert turn.event("SlotTaken")["slots"] == 1
        assert _record(slot_dir) == "T"
        next_run = Holder(slot_dir)
        assert next_run.next_line() == "WAIT 0"  # the slot is held
        turn.say("raise")
        next_run.wait_for_hold()
        assert not running(server) and not running(delayer)  # dismantled before the hand-back
        after = turn.after()
        assert turn.process.poll() is None  # given back by the turn, not by its death
        assert after == {
            "policy": os.SCHED_OTHER,
            "same_descriptors": True,  # the slot's and the quiet lock's closed, nothing else
            "sigterm_default": True,
            "lab_running": [False, False],
        }
        assert os.sched_getaffinity(ui) == os.sched_getaffinity(waiting) == every
        turn.finish()
        assert _record(slot_dir) == "T"  # the next run's: nothing of the turn's came after
        next_run.release()
    finally:
        turn.kill()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_during_a_turn_gives_everything_back(
    slot_dir: Path, served_class: tuple[int, int, int], signum: signal.Signals
) -> None:
    _realtime_or_skip()
    served, ui, waiting = served_class
    every = os.sched_getaffinity(served)
    turn = Turn(slot_dir, "lab", served_by=served)
    try:
        lab = turn.measuring()
        assert os.sched_getaffinity(ui) == every - {max(every)}
        turn.process.send_signal(signum)
        assert turn.process.wait(timeout=10) == 128 + signum
        assert _record(slot_dir) == "R"  # given back; a killed holder's slot says "T"
        assert os.sched_getaffinity(ui) == os.sched_getaffinity(waiting) == every
        assert not [pid for pid in lab if running(pid)]
        next_run = Holder(slot_dir)
        assert next_run.wait_for_hold().endswith(" 0")  # nobody ahead, nothing held
        next_run.release()
    finally:
        turn.kill()


def test_a_sigkill_frees_the_slot_but_cannot_give_the_cpu_back(
    slot_dir: Path, served_class: tuple[int, int, int]
) -> None:
    """What the two tests above guard against: death alone frees the slot (the kernel drops
    the lock) without its record, and leaves the class off its CPU."""
    served, ui, _ = served_class
    every = os.sched_getaffinity(served)
    turn = Turn(slot_dir, "lab", served_by=served)
    lab: tuple[int, ...] = ()
    try:
        lab = turn.measuring()
        turn.kill()
        assert _record(slot_dir) == "T"
        assert os.sched_getaffinity(ui) == every - {max(every)}
        next_run = Holder(slot_dir)
        next_run.wait_for_hold()
        next_run.release()
    finally:
        turn.kill()
        for pid in lab:
            os.kill(pid, signal.SIGKILL)


def test_a_bench_turn_is_the_slot_alone(slot_dir: Path, served_class: tuple[int, int, int]) -> None:
    served, ui, waiting = served_class
    every = os.sched_getaffinity(served)
    turn = Turn(slot_dir, "bench", served_by=served)
    try:
        turn.measuring()
        assert os.getsid(turn.process.pid) == os.getsid(0)  # no session of its own
        assert os.sched_getscheduler(turn.process.pid) == os.SCHED_OTHER
        assert os.sched_getaffinity(ui) == os.sched_getaffinity(waiting) == every
        assert _record(slot_dir) == "T"
        turn.say("end")
        after = turn.after()
        assert after["same_descriptors"] and after["lab_running"] == [False, False]
        assert _record(slot_dir) == "R"
        turn.finish()
    finally:
        turn.kill()


def test_waiting_for_quiet_is_time_in_line_not_setup(slot_dir: Path) -> None:
    measuring = Holder(slot_dir)  # another run measures: setups wait for it
    measuring.wait_for_hold()
    turn = Turn(slot_dir, "bench")
    try:
        turn.until("SETTING-UP")
        time.sleep(0.5)
        measuring.release()
        setup_ms = float(turn.until("SETUP"))
        turn.measuring()
        assert float(str(turn.event("SlotTaken")["waited_ms"])) >= 450
        assert setup_ms < 450
        turn.say("end")
        turn.after()
        turn.finish()
    finally:
        turn.kill()

"""A slot holder in a process of its own (tests/runner/slot_holder.py), followed line by line.

Every holder is remembered; tests/runner/conftest.py kills those still running after
each test, passed or failed, so a failing test never leaves one holding a slot.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import ClassVar

from tfolab.core.slots import SIZE_ENV

HOLDER = ["-m", "tests.runner.slot_holder"]
ROOT = Path(__file__).resolve().parents[2]


class Holder:
    started: ClassVar[list[Holder]] = []  # every holder made, for kill_all() after each test

    def __init__(self, directory: Path, prefix: tuple[str, ...] = ()) -> None:
        env = dict(os.environ, **{SIZE_ENV: "1"}, PYTHONPATH=str(ROOT))
        self.process = subprocess.Popen(
            [*(prefix or (sys.executable,)), *HOLDER, str(directory)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
        Holder.started.append(self)
        self.lines: list[str] = []
        self.said_at_ns: list[int] = []  # when the holder printed each line (CLOCK_MONOTONIC)

    def next_line(self, timeout_s: float = 20.0) -> str:
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout_s
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            if not selector.select(max(deadline - time.monotonic(), 0)):
                raise AssertionError(f"no line in {timeout_s} s; so far {self.lines}")
        line, _, said_at = self.process.stdout.readline().strip().partition(" @")
        if not line:
            err = self.process.stderr.read() if self.process.stderr else ""
            raise AssertionError(f"the holder ended: {err[-500:]}")
        self.lines.append(line)
        self.said_at_ns.append(int(said_at))
        return line

    def wait_for_hold(self, timeout_s: float = 20.0) -> str:
        while not (line := self.next_line(timeout_s)).startswith("HOLD"):
            pass
        return line

    def release(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=10)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)


def kill_all() -> list[int]:
    """Kill every holder still running (a failed test leaves them); their pids."""
    killed = []
    for holder in Holder.started:
        if holder.process.poll() is None:
            killed.append(holder.process.pid)
            holder.kill()
    Holder.started.clear()
    return killed

"""A machine that disturbs a measurement: every CPU busy in bursts, above the lab's priority.

`python -m tests.labs.cpu_hog` takes every CPU at once for BURST_S out of every PERIOD_S at
SCHED_FIFO HOG_PRIORITY (above the lab's 5, below the delayer's 10: a late delayer is no
disturbance to repeat for, its own lateness is measured and taken out of the comparison;
far below the kernel's throttle of real-time tasks at 95 %), one pinned child per CPU,
from the moment it starts until the first lab runner (`-m tfolab.runner`) of the process
whose pid it reads on stdin has ended (or WAIT_S passed without one). So that process's
first runner is disturbed throughout, and any runner after it (a repeat) runs
undisturbed. It prints how many bursts it made. Root only.
"""

from __future__ import annotations

import os
import select
import sys
import time
from pathlib import Path

from tests.processes import running
from tfolab.core import lifetime

HOG_PRIORITY = 7
BURST_S = 0.012
PERIOD_S = 0.030
WAIT_S = 30.0
LONGEST_S = 120.0  # a child never hogs longer, whatever happens to its parent


def runner_pid(parent: int) -> int | None:
    """A lab runner started by `parent`, if there is one."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            status = (entry / "status").read_text()
        except OSError:
            continue
        if b"tfolab.runner" in argv and b"-m" in argv and f"\nPPid:\t{parent}\n" in status:
            return int(entry.name)
    return None


def hog(cpu: int, stop: int) -> int:
    """Busy in bursts on `cpu` until `stop` is readable (or its parent is gone); the number
    of bursts."""
    lifetime.die_with_parent()
    os.sched_setaffinity(0, {cpu})
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(HOG_PRIORITY))
    bursts = 0
    ends = time.monotonic() + LONGEST_S
    while not select.select([stop], [], [], 0)[0] and time.monotonic() < ends:
        # Every CPU's burst on one clock: a CPU left free while another is busy would take
        # the lab's threads (the scheduler pushes a woken real-time task to an idle CPU).
        start = time.monotonic() // PERIOD_S * PERIOD_S + PERIOD_S
        time.sleep(max(0.0, start - time.monotonic()))
        while time.monotonic() < start + BURST_S:
            pass
        bursts += 1
    return bursts


def main() -> int:
    children = []
    for cpu in sorted(os.sched_getaffinity(0)):
        stop_read, stop_write = os.pipe()
        count_read, count_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(count_write, str(hog(cpu, stop_read)).encode())
            os._exit(0)
        os.close(stop_read)
        os.close(count_write)
        children.append((pid, stop_write, count_read))
    runner = None
    try:
        parent = int(sys.stdin.readline())
        deadline = time.monotonic() + WAIT_S
        runner = runner_pid(parent)
        while runner is None and time.monotonic() < deadline:
            time.sleep(0.005)
            runner = runner_pid(parent)
        while runner is not None and running(runner):
            time.sleep(0.005)
    except ValueError:
        pass  # no parent given: stop at once
    total = 0
    for pid, stop_write, count_read in children:
        os.write(stop_write, b"x")
        with os.fdopen(count_read) as handle:
            total += int(handle.read() or 0)
        os.waitpid(pid, 0)
        os.close(stop_write)
    print(total if runner is not None else 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())

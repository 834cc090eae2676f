"""How long a lab's threads waited for a CPU: the evidence a disturbed iteration is repeated on.

Rules:
- A thread's schedstat (/proc/PID/task/TID/schedstat, its second field)
  counts the nanoseconds it spent runnable but not running. The threads that
  carry a lab's packets are the runner's own (the client runs in it through
  ctypes), the echo server's, the NFQUEUE delayer's where there is one, and
  each CPU's ksoftirqd (where the kernel defers packet processing when a CPU
  is busy).
- `LabThreads.waited_ns()` is their total so far; the difference across an
  iteration is what that iteration's packets may have waited on a runqueue.
- A virtual machine's CPUs can wait too, for the host's: then no thread of
  the guest is runnable-but-waiting, time just passes. The guest's kernel
  counts that as steal (/proc/stat, the aggregate "cpu" line's eighth value,
  in clock ticks: 10 ms at USER_HZ 100). `stolen_ns()` is the machine's total
  so far, every CPU's: a lower resolution than schedstat, and not only the
  lab's CPU, but the only figure inside the guest for a pause outside it.
  Nothing here judges it: the lab layer compares it with how far a measured
  time missed its band (tfolab.lab.repeats). A thread gone or unreadable
  counts nothing, so evidence can only be missing, never made up.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


def _thread_waits_ns(pid: int | str) -> int:
    """The run_delay of every thread of `pid`, summed (0 for a process that is gone)."""
    total = 0
    try:
        tasks = list((PROC / str(pid) / "task").iterdir())
    except OSError:
        return 0
    for task in tasks:
        try:
            fields = (task / "schedstat").read_text().split()
            total += int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
    return total


def stolen_ns(stat: Path = PROC / "stat") -> int:
    """The CPU time the hypervisor took from this machine so far, all CPUs (0 where the
    kernel does not count it, or /proc/stat cannot be read)."""
    try:
        with stat.open() as lines:
            first = lines.readline().split()
        ticks = int(first[8]) if first and first[0] == "cpu" else 0
    except (OSError, IndexError, ValueError):
        return 0
    return ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def softirq_threads() -> tuple[int, ...]:
    """The pids of the ksoftirqd kernel threads, one per CPU."""
    found = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            comm = (entry / "comm").read_text().strip()
        except OSError:
            continue
        if comm.startswith("ksoftirqd/"):
            found.append(int(entry.name))
    return tuple(sorted(found))


@dataclass(frozen=True)
class LabThreads:
    """The processes whose waits for a CPU delay a lab's packets."""

    pids: tuple[int, ...]

    @staticmethod
    def of(server: int, delayer: int | None) -> LabThreads:
        own = (os.getpid(), server) + ((delayer,) if delayer is not None else ())
        return LabThreads(own + softirq_threads())

    def waited_ns(self) -> int:
        return sum(_thread_waits_ns(pid) for pid in self.pids)

"""CPU affinity by process: the mechanism a measuring run uses to keep a CPU free.

Rules:
- Affinity and scheduling policy belong to a thread, not a process, so both
  are set thread by thread (`threads`); a process gone meanwhile has none.
- Setting is best effort: a thread that is gone, or not this user's to move,
  keeps what it had. Affinity is its owner's to set: no privilege is asked for.
- Who is moved where, and when, is the caller's (tfolab.runner.served_class).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable


def threads(pid: int | str) -> list[int]:
    """Every thread of a process ("self": this one); [] once it is gone."""
    try:
        return [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
    except FileNotFoundError:
        return []


def allowed_cpus(pid: int) -> list[int]:
    """The CPUs `pid` may run on, in order; [] if it is gone or cannot be asked."""
    try:
        return sorted(os.sched_getaffinity(pid))
    except OSError:
        return []


def set_cpus(pids: Iterable[int], cpus: set[int]) -> None:
    """Every thread of these processes on `cpus`, where permitted."""
    for tid in (t for pid in pids for t in threads(pid)):
        with contextlib.suppress(OSError):  # gone, or not ours to move
            os.sched_setaffinity(tid, cpus)

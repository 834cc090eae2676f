"""How a measuring lab's processes get the CPU at once when they wake.

Rules: lab processes are almost always asleep; on a busy machine a woken one
can wait out another task's time slice (about 3 ms with EEVDF), which would
be measured as TCP.
Root's runs take a low real-time priority, SCHED_FIFO 5 (tfo-delay takes its
own 10), and only while a measurement slot is held (tfolab.runner.turn), so
runs still setting up or waiting in line never compete at the measuring run's
priority. Unprivileged runs stay on normal scheduling; what makes room for
them is that the rest yields (tfolab.core.autogroup, tfolab.runner.served_class).
What was tried and left out is in docs/DESIGN.md, "Measurement slots".
"""

from __future__ import annotations

import contextlib
import os

from tfolab.core.affinity import threads

LAB_RT_PRIORITY = 5


def realtime_permitted() -> tuple[bool, str]:
    """Whether the lab's processes may run at SCHED_FIFO 5 here, tried and undone at once,
    and how they will be scheduled while measuring, in words."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(LAB_RT_PRIORITY))
    except OSError:
        return False, "normal scheduling (real-time priority not permitted): busy hosts add noise"
    normal_scheduling()
    return (
        True,
        f"lab processes at real-time priority {LAB_RT_PRIORITY} (SCHED_FIFO) while measuring",
    )


def prefer_realtime(others: tuple[int, ...] = ()) -> bool:
    """Move this process's threads and `others` to SCHED_FIFO 5; False where not permitted."""
    try:
        for pid in (*threads("self"), *others):
            os.sched_setscheduler(pid, os.SCHED_FIFO, os.sched_param(LAB_RT_PRIORITY))
    except OSError:
        return False
    return True


def normal_scheduling() -> None:
    """This process's threads back to SCHED_OTHER (always permitted: it lowers the priority)."""
    for tid in threads("self"):
        with contextlib.suppress(ProcessLookupError):
            os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))

"""How a measuring lab's processes get the CPU at once when they wake.

Lab processes are almost always asleep; on a busy machine a woken one can
wait out another task's time slice, which would be measured as TCP. Two ways
around that, both taken only while a measurement slot is held, so runs that
are setting up or waiting in line never compete at the measuring run's level:

- Root: SCHED_FIFO 5 (`prefer_realtime`; tfo-delay takes its own 10).
- Anyone, kernel 6.12 and later: EEVDF's shortest slice, 0.1 ms, asked for
  through sched_attr.sched_runtime (`prefer_short_slices`). A woken task whose
  slice is shorter than the running one's cancels that task's RUN_TO_PARITY
  protection (PREEMPT_SHORT, `check_preempt_wakeup_fair`), so it runs at
  once instead of after up to a whole default slice (1.4 ms on two cores).
  No privilege is needed; children inherit it.

Rule: everything here only ever lowers the priority of other work or asks
for what an unprivileged process may; where it is not permitted it says so.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import struct
import threading
from pathlib import Path

LAB_RT_PRIORITY = 5
SHORT_SLICE_NS = 100_000  # the shortest slice the kernel grants (it clamps to 0.1..100 ms)

_SCHED_SETATTR = {"x86_64": 314, "aarch64": 274, "riscv64": 274, "armv7l": 380}.get(
    platform.machine()
)
_SCHED_ATTR_SIZE_VER0 = 48  # size, policy, flags, nice, priority, runtime, deadline, period
_libc = ctypes.CDLL(None, use_errno=True)


def realtime_permitted() -> tuple[bool, str]:
    """Whether the lab's processes may run at SCHED_FIFO 5 here, tried and undone at once,
    and how the lab's processes will be scheduled while measuring, in words."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(LAB_RT_PRIORITY))
    except OSError:
        if short_slices_granted():
            return False, "normal scheduling with 0.1 ms slices while measuring (EEVDF)"
        return False, "normal scheduling (real-time priority not permitted): busy hosts add noise"
    normal_scheduling()
    return (
        True,
        f"lab processes at real-time priority {LAB_RT_PRIORITY} (SCHED_FIFO) while measuring",
    )


def _threads(pid: int | str) -> list[int]:
    """Every thread of a process (a scheduling policy belongs to a thread)."""
    try:
        return [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
    except FileNotFoundError:
        return []


def prefer_realtime(others: tuple[int, ...] = ()) -> bool:
    """Move this process's threads and `others` to SCHED_FIFO 5; False where not permitted."""
    try:
        for pid in (*_threads("self"), *others):
            os.sched_setscheduler(pid, os.SCHED_FIFO, os.sched_param(LAB_RT_PRIORITY))
    except OSError:
        return False
    return True


def _set_slice(tid: int, slice_ns: int) -> bool:
    """sched_setattr(tid): SCHED_OTHER at its present nice, asking for `slice_ns` (0: default)."""
    if _SCHED_SETATTR is None:
        return False
    try:
        nice = os.getpriority(os.PRIO_PROCESS, tid)  # kept: lowering it would need privilege
    except OSError:
        return False  # the thread is gone
    policy, flags, rt_priority, deadline, period = os.SCHED_OTHER, 0, 0, 0, 0
    attr = struct.pack(
        "IIQiIQQQ",
        _SCHED_ATTR_SIZE_VER0,
        policy,
        flags,
        nice,
        rt_priority,
        slice_ns,
        deadline,
        period,
    )
    buffer = ctypes.create_string_buffer(attr, len(attr))
    return bool(_libc.syscall(_SCHED_SETATTR, tid, buffer, 0) == 0)


def slice_ns_of(tid: int | str = "self") -> int | None:
    """The slice the scheduler gives a thread (/proc/PID/sched), None where it does not say."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{tid}/sched").read_text().splitlines():
            if line.startswith("se.slice"):
                return int(line.split(":")[1])
    return None


def short_slices_granted() -> bool:
    """Does this kernel grant a fair task the short slice it asks for? Tried and undone."""
    tid = threading.get_native_id()
    before = slice_ns_of(tid)
    if before is None or not _set_slice(tid, SHORT_SLICE_NS):
        return False
    granted = slice_ns_of(tid) == SHORT_SLICE_NS
    _set_slice(tid, 0)
    return granted


def prefer_short_slices(others: tuple[int, ...] = ()) -> bool:
    """The shortest slice for this process's threads and every thread of `others`."""
    tids = [*_threads("self"), *(tid for pid in others for tid in _threads(pid))]
    return all([_set_slice(tid, SHORT_SLICE_NS) for tid in tids]) and bool(tids)


def normal_scheduling() -> None:
    """This process's threads back to SCHED_OTHER and the default slice (always permitted)."""
    for tid in _threads("self"):
        with contextlib.suppress(ProcessLookupError):
            os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
            _set_slice(tid, 0)

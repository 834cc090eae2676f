"""Processes that die with their parent (PR_SET_PDEATHSIG), so a SIGKILL above leaves
nothing behind.

Rules: the signal is armed before anything else, and a process whose parent is
already gone by then exits at once (the kernel would never send it the signal).
The kernel forgets the signal when the process changes its user or group
(commit_creds), so whoever changes them arms it again (`rearm`).
"""

from __future__ import annotations

import ctypes
import os
import signal

PR_SET_PDEATHSIG = 1
PR_GET_PDEATHSIG = 2

_libc = ctypes.CDLL(None, use_errno=True)
_libc.prctl.argtypes = [ctypes.c_int, *[ctypes.c_ulong] * 4]
_libc.prctl.restype = ctypes.c_int


def die_with_parent(sig: int = signal.SIGKILL, parent: int | None = None) -> None:
    """`sig` to this process when its parent dies; exit now if it already has (or if it is
    no longer `parent`, the parent this process had before)."""
    parent = os.getppid() if parent is None else parent
    if _libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != parent:
        os._exit(1)


def parent_death_signal() -> int:
    """The signal armed with PR_SET_PDEATHSIG (0: none)."""
    value = ctypes.c_int(0)
    if _libc.prctl(PR_GET_PDEATHSIG, ctypes.addressof(value), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_GET_PDEATHSIG)")
    return value.value


def child_dies_with_parent() -> None:
    """A `preexec_fn` for programs without --die-with-parent (nginx): SIGKILL them when
    the process that started them dies. PR_SET_PDEATHSIG survives the exec."""
    if _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        os._exit(127)

"""Processes that die with their parent (PR_SET_PDEATHSIG), so a SIGKILL above leaves
nothing behind.

Rule: the signal is armed before anything else, and a process whose parent is
already gone by then exits at once (the kernel would never send it the signal).
"""

from __future__ import annotations

import ctypes
import os
import signal

PR_SET_PDEATHSIG = 1

_libc = ctypes.CDLL(None, use_errno=True)
_libc.prctl.argtypes = [ctypes.c_int, *[ctypes.c_ulong] * 4]
_libc.prctl.restype = ctypes.c_int


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """`sig` to this process when its parent dies; exit now if it already has."""
    parent = os.getppid()
    if _libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != parent:
        os._exit(1)


def child_dies_with_parent() -> None:
    """A `preexec_fn` for programs without --die-with-parent (nginx): SIGKILL them when
    the process that started them dies. PR_SET_PDEATHSIG survives the exec."""
    if _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        os._exit(127)

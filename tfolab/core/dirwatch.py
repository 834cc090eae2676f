"""Wake when a name leaves a directory: inotify(7), through the C library.

The measurement line (tfolab.core.slots) uses it so that every waiter
recounts the moment the head of the line takes its slot, not on a timer of
its own: their progress lines (and the UIs drawing them) then change in the
settle time before the next measurement, not during it.

Rules: Linux only; where inotify is unavailable (or its per-user limits are
reached) `DirectoryWatch.open` returns None and callers fall back to polling.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
from pathlib import Path

IN_MOVED_FROM = 0x00000040
IN_DELETE = 0x00000200
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC

_libc = ctypes.CDLL(None, use_errno=True)


class DirectoryWatch:
    """An inotify descriptor watching one directory for names that go away."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    @staticmethod
    def open(directory: Path) -> DirectoryWatch | None:
        fd = _libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            return None
        mask = IN_DELETE | IN_MOVED_FROM
        if _libc.inotify_add_watch(fd, str(directory).encode(), mask) < 0:
            os.close(fd)
            return None
        return DirectoryWatch(fd)

    def wait(self, timeout_s: float, *others: int) -> None:
        """Block until a name left the directory, one of `others` is readable, or
        `timeout_s` passed."""
        ready, _, _ = select.select([self.fd, *others], [], [], timeout_s)
        if self.fd in ready:
            with contextlib.suppress(BlockingIOError):
                while os.read(self.fd, 4096):  # drain: one wake-up for a burst of events
                    pass

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

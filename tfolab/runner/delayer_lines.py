"""One answer line from tfo-delay's stdout, read without a buffer.

Rules: the delayer answers each request (SIGUSR1's FLUSHED, a drop plan's
DROPPING or REFUSED) with one line, and the requests come one at a time, so
reading byte chunks up to the newline never takes a later answer's bytes.
The wait is bounded.
"""

from __future__ import annotations

import os
import select
import time


def read_line(fd: int, timeout_s: float) -> bytes:
    """The next line on fd; TimeoutError when none comes in time, EOFError at its end."""
    line = b""
    deadline = time.monotonic() + timeout_s
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError
        chunk = os.read(fd, 64)
        if not chunk:
            raise EOFError
        line += chunk
    return line

"""Reading a file that someone else may have planted: only a regular file, only so big.

Rules:
- Opened with O_NOFOLLOW | O_NONBLOCK: a symbolic link is refused (never
  followed, so never /dev/zero), a FIFO or a device never blocks the reader.
- After the open, fstat decides: anything but a regular file is refused, and
  so is one larger than the caller's limit; at most limit + 1 bytes are ever
  read, so a file that grows meanwhile is refused too.
- A refusal is NotReadable with the reason as one sentence fragment
  ("it is a FIFO"), for a "skipped NAME: REASON" line.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_KINDS = (
    (stat.S_ISDIR, "it is a folder"),
    (stat.S_ISFIFO, "it is a FIFO (a named pipe)"),
    (stat.S_ISCHR, "it is a character device"),
    (stat.S_ISBLK, "it is a block device"),
    (stat.S_ISSOCK, "it is a socket"),
)


class NotReadable(Exception):
    """Why a file was not read (one fragment: "it is a symbolic link")."""


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words ("it is a FIFO (a named pipe)")."""
    for test, words in _KINDS:
        if test(mode):
            return words
    return "it is not a regular file"


def read_regular(path: Path, limit: int) -> bytes:
    """The whole of `path` if it is a regular file of at most `limit` bytes; else NotReadable."""
    try:
        fd = os.open(path, OPEN_FLAGS)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise NotReadable("it is a symbolic link, and links are not followed") from None
        raise NotReadable(f"it cannot be opened ({err.strerror or err})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotReadable(kind_of(info.st_mode))
        if info.st_size > limit:
            raise NotReadable(f"it is {info.st_size} bytes, more than the limit of {limit}")
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 16))):
            chunks.append(chunk)
            left -= len(chunk)
        if left <= 0:
            raise NotReadable(f"it grew past the limit of {limit} bytes while it was read")
        return b"".join(chunks)
    except OSError as err:
        raise NotReadable(f"it cannot be read ({err.strerror or err})") from None
    finally:
        os.close(fd)

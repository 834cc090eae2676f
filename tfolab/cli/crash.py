"""An internal error, reported as one line and a file with the details (exit code 3).

Rules: a bug is never exit 1 ("a measurement disagreed") nor a traceback on the
terminal. `report()` writes the traceback, the command line, tfolab's and
Python's versions and the kernel release to `crash-<UTC stamp>-<pid>.txt` under
$XDG_CACHE_HOME/tfolab (else ~/.cache/tfolab), created anew with mode 0600
and never through a symlink (O_CREAT | O_EXCL | O_NOFOLLOW); when that cannot
be written, to a tempfile.mkstemp file of that name's shape in the system's
temporary folder (0600, O_EXCL | O_NOFOLLOW, a name no one could plant). It
returns the one line the command prints, and never raises itself.
"""

from __future__ import annotations

import os
import platform
import shlex
import tempfile
import time
import traceback
from pathlib import Path

EXIT_INTERNAL_ERROR = 3


def crash_dirs() -> list[Path]:
    """The folder the details go to first: $XDG_CACHE_HOME/tfolab, else ~/.cache/tfolab."""
    cache = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(cache):  # unset, empty or relative: the XDG default
        try:
            cache = str(Path.home() / ".cache")
        except RuntimeError:  # no HOME and no passwd entry: the temporary folder only
            return []
    return [Path(cache) / "tfolab"]


def report(error: BaseException, argv: list[str], version: str) -> str:
    """Save the details of `error`; the one line to print (naming the file, or why not)."""
    text = "".join(
        [
            f"tfolab {version}, Python {platform.python_version()}, kernel {platform.release()}\n",
            f"command: {shlex.join(['tfolab', *argv])}\n\n",
            *traceback.format_exception(error),
        ]
    )
    name = f"crash-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{os.getpid()}.txt"
    where = _write(name, text)
    try:
        first = (str(error).splitlines() or [""])[0]
    except Exception:  # a broken __str__: the type alone
        first = ""
    kind = type(error).__name__
    said = f"{kind}: {first}" if first else kind
    saved = f"details in {where}" if where else "the details could not be saved"
    return f"tfolab: internal error: {said}; {saved}; please report it"


def _write(name: str, text: str) -> Path | None:
    data = text.encode("utf-8", errors="replace")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for folder in crash_dirs():
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            path = folder / name
            descriptor = os.open(path, flags, 0o600)
        except OSError:
            continue
        if _fill(descriptor, data):
            return path
    try:  # the fallback: mkstemp picks a fresh name (0600, O_EXCL | O_NOFOLLOW)
        descriptor, where = tempfile.mkstemp(prefix=name.removesuffix(".txt") + "-", suffix=".txt")
    except OSError:
        return None
    return Path(where) if _fill(descriptor, data) else None


def _fill(descriptor: int, data: bytes) -> bool:
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(data)
    except OSError:
        return False
    return True

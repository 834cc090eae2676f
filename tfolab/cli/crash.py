"""An internal error, reported as one line and a file with the details (exit code 3).

Rules: a bug is never exit 1 ("a measurement disagreed") nor a traceback on the
terminal. `report()` writes the traceback, the command line, tfolab's and
Python's versions and the kernel release to `crash-<UTC stamp>-<pid>.txt` under
$XDG_CACHE_HOME/tfolab (else ~/.cache/tfolab), or the system's temporary
folder when that cannot be written, created anew with mode 0600 and never
through a symlink (O_CREAT | O_EXCL | O_NOFOLLOW), and returns the one line
the command prints.
"""

from __future__ import annotations

import os
import platform
import tempfile
import time
import traceback
from pathlib import Path

EXIT_INTERNAL_ERROR = 3


def crash_dirs() -> list[Path]:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return [Path(cache) / "tfolab", Path(tempfile.gettempdir())]


def report(error: BaseException, argv: list[str], version: str) -> str:
    """Save the details of `error`; the one line to print (naming the file, or why not)."""
    text = "".join(
        [
            f"tfolab {version}, Python {platform.python_version()}, kernel {platform.release()}\n",
            f"command: tfolab {' '.join(argv)}\n\n",
            *traceback.format_exception(error),
        ]
    )
    name = f"crash-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{os.getpid()}.txt"
    where = _write(name, text)
    first = (str(error).splitlines() or [""])[0]
    kind = type(error).__name__
    said = f"{kind}: {first}" if first else kind
    saved = f"details in {where}" if where else "the details could not be saved"
    return f"tfolab: internal error: {said}; {saved}; please report it"


def _write(name: str, text: str) -> Path | None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for folder in crash_dirs():
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            path = folder / name
            descriptor = os.open(path, flags, 0o600)
        except OSError:
            continue
        with os.fdopen(descriptor, "w") as out:
            out.write(text)
        return path
    return None

"""Class results: every served session saves what it measured (or answered) as files in one folder.

`tfolab serve --results DIR` hands DIR to each browser session in the
environment variable TFOLAB_RESULTS_DIR; a session saves with
`save_result(DIR, kind, payload)`, one JSON file per result, so a teacher
collects them by copying the folder.

Rules:
- One file per result, named `<kind>-<UTC time>-<session>-<random>.json`, so
  sessions never write the same file; it is written under a dot name and
  renamed into place, so a reader never sees half a file.
- The payload is stored as given, inside {"kind", "saved_at", "payload"}.
- Mode FILE_MODE (0640, never a link followed): the folder's group, the
  teacher's where serve made the folder setgid, reads it; other users do not.
- A served session saves at most so many files and bytes
  (tfolab.lab.served_saves): past them, UserError, nothing written.
- Nothing else is written anywhere.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tfolab.lab import served_saves

RESULTS_DIR_ENV = "TFOLAB_RESULTS_DIR"
FILE_MODE = 0o640
KIND = re.compile(r"[a-z][a-z0-9-]{0,31}")


def results_dir_from_env() -> Path | None:
    """The folder this session saves into, or None when results are not collected."""
    value = os.environ.get(RESULTS_DIR_ENV)
    return Path(value) if value else None


def slug(text: str) -> str:
    """A file-name-safe form of a session name ('Ada L.' -> 'ada-l')."""
    cleaned = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return cleaned[:40] or "anonymous"


def save_result(directory: Path | str, kind: str, payload: dict[str, Any]) -> Path:
    """Write one result file into `directory` and return its path.

    `kind` names what it is ("run" for a real run, others for other features);
    `payload` is any JSON-serialisable object, by convention with a "session".
    """
    if not KIND.fullmatch(kind):
        raise ValueError(f"result kind {kind!r} is not a short lower-case word")
    now = datetime.now(UTC)
    session = slug(str(payload.get("session", "")))
    name = f"{kind}-{now:%Y%m%dT%H%M%S.%f}Z-{session}-{secrets.token_hex(3)}.json"
    folder = Path(directory)
    final = folder / name
    staging = folder / f".{name}.part"
    document = {"kind": kind, "saved_at": now.isoformat(), "payload": payload}
    data = (json.dumps(document, indent=1) + "\n").encode()
    served_saves.take(len(data))  # a served session's bound, before anything is written
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    os.fchmod(fd, FILE_MODE)  # past the umask
    with open(fd, "wb") as handle:
        handle.write(data)
    os.replace(staging, final)
    return final

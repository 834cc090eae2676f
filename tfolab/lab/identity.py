"""Who saved an attempt, as the machine knows it: a per-session identity beside the typed name.

Rules:
- A served session's identity is TFOLAB_SESSION_ID, which `tfolab serve`
  sets for every session: "browser <16 hex>" from the cookie it gives each
  browser (its tabs and reloads are one student), else "tab <random>". A
  process served without one (TFOLAB_SERVED_BY set) draws "tab <serve
  pid>-<random>" once: textual-serve runs one process per browser tab.
  Outside serve it is "uid <uid>@<host>": local users sharing a folder differ.
- The student never types or sees it; it is saved with every attempt so that
  `tfolab grade` can tell two sessions that typed the same name apart.
- An identity from the environment is used only if it is a short token
  (IDENTITY), else a fresh one is drawn.
"""

from __future__ import annotations

import functools
import os
import re
import secrets
import socket

from tfolab.runner.served_class import SERVED_BY_ENV

SESSION_ID_ENV = "TFOLAB_SESSION_ID"
IDENTITY = re.compile(r"[A-Za-z0-9@._ -]{1,80}")


@functools.cache
def session_identity() -> str:
    """This session's identity (the same for the life of the process)."""
    given = os.environ.get(SESSION_ID_ENV, "")
    if IDENTITY.fullmatch(given):
        return given
    served_by = os.environ.get(SERVED_BY_ENV, "")
    if served_by:
        return f"tab {served_by[:10]}-{secrets.token_hex(4)}"
    return f"uid {os.getuid()}@{socket.gethostname()[:40]}"


def is_served() -> bool:
    """Whether this process is a session of `tfolab serve`."""
    return bool(os.environ.get(SERVED_BY_ENV))

"""The class's bounds: how many sessions, from one client, for how long, with what memory.

Rule: plain values only (no web imports), so `tfolab serve`'s flags can name
the defaults without loading the web server (tui.web_sessions enforces them).
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_SESSIONS = 40
DEFAULT_PER_CLIENT = 4
DEFAULT_IDLE_MINUTES = 30.0
DEFAULT_MEMORY_MB = 2048
PROCESSES_PER_SESSION = 64


@dataclass(frozen=True)
class SessionLimits:
    sessions: int = DEFAULT_SESSIONS
    per_client: int = DEFAULT_PER_CLIENT
    idle_s: float = DEFAULT_IDLE_MINUTES * 60
    memory_bytes: int = DEFAULT_MEMORY_MB * 1024 * 1024
    processes: int = DEFAULT_SESSIONS * PROCESSES_PER_SESSION

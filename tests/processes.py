"""What /proc says of a process, read as a process may leave it between any two reads."""

from __future__ import annotations

from pathlib import Path


def running(pid: int) -> bool:
    """The process exists and has not exited (a zombie, exited but not yet reaped, has)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    after_command = stat.rpartition(")")[2].split()
    return bool(after_command) and after_command[0] != "Z"


def command_of(pid: int) -> str | None:
    """The process's command name, None once it has gone."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None

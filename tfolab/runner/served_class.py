"""A served class, and a CPU it leaves free while one of its runs measures.

Rules:
- Only for served sessions: `tfolab serve` names itself in SERVED_BY_ENV,
  which its sessions and their runs inherit, and its own CPUs are the class's.
  Elsewhere nothing here acts (a `taskset` of the user's own stays as set).
- The class is what runs under that server besides the measuring run: the
  session UIs (the `python -m tfolab` processes it started, directly or
  through the shell textual-serve starts them with) and the runs they started,
  waiting in line. It is found in /proc at the moment a run takes its slot.
- A run holding its measurement slot takes every CPU of the class for itself
  and its lab's processes (set up while another run measured, they inherited
  a UI's narrower set), moves the rest of the class off the last `slots` CPUs,
  and gives them every CPU back before it gives the slot back (a waiting run
  takes every CPU back itself when its turn comes). A run killed meanwhile
  leaves them there until the next run gives back: slower screens for a
  while, nothing worse.
- Affinity is the owner's to set: the UIs and their runs are one user's, so
  no privilege is needed. Where it is refused the run measures unspared.
"""

from __future__ import annotations

import os
from pathlib import Path

from tfolab.core.affinity import allowed_cpus, set_cpus

SERVED_BY_ENV = "TFOLAB_SERVED_BY"  # the pid of the `tfolab serve` whose session this is
UI_COMMAND = [b"-m", b"tfolab"]


def parent(pid: int) -> int | None:
    """The parent of `pid` (/proc/PID/stat); None once it is gone."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _command(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def the_class(server: int, measuring: int) -> list[int]:
    """What a class runs under `server` besides the measuring run: the session UIs and
    the runs they started that are waiting in line."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (found := parent(int(entry))) is not None:
            parents[int(entry)] = found
    # Only the server's children and grandchildren can be its UIs: read just their cmdlines.
    near = [pid for pid, up in parents.items() if server in (up, parents.get(up))]
    uis = [pid for pid in near if _command(pid)[-3:-1] == UI_COMMAND]
    waiting = [pid for pid, up in parents.items() if up in uis and pid != measuring]
    return uis + waiting


def _class_cpus() -> list[int]:
    """The CPUs the class may use: those of the server this session names; [] outside one."""
    server = os.environ.get(SERVED_BY_ENV, "")
    return allowed_cpus(int(server)) if server.isdigit() else []


def spare_for_measuring(slots: int, lab: tuple[int, ...] = ()) -> list[int]:
    """Every CPU of the class for this run (its threads and the `lab` processes), and the
    rest of the class off the last `slots` of them. Returns what it moved (nothing outside
    a served session, or with no more CPUs than slots)."""
    every = _class_cpus()
    if not every:
        return []
    set_cpus([os.getpid(), *lab], set(every))
    if len(every) <= slots:
        return []
    others = the_class(int(os.environ[SERVED_BY_ENV]), os.getpid())
    set_cpus(others, set(every[: len(every) - slots]))
    return others


def give_back(moved: list[int]) -> None:
    """Every CPU of the class again for what `spare_for_measuring` moved."""
    every = _class_cpus()
    if moved and every:
        set_cpus(moved, set(every))

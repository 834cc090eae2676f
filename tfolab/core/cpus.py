"""A CPU kept free while a run measures: a served class's UIs step off it meanwhile.

Thirty served UIs can keep every CPU of a small machine busy. A lab process
that wakes (the delayer's timer, a packet for the server) then has no idle
CPU to go to: it waits behind a UI until the scheduler's next tick, or behind
a kernel thread that does not yield (a non-preemptible kernel keeps e.g.
DAMON's kdamond on its CPU for several milliseconds). Measured on two cores
with a class of thirty, such waits of 1 to 8 ms were the runs' last misses.

Rules:
- Only for served sessions: `tfolab serve` names itself in SERVED_BY_ENV,
  which its sessions and their runs inherit, and its own CPUs are the class's.
  Elsewhere nothing here acts (a `taskset` of the user's own stays as set).
- A run that holds its measurement slot takes every CPU for itself and its
  lab's processes, moves every UI of that server (the `python -m tfolab`
  processes under it, its own included) and every run waiting in line off the
  last `slots` CPUs, and gives them every CPU back before it gives the slot
  back (a waiting run takes every CPU back itself when its turn comes). A run
  killed meanwhile leaves them there until the next run gives its slot back:
  slower screens for a while, nothing worse.
- Affinity is the owner's to set: the UIs and their runs are one user's, so
  no privilege is needed. Where it is refused the run measures unspared.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

SERVED_BY_ENV = "TFOLAB_SERVED_BY"  # the pid of the `tfolab serve` whose session this is
UI_COMMAND = [b"-m", b"tfolab"]


def threads(pid: int | str) -> list[int]:
    """Every thread of a process ("self": this one); [] once it is gone. Affinity and
    scheduling policy belong to a thread, so they are set thread by thread."""
    try:
        return [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
    except FileNotFoundError:
        return []


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def the_class(server: int, measuring: int) -> list[int]:
    """What a class runs under `server` besides the measuring run: the session UIs (the
    `python -m tfolab` processes it started, directly or through the shell textual-serve
    starts them with) and the runs they started that are waiting in line."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (parent := _parent(int(entry))) is not None:
            parents[int(entry)] = parent
    # Only the server's children and grandchildren can be its UIs: read just their cmdlines.
    near = [pid for pid, parent in parents.items() if server in (parent, parents.get(parent))]
    uis = [pid for pid in near if _command(pid)[-3:-1] == UI_COMMAND]
    waiting = [pid for pid, parent in parents.items() if parent in uis and pid != measuring]
    return uis + waiting


def _command(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def _set(pids: list[int], cpus: set[int]) -> None:
    for tid in (t for pid in pids for t in threads(pid)):
        with contextlib.suppress(OSError):  # gone, or not ours to move
            os.sched_setaffinity(tid, cpus)


def _class_cpus() -> list[int]:
    """The CPUs the class may use: those of the server this session names; [] outside one."""
    server = os.environ.get(SERVED_BY_ENV, "")
    if not server.isdigit():
        return []
    try:
        return sorted(os.sched_getaffinity(int(server)))
    except OSError:
        return []


def spare_for_measuring(slots: int, lab: tuple[int, ...] = ()) -> list[int]:
    """Every CPU of the class for this run (its threads and the `lab` processes: a run set
    up while another measured inherited its UI's narrower set), and the rest of the class
    off the last `slots` of them. Returns what it moved (nothing outside a served session,
    or with no more CPUs than slots)."""
    every = _class_cpus()
    if not every:
        return []
    _set([os.getpid(), *lab], set(every))
    if len(every) <= slots:
        return []
    others = the_class(int(os.environ[SERVED_BY_ENV]), os.getpid())
    _set(others, set(every[: len(every) - slots]))
    return others


def give_back(moved: list[int]) -> None:
    """Every CPU of the class again for what `spare_for_measuring` moved."""
    every = _class_cpus()
    if moved and every:
        _set(moved, set(every))

"""Scheduler autogroups: how a measuring lab run gets the CPU first on a busy machine.

With kernel.sched_autogroup_enabled, and tasks in the root cpu cgroup, the
fair scheduler shares the CPU between sessions (setsid) first and between a
session's tasks second; a session's weight is the nice value in
/proc/<pid>/autogroup (kernel/sched/autogroup.c). Thirty served UIs redrawing
in one group at nice 19 then weigh 15 together against a measuring run's 1024.

Rules:
- A new session is a new autogroup at nice 0: free, and no permission needed,
  but only for a process that does not already lead a process group.
- Its owner may move an autogroup anywhere in 0..19 (only below 0 needs
  CAP_SYS_NICE), but without CAP_SYS_ADMIN such writes are limited to one
  per 100 ms on the whole machine (`proc_sched_autogroup_set_nice` answers
  EAGAIN): a class starting at once takes turns, so writers retry, jittered.
- Where autogroups do not apply (disabled, or a cpu cgroup such as systemd's
  slices) all of this is harmless and without effect.
"""

from __future__ import annotations

import errno
import os
import random
import signal
import time
from collections.abc import Callable
from pathlib import Path

from tfolab.core import lifetime

AUTOGROUP = Path("/proc/self/autogroup")
YIELDING_NICE = 19
RETRY_S = (0.05, 0.15)  # between tries while the machine-wide rate limit says EAGAIN


def new_session() -> bool:
    """A session, hence an autogroup, of this process's own at nice 0; False where it cannot."""
    try:
        os.setsid()
    except OSError:
        return False  # already a process group leader
    return True


def set_nice(nice: int, patience_s: float) -> bool:
    """Give this process's autogroup `nice`, retrying EAGAIN for up to `patience_s`."""
    deadline = time.monotonic() + patience_s
    while True:
        try:
            with AUTOGROUP.open("w") as handle:
                handle.write(str(nice))
            return True
        except OSError as err:
            if err.errno != errno.EAGAIN or time.monotonic() > deadline:
                return False
        time.sleep(random.uniform(*RETRY_S))


def nice_of_own() -> int | None:
    """This process's autogroup nice; None where there are no autogroups, or in the root
    group (a process never under a setsid, e.g. a container's), whose file is empty."""
    try:
        return int(AUTOGROUP.read_text().split("nice")[1])
    except (OSError, IndexError, ValueError):
        return None


def lead_low_group(
    patience_s: float = 10.0, in_the_waiter: Callable[[], None] = lambda: None
) -> bool:
    """Lead an autogroup at nice 19 that everything this process starts from now on shares.

    One group for all of them, not one each: many groups at nice 19 still
    take turns with a measuring run, one group hardly does (docs/DESIGN.md,
    "Measurement slots"). How, by where this process stands:
    - it leads its session: the group is its own already, lowered in place;
    - it leads no process group: setsid, then lowered;
    - it leads a shell's job: setsid is refused, and lowering its group would
      lower the shell. It forks: this process stays in the job, calls
      `in_the_waiter` (e.g. to drop privileges), passes on SIGINT, SIGTERM and
      SIGHUP, and exits as the child does; the child (dying with it) leads the
      new session and returns here.
    Call it before dropping privileges: a process whose uid changed is not
    dumpable, so its /proc/self/autogroup belongs to root.
    False where the group could not be lowered (no autogroups, or no turn).
    """
    if (nice_of_own() or 0) >= YIELDING_NICE:
        return True  # a low group already: join it rather than add one
    if os.getsid(0) != os.getpid() and not new_session():
        _stay_in_the_job_as_a_waiter(in_the_waiter)
        new_session()
    return set_nice(YIELDING_NICE, patience_s)


def _stay_in_the_job_as_a_waiter(in_the_waiter: Callable[[], None]) -> None:
    """Fork; in the parent, pass signals on and exit with the child. Returns in the child."""
    child = os.fork()
    if child == 0:
        lifetime.die_with_parent(signal.SIGTERM)
        return
    in_the_waiter()

    def pass_on(signum: int, _frame: object) -> None:
        os.kill(child, signum)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, pass_on)
    _, status = os.waitpid(child, 0)
    code = os.waitstatus_to_exitcode(status)
    os._exit(128 - code if code < 0 else code)

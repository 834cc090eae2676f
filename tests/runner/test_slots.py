"""Measurement slots between real processes: first come first served, "K ahead", and a
SIGKILL frees a slot (or a place in line) at once, across users and user namespaces.

Each test uses a slot directory of its own (TFOLAB_SLOTS=1 there), so nothing here
touches the machine-wide one or waits for other runs.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.environment import require_or_skip
from tests.runner.holders import Holder
from tests.unprivileged import AS_NOBODY
from tfolab.core.errors import UserError
from tfolab.core.slot_files import flock
from tfolab.core.slots import RECOUNT_S, SIZE_ENV, SlotTable


def test_first_come_first_served_with_places_in_line(slot_dir: Path) -> None:
    first = Holder(slot_dir)
    assert first.wait_for_hold().startswith("HOLD 0")
    second = Holder(slot_dir)
    assert second.next_line() == "WAIT 0"  # next in line
    third = Holder(slot_dir)
    assert third.next_line() == "WAIT 1"
    first.release()
    assert second.wait_for_hold().endswith(" 0")  # it joined with nobody waiting ahead
    assert third.next_line() == "WAIT 0"  # the line moved
    second.release()
    assert third.wait_for_hold().endswith(" 1")
    third.release()


def _a_holder_and_two_in_line(slot_dir: Path) -> tuple[Holder, Holder, Holder]:
    holder = Holder(slot_dir)
    holder.wait_for_hold()
    second = Holder(slot_dir)
    assert second.next_line() == "WAIT 0"  # next in line
    third = Holder(slot_dir)
    assert third.next_line() == "WAIT 1"
    return holder, second, third


def test_the_line_moves_at_the_hand_over_before_the_next_measures(slot_dir: Path) -> None:
    """Waiters recount when the head takes its slot (inotify), so their progress lines (and
    the UIs redrawing them) change in the settle time, before the new holder measures."""
    first, second, third = _a_holder_and_two_in_line(slot_dir)
    time.sleep(2 * RECOUNT_S)  # any timer of their own has run out meanwhile
    first.release()
    assert second.wait_for_hold().startswith("HOLD 0")
    assert third.next_line() == "WAIT 0"
    assert third.said_at_ns[-1] < second.said_at_ns[-1]  # before the new holder measures
    second.release()
    third.wait_for_hold()
    third.release()


def test_sigkill_of_the_holder_frees_the_slot_within_a_second(slot_dir: Path) -> None:
    holder = Holder(slot_dir)
    holder.wait_for_hold()
    waiter = Holder(slot_dir)
    assert waiter.next_line() == "WAIT 0"
    killed = time.monotonic()
    holder.kill()
    waiter.wait_for_hold()
    assert time.monotonic() - killed < 1.0
    waiter.release()


def test_sigkill_of_a_waiter_does_not_block_the_line(slot_dir: Path) -> None:
    holder, middle, last = _a_holder_and_two_in_line(slot_dir)
    middle.kill()
    assert last.next_line() == "WAIT 0"  # the dead ticket no longer counts
    holder.release()
    last.wait_for_hold()
    last.release()


def test_the_slot_count_is_the_directorys(slot_dir: Path, monkeypatch) -> None:
    monkeypatch.setenv(SIZE_ENV, "1")
    assert SlotTable.open(slot_dir).size == 1
    monkeypatch.setenv(SIZE_ENV, "3")
    with pytest.raises(UserError, match="were made with 1"):
        SlotTable.open(slot_dir)
    monkeypatch.setenv(SIZE_ENV, "zero")
    with pytest.raises(UserError, match="not a slot count"):
        SlotTable.open(slot_dir)


def test_root_nobody_and_a_user_namespace_share_the_slots(
    slot_dir: Path, nobody_python: str
) -> None:
    if shutil.which("unshare") is None:
        require_or_skip("unshare", "util-linux unshare is not installed")
    root = Holder(slot_dir)  # root makes the directory and its files
    root.wait_for_hold()
    userns = ("unshare", "--user", "--map-root-user", "--net")
    in_namespace = Holder(slot_dir, (*AS_NOBODY, *userns, nobody_python))
    assert in_namespace.next_line() == "WAIT 0"
    plain = Holder(slot_dir, (*AS_NOBODY, nobody_python))
    assert plain.next_line() == "WAIT 1"
    root.kill()
    in_namespace.wait_for_hold()
    in_namespace.release()
    plain.wait_for_hold()
    plain.release()


def _lab_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("tfolab-")]


def test_a_lock_waited_for_leaves_no_thread_behind(tmp_path: Path) -> None:
    """A runner unshares a user namespace right after the setup gate: unshare(CLONE_NEWUSER)
    refuses a multithreaded process (EINVAL), which made 4 of 30 served runs fail in a class
    where the gate was contended. flock's helper thread has ended when it returns."""
    path = tmp_path / "gate"
    path.touch()
    for _ in range(20):
        holder = subprocess.Popen(
            [sys.executable, "-c",
             "import fcntl, sys, time; f = open(sys.argv[1]); fcntl.flock(f, fcntl.LOCK_EX); "
             "print('held', flush=True); time.sleep(0.05)", str(path)],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        fd = os.open(path, os.O_RDONLY)
        try:
            flock(fd, fcntl.LOCK_EX, path, 10.0)
            assert _lab_threads() == []
        finally:
            os.close(fd)
            holder.wait()
            holder.stdout.close()


def test_a_slot_waited_for_leaves_no_thread_behind(
    slot_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same for waiting in line for a slot: the waiting thread has ended on return."""
    holder = Holder(slot_dir)
    holder.wait_for_hold()
    monkeypatch.setenv(SIZE_ENV, "1")
    table = SlotTable.open(slot_dir)
    releasing = threading.Timer(0.3, holder.release)  # the test's thread, not tfolab's
    started = time.monotonic()
    releasing.start()
    slot = table.acquire()
    assert time.monotonic() - started >= 0.25  # it did wait in line
    assert _lab_threads() == []
    slot.release()
    releasing.join()

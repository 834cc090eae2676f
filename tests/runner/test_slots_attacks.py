"""Another local user (nobody, for real) attacks the measurement slots: every attack is
refused, or bounded by a timeout with one clear line, and nothing hangs.

Each test uses slot directories of its own under /tmp: the machine's shared one is
never touched.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.runner.holders import Holder
from tfolab.core import slots
from tfolab.core.errors import UserError
from tfolab.core.slots import RUNTIME_ENV, SlotTable, fallback_dir

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.usefixtures("root")  # to be another user


def as_nobody(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.as_user", "nobody", *command],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=30,
        check=True,
    )


@contextlib.contextmanager
def nobody_holds(path: Path, how: str = "-x") -> Iterator[None]:
    """nobody holds a flock on `path` (util-linux flock(1)) until the block ends."""
    holder = subprocess.Popen(
        [sys.executable, "-m", "tests.as_user", "nobody", "flock", how, str(path), "sleep", "120"],
        cwd=ROOT,
        start_new_session=True,  # flock and its sleep, killed together
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # until the lock is taken
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                time.sleep(0.02)
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                break
            finally:
                os.close(fd)
            time.sleep(0.02)
        else:
            raise AssertionError(f"nobody never locked {path}")
        yield
    finally:
        os.killpg(holder.pid, 9)
        holder.wait()


@pytest.fixture
def made(slot_dir: Path) -> Path:
    """A slots directory root made, as a root-started run or serve makes it."""
    table = SlotTable.open(slot_dir, size=1)
    with table.setting_up():  # and every file in it, as after a first run
        pass
    table.acquire().release()
    return slot_dir


def test_a_folder_another_user_made_is_not_used(slot_dir: Path) -> None:
    os.chmod(slot_dir.parent, 0o777)
    as_nobody("mkdir", "-m", "1777", str(slot_dir))
    with pytest.raises(UserError, match="owned by uid 65534, neither root nor you"):
        SlotTable.open(slot_dir, size=1)  # named: refused, never swapped
    table = SlotTable.open_shared(slot_dir, size=1)  # the default place: this user's own
    assert table.directory == fallback_dir(slot_dir) and "owned by uid 65534" in table.note
    info = table.directory.stat()
    assert (info.st_uid, info.st_mode & 0o7777) == (0, 0o700)
    table.acquire().release()


def test_a_fifo_named_quiet_does_not_block(slot_dir: Path) -> None:
    made = SlotTable.open(slot_dir, size=1).directory  # before any run made `quiet`
    as_nobody("mkfifo", "-m", "666", str(made / "quiet"))
    table = SlotTable(made, 1)
    started = time.monotonic()
    with pytest.raises(UserError, match="'quiet' is not a regular file"), table.setting_up():
        pass
    with pytest.raises(UserError, match="'quiet' is not a regular file"):
        SlotTable.open(made)
    assert time.monotonic() - started < 5
    assert SlotTable.open_shared(made).directory == fallback_dir(made)


def test_a_size_file_others_may_write_is_not_trusted(slot_dir: Path) -> None:
    os.mkdir(slot_dir, 0o1777)
    os.chmod(slot_dir, 0o1777)
    as_nobody("sh", "-c", f"echo 64 > {slot_dir}/size")  # planted before root wrote it
    with pytest.raises(UserError, match="size file is owned by uid 65534"):
        SlotTable.open(slot_dir)


def test_an_older_versions_folder_is_made_safe_by_its_owner_only(slot_dir: Path) -> None:
    """An older tfolab left `size` 0666 in root's sticky folder: a user who is not its
    owner queues apart; its owner (root here) makes the file its own and uses the folder."""
    os.chmod(slot_dir.parent, 0o777)
    os.mkdir(slot_dir, 0o1777)
    os.chmod(slot_dir, 0o1777)
    (slot_dir / "size").write_text("2\n")
    os.chmod(slot_dir / "size", 0o666)
    child = os.fork()
    if child == 0:  # nobody, in a child of this process: no new interpreter to reach
        code = 1
        try:
            os.setgid(65534)
            os.setuid(65534)
            theirs = SlotTable.open_shared(slot_dir, size=1)
            code = 0 if "others may write its size file" in theirs.note else 2
        finally:
            os._exit(code)
    assert os.waitpid(child, 0)[1] == 0
    assert (slot_dir / "size").stat().st_mode & 0o777 == 0o666  # nobody changed nothing
    table = SlotTable.open_shared(slot_dir)
    assert table.directory == slot_dir and table.note == "" and table.size == 2
    assert (slot_dir / "size").stat().st_mode & 0o777 == 0o644


def test_a_held_mutex_is_a_timeout_not_a_hang(made: Path, monkeypatch) -> None:
    monkeypatch.setattr(slots, "MUTEX_TIMEOUT_S", 1.0)
    with nobody_holds(made / "mutex"):
        started = time.monotonic()
        with pytest.raises(UserError, match=r"held the measurement slots' lock .*mutex for 1 s"):
            SlotTable.open(made)
        assert time.monotonic() - started < 3
    SlotTable.open(made)  # let go: usable again


def test_a_held_quiet_is_a_timeout_and_frees_the_slot(made: Path, monkeypatch) -> None:
    monkeypatch.setattr(slots, "QUIET_TIMEOUT_S", 1.0)
    table = SlotTable.open(made)
    with nobody_holds(made / "quiet"):
        with pytest.raises(UserError, match="quiet for 1 s"), table.setting_up():
            pass
        with pytest.raises(UserError, match="quiet for 1 s"):
            table.acquire()
    slot = table.acquire()  # the slot it held while waiting was given back
    assert slot.index == 0
    slot.release()


def test_a_planted_ticket_held_forever_is_a_timeout(made: Path, monkeypatch) -> None:
    monkeypatch.setattr(slots, "LINE_TIMEOUT_S", 1.0)
    ticket = made / "q-0000000000000000"
    as_nobody("touch", str(ticket))
    with nobody_holds(ticket):
        started = time.monotonic()
        with pytest.raises(
            UserError, match=r"came free in 1 s: the place in line .*q-0000000000000000"
        ):
            SlotTable.open(made).acquire()
        assert time.monotonic() - started < 4
    assert sorted(p.name for p in made.glob("q-*")) == [ticket.name]  # it left the line


def test_planted_names_and_a_rewritten_counter_keep_the_line(made: Path) -> None:
    for ticket in range(8):  # every staging name the old scheme would use next
        as_nobody("touch", str(made / f".new-{ticket:016d}"))
    as_nobody("mkfifo", "-m", "666", str(made / "q-0000000000000000"))  # no ticket: no hang
    first = Holder(made)
    assert first.wait_for_hold(10).startswith("HOLD 0")
    second = Holder(made)
    assert second.next_line() == "WAIT 0"
    as_nobody("sh", "-c", f"echo 0 > {made}/counter")  # to jump the line
    third = Holder(made)
    assert third.next_line() == "WAIT 1"  # still behind the second
    as_nobody("sh", "-c", f"echo {'9' * 30} > {made}/counter")
    fourth = Holder(made)
    assert fourth.next_line() == "WAIT 2"
    first.release()
    assert second.wait_for_hold().startswith("HOLD")
    second.release()
    assert third.wait_for_hold().startswith("HOLD")
    third.release()
    assert fourth.wait_for_hold().startswith("HOLD")
    fourth.release()


VICTIM = """
import sys
from pathlib import Path
from tfolab.core.errors import UserError
from tfolab.core.slots import SlotTable
try:
    table = SlotTable.open_shared(Path(sys.argv[1]), size=1)
except UserError as err:
    print("REFUSED", err.one_line())
    sys.exit(0)
table.acquire().release()
print("QUEUES IN", table.directory)
print("NOTE", table.note)
"""


@pytest.mark.parametrize(
    "plant",
    [("mkdir", "-m", "700"), ("ln", "-s", "{own}"), ("mkfifo", "-m", "666")],
    ids=["folder", "link-to-the-users-own", "fifo"],
)
def test_a_planted_fallback_does_not_stop_a_users_runs(
    slot_dir: Path, nobody_python: str, plant: tuple[str, ...]
) -> None:
    """nobody makes the shared folder and, before daemon's first run, daemon's own
    fallback name (a folder, a link, a FIFO): daemon's runs queue in a folder of its own
    in $XDG_RUNTIME_DIR, which nobody cannot make first; without one, one line says
    what happened and how to get on."""
    base = slot_dir.parent
    os.chmod(base, 0o1777)  # as /dev/shm
    daemon = pwd.getpwnam("daemon")
    own = base / "daemons-own"  # a folder of daemon's, for the link to point at
    runtime = base / "run-user-daemon"  # as logind makes /run/user/<uid>
    for folder in (own, runtime):
        folder.mkdir(mode=0o700)
        os.chown(folder, daemon.pw_uid, daemon.pw_gid)
    as_nobody("mkdir", "-m", "1777", str(slot_dir))
    fallback = slot_dir.with_name(f"{slot_dir.name}-{daemon.pw_uid}")
    as_nobody(*(part.format(own=own) for part in plant), str(fallback))

    def as_daemon(**env: str) -> str:
        command = ("daemon", nobody_python, "-c", VICTIM, str(slot_dir))
        done = subprocess.run(
            [sys.executable, "-m", "tests.as_user", *command],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=60,
            env={**{k: v for k, v in os.environ.items() if k != RUNTIME_ENV}, **env},
        )
        assert done.returncode == 0 and done.stderr == "", done.stderr
        return done.stdout

    started = time.monotonic()
    said = as_daemon(XDG_RUNTIME_DIR=str(runtime))
    assert f"QUEUES IN {runtime / 'tfolab-slots'}\n" in said, said
    assert "owned by uid 65534, neither root nor you" in said  # the shared one: why
    assert f"nor can {fallback} (it " in said  # and why not daemon's usual one
    info = (runtime / "tfolab-slots").stat()
    assert (info.st_uid, info.st_mode & 0o7777) == (daemon.pw_uid, 0o700)
    said = as_daemon()  # no runtime folder to go to
    assert said.startswith("REFUSED no measurement slots directory here can be trusted"), said
    assert f"set {slots.DIR_ENV} to a folder of your own" in said and str(fallback) in said
    assert len(said.strip().splitlines()) == 1
    assert time.monotonic() - started < 30  # nothing waited for a lock

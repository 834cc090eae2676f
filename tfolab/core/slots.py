"""Machine-wide measurement slots: the timing-critical part of a real run queues here.

Any process on the machine (a served session's runner in its user namespace,
a terminal UI's, `tfolab run`'s, root or not) takes one of N slots before it
measures, so runs queue instead of disturbing each other's timings.

Rules:
- Everything is flock(2) on files in one shared directory (`slots_dir()`,
  mode 1777, files 0666, `size` 0644). The kernel drops a flock when its holder dies, so
  a SIGKILL frees a slot or a place in line at once: nothing goes stale.
  flock works on any descriptor a process can open, so a process in a user
  namespace (its files owned by an unmapped uid) takes slots like root does.
- Fair: first come, first served. Each waiter draws a ticket (a counter read
  and bumped under the `mutex` file's lock) and holds an exclusive lock on
  its ticket file `q-<ticket>` until it has a slot. A waiter blocks (in the
  kernel, no polling) on the ticket just ahead of it; the one at the head
  polls the N `slot-<i>` files every POLL_S. "K ahead" is the number of live
  tickets below one's own (a ticket whose lock can be taken is dead).
- Progress at hand-overs: a waiter recounts when a ticket leaves the
  directory (tfolab.core.dirwatch: the head took its slot), not every
  RECOUNT_S of its own. The line moves on every screen when it moves, and
  thirty waiters do not wake twice a second to find nothing changed.
- A ticket file appears only once it is locked (created under another name,
  locked, then renamed), so a live ticket never looks dead.
- Quiet while measuring: kernel-heavy setup (a namespace, a delayer, a
  capture ring) takes the `quiet` file's lock exclusively, and a run that
  holds a slot takes it shared before it measures. So setups never overlap a
  measurement (they run in the gaps, one at a time) but measurements in the
  N slots overlap each other.
- Settle after a hand-over: a slot file holds when its last holder took it
  ("T <ns>") or gave it back ("R <ns>", CLOCK_MONOTONIC, one clock for the
  whole machine), so `acquire(settle_s=...)` hands a slot over only
  `settle_s` after its last release (or after it was taken, when its holder
  died without one). How long is the caller's to say (tfolab.runner.turn).
- N is written once, in the directory's `size` file, by whoever makes the
  directory (TFOLAB_SLOTS, else `default_size()`); every process uses that
  one value, so no two disagree about how many slots there are.
- Another user cannot stop or disorder the line (tfolab.core.slot_files):
  the shared directory is used only if root or this user owns it, sticky,
  with a `size` file only its owner writes; every file is opened without
  following a link or blocking and must be a regular file; a ticket is never
  below one already in line, whatever `counter` says; staging names are
  random. Where the shared directory cannot be trusted, runs queue in a
  directory of this user's own (`private_dirs()`: `fallback_dir()` beside
  the shared one, 0700, else `tfolab-slots` in $XDG_RUNTIME_DIR, a folder
  only this user may enter, which no other user can make first), apart from
  other users' runs, and `SlotTable.note` says why. A private directory
  another user made first (or planted a link or file under its name) is
  passed over, never used; with none left, one line says which and what to
  do. A directory named by TFOLAB_SLOTS_DIR (or given) is never swapped:
  untrusted, it is an error.
- No wait is endless: the mutex MUTEX_TIMEOUT_S, the quiet lock
  QUIET_TIMEOUT_S, a place in line LINE_TIMEOUT_S; past it, one line names
  the file and how to find who holds it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import select
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tfolab.core import dirwatch, slot_files
from tfolab.core.errors import UserError
from tfolab.core.slot_files import LockTimeout, Untrusted

DIR_ENV = "TFOLAB_SLOTS_DIR"
RUNTIME_ENV = "XDG_RUNTIME_DIR"
SIZE_ENV = "TFOLAB_SLOTS"
POLL_S = 0.005  # the head of the line tries the slots this often (one process polls, not all)
RECOUNT_S = 0.5  # how often a waiter recounts who is ahead, where it cannot watch the line
RECOUNT_FALLBACK_S = 5.0  # watching the line (inotify), it recounts at hand-overs, and this often
MAX_SLOTS = 64
MUTEX_TIMEOUT_S = 10.0  # the mutex is held for a few file operations
QUIET_TIMEOUT_S = 900.0  # a setup waits for the measurements in progress
LINE_TIMEOUT_S = 3600.0  # from joining the line to holding a slot


def default_size() -> int:
    """One slot per two cores, at least one (measured: docs/DESIGN.md "Measurement slots")."""
    return max(1, min((os.cpu_count() or 1) // 2, MAX_SLOTS))


def slots_dir() -> Path:
    """$TFOLAB_SLOTS_DIR, else /dev/shm/tfolab-slots (memory), else /tmp/tfolab-slots."""
    chosen = os.environ.get(DIR_ENV)
    if chosen:
        return Path(chosen)
    shm = Path("/dev/shm")
    return (shm if shm.is_dir() and os.access(shm, os.W_OK) else Path("/tmp")) / "tfolab-slots"


def wanted_size() -> int:
    """The size asked for by TFOLAB_SLOTS (checked), else the default."""
    raw = os.environ.get(SIZE_ENV)
    if raw is None or raw == "":
        return default_size()
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_SLOTS:
        raise UserError(
            f"{SIZE_ENV}={raw!r} is not a slot count", f"give 1 to {MAX_SLOTS}, or unset it"
        )
    return int(raw)


def _open_shared(path: Path, flags: int = os.O_RDWR) -> int:
    """A shared file, created 0666 if missing (UserError if it is not a regular file)."""
    try:
        return slot_files.open_file(path, flags)
    except Untrusted as err:
        raise _unusable(path.parent, str(err)) from None


def fallback_dir(shared: Path) -> Path:
    """This user's own slots directory, beside the shared one: tfolab-slots-<uid>."""
    return shared.with_name(f"{shared.name}-{os.getuid()}")


def runtime_dir() -> Path | None:
    """$XDG_RUNTIME_DIR if it is a folder this user owns and nobody else may enter
    (logind makes /run/user/<uid> so), else None."""
    value = os.environ.get(RUNTIME_ENV, "")
    if not value.startswith("/"):
        return None
    try:
        info = os.lstat(value)
    except OSError:
        return None
    mine = info.st_uid == os.geteuid() and not info.st_mode & 0o077
    return Path(value) if stat.S_ISDIR(info.st_mode) and mine else None


def private_dirs(shared: Path) -> list[Path]:
    """Where this user's runs queue when `shared` cannot be trusted, in order of choice."""
    runtime = runtime_dir()
    return [fallback_dir(shared), *([runtime / "tfolab-slots"] if runtime else [])]


def _unusable(directory: Path, why: str) -> UserError:
    return UserError(
        f"the measurement slots directory {directory} is unusable: {why}",
        f"remove it when no run is going (root: rm -r {directory}), or set {DIR_ENV}",
    )


def _held_too_long(err: LockTimeout) -> UserError:
    return UserError(
        f"another process held the measurement slots' lock {err.path} for {err.waited_s:g} s",
        f"see who holds it (fuser -v {err.path}) and stop it, "
        f"or set {DIR_ENV} to a folder of your own",
    )


class _UntrustedDir(Exception):
    def __init__(self, directory: Path, why: str) -> None:
        super().__init__(why)
        self.directory = directory
        self.why = why


@dataclass
class SlotTable:
    """The shared directory, opened: its path and its number of slots."""

    directory: Path
    size: int

    note: str = ""  # why runs queue apart from other users' (a fallback directory), if so

    @staticmethod
    def open(directory: Path | None = None, size: int | None = None) -> SlotTable:
        """Make (or join) the slot directory; UserError if it cannot be used.

        The default shared directory, if it cannot be trusted, is replaced by
        this user's own (`fallback_dir`); a directory given (or named by
        TFOLAB_SLOTS_DIR) is used or refused, never replaced.
        """
        chosen = directory or (Path(os.environ[DIR_ENV]) if os.environ.get(DIR_ENV) else None)
        if chosen is None:
            return SlotTable.open_shared(slots_dir(), size)
        try:
            return SlotTable._open_in(chosen, size, 0o1777)
        except _UntrustedDir as err:
            raise _unusable(err.directory, err.why) from None

    @staticmethod
    def open_shared(shared: Path, size: int | None = None) -> SlotTable:
        """The shared directory `shared` if it can be trusted, else one of this user's own
        (`private_dirs`); UserError, naming them, when none can be."""
        try:
            return SlotTable._open_in(shared, size, 0o1777)
        except _UntrustedDir as err:
            why = err.why
        passed_over: list[tuple[Path, str]] = []
        for own in private_dirs(shared):
            try:
                table = SlotTable._open_in(own, size, 0o700, private=True)
            except _UntrustedDir as err:
                passed_over.append((own, err.why))
                continue
            nor = "".join(f", nor can {other} ({because})" for other, because in passed_over)
            table.note = (
                f"The shared measurement slots directory {shared} cannot be trusted ({why})"
                f"{nor}, so this run queues in {own}, apart from other users' runs."
            )
            return table
        raise UserError(
            f"no measurement slots directory here can be trusted: {shared} ({why})"
            + "".join(f", {other} ({because})" for other, because in passed_over),
            f"another user may have made them to stop your runs: set {DIR_ENV} to a folder "
            f"of your own (mkdir -m 700 ~/tfolab-slots), and ask root to remove "
            f"{fallback_dir(shared)}",
        )

    @staticmethod
    def _open_in(directory: Path, size: int | None, mode: int, private: bool = False) -> SlotTable:
        asked = size if size is not None else wanted_size()
        try:
            slot_files.make_dir(directory, mode)
            folder = slot_files.check_folder(directory, private)
        except Untrusted as err:
            raise _UntrustedDir(directory, str(err)) from None
        except OSError as err:
            raise _unusable(directory, err.strerror or str(err)) from None
        try:
            with _locked(directory / "mutex"):
                text = slot_files.read_size(directory, folder, asked)
        except Untrusted as err:
            raise _UntrustedDir(directory, str(err)) from None
        except PermissionError as err:
            raise _unusable(directory, err.strerror or "permission denied") from None
        if not text.isdigit() or not 1 <= int(text) <= MAX_SLOTS:
            raise _unusable(directory, f"its size file says {text[:20]!r}")
        actual = int(text)
        if size is None and os.environ.get(SIZE_ENV) and actual != asked:
            raise UserError(
                f"{SIZE_ENV}={asked} but the slots in {directory} were made with {actual}",
                f"unset {SIZE_ENV}, or remove {directory} when no run is going",
            )
        return SlotTable(directory, actual)

    # --- quiet while measuring -----------------------------------------------------

    @contextlib.contextmanager
    def setting_up(self) -> Iterator[None]:
        """Hold while doing kernel-heavy setup: never while another run measures."""
        fd = _open_shared(self.directory / "quiet", os.O_RDONLY)
        try:
            _flock(fd, fcntl.LOCK_EX, self.directory / "quiet", QUIET_TIMEOUT_S)
            yield
        finally:
            os.close(fd)

    def _quiet(self, slot: Slot) -> None:
        """With a slot held: wait for setups in progress to finish, then keep them out."""
        fd = _open_shared(self.directory / "quiet", os.O_RDONLY)
        try:
            _flock(fd, fcntl.LOCK_SH, self.directory / "quiet", QUIET_TIMEOUT_S)
        except BaseException:
            os.close(fd)
            slot.release()
            raise
        slot.quiet_fd = fd

    @staticmethod
    def _settle(slot: Slot, settle_s: float) -> None:
        """Wait until `settle_s` after the slot's last hand-over, then mark it taken."""
        os.lseek(slot.fd, 0, os.SEEK_SET)
        record = os.read(slot.fd, 64).decode(errors="replace").split()
        if len(record) == 2 and record[1].isdigit():
            # "R": given back then; "T": taken then and never given back (its holder died)
            since_s = (time.monotonic_ns() - int(record[1])) / 1e9
            if 0 <= since_s < settle_s:  # (a record from before a reboot is older)
                time.sleep(settle_s - since_s)
        _record(slot.fd, "T")

    # --- taking a slot ---------------------------------------------------------

    def acquire(
        self, on_wait: Callable[[int], None] | None = None, *, settle_s: float = 0.0
    ) -> Slot:
        """Wait in line for a slot, then `settle_s` after its last hand-over, then for quiet
        (blocking); `on_wait(k)`: k waiters ahead."""
        started = time.monotonic()
        slot = self._in_line(started, on_wait)
        self._settle(slot, settle_s)
        self._quiet(slot)
        slot.waited_ms = round((time.monotonic() - started) * 1000, 1)
        return slot

    def _in_line(self, started: float, on_wait: Callable[[int], None] | None) -> Slot:
        ticket, ticket_fd = self._draw_ticket()
        ahead = self.ahead_of(ticket)
        first_ahead = len(ahead)
        got: list[Slot] = []
        failed: list[BaseException] = []
        if not ahead:
            slot = self._try_slots()
            if slot is not None:  # nobody waiting and a slot free: no thread, no wait
                self._leave_line(ticket, ticket_fd)
                return Slot(slot[0], slot[1], self.size, 0.0, 0)
        if on_wait is not None:
            on_wait(first_ahead)
        done = threading.Event()
        finished_r, finished_w = os.pipe()

        def wait_in_line() -> None:
            try:
                got.append(self._wait_in_line(ticket, ticket_fd, started, first_ahead))
            except BaseException as err:  # handed to the caller's thread
                failed.append(err)
            finally:
                os.write(finished_w, b".")
                done.set()

        waiter = threading.Thread(target=wait_in_line, name="tfolab-slot", daemon=True)
        waiter.start()
        watch = dirwatch.DirectoryWatch.open(self.directory)
        shown = first_ahead
        try:
            while not done.is_set():
                if watch is None:
                    select.select([finished_r], [], [], RECOUNT_S)
                else:  # the line moves when a ticket goes: the head took its slot
                    watch.wait(RECOUNT_FALLBACK_S, finished_r)
                if done.is_set():
                    break
                count = len(self.ahead_of(ticket))
                if count != shown and on_wait is not None:
                    on_wait(count)
                shown = count
        finally:
            if watch is not None:
                watch.close()
            if done.is_set():  # the caller's process stays single-threaded (slot_files.flock)
                waiter.join()
            os.close(finished_r)
            os.close(finished_w)
        if failed:
            raise failed[0]
        return got[0]

    def _draw_ticket(self) -> tuple[int, int]:
        with _locked(self.directory / "mutex"):
            counter = _open_shared(self.directory / "counter")
            try:
                text = os.read(counter, 32).decode(errors="replace").strip()
                drawn = int(text) if text.isdigit() and len(text) <= 15 else 0
                ticket = max(drawn, self._last_ticket() + 1)  # never ahead of one in line
                os.lseek(counter, 0, os.SEEK_SET)
                os.ftruncate(counter, 0)
                os.write(counter, f"{ticket + 1}\n".encode())
            finally:
                os.close(counter)
            fd, staging = self._staging_file(ticket)
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.rename(staging, self._ticket_path(ticket))
        return ticket, fd

    def _last_ticket(self) -> int:
        """The highest ticket number in the directory (-1: none)."""
        numbers = [
            int(name[2:])
            for name in os.listdir(self.directory)
            if name.startswith("q-") and name[2:].isdigit() and len(name) <= 20
        ]
        return max(numbers, default=-1)

    def _staging_file(self, ticket: int) -> tuple[int, Path]:
        """A new ticket file under a random name nobody could have made first."""
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        for _ in range(8):
            staging = self.directory / f".new-{ticket:016d}-{secrets.token_hex(8)}"
            try:
                return os.open(staging, flags, 0o644), staging
            except FileExistsError:
                continue
        raise _unusable(self.directory, "no new ticket file could be made")

    def _ticket_path(self, ticket: int) -> Path:
        return self.directory / f"q-{ticket:016d}"

    def ahead_of(self, ticket: int) -> list[int]:
        """The live tickets before `ticket`, oldest first (dead ones are removed if possible)."""
        alive = []
        for name in os.listdir(self.directory):
            if not name.startswith("q-") or not name[2:].isdigit() or len(name) > 20:
                continue
            other = int(name[2:])
            if other < ticket and _is_held(self.directory / name):
                alive.append(other)
        return sorted(alive)

    def _wait_in_line(self, ticket: int, ticket_fd: int, started: float, first: int) -> Slot:
        deadline = started + LINE_TIMEOUT_S
        try:
            while ahead := self.ahead_of(ticket):
                _wait_for_release(self._ticket_path(ahead[-1]), deadline)
            while (slot := self._try_slots()) is None:
                if time.monotonic() > deadline:
                    raise UserError(
                        f"no measurement slot in {self.directory} came free "
                        f"in {LINE_TIMEOUT_S:g} s",
                        f"see who holds them (fuser -v {self.directory}/slot-*), "
                        "or try again when the machine is less busy",
                    )
                time.sleep(POLL_S)
        except BaseException:
            self._leave_line(ticket, ticket_fd)  # a run that gives up holds nobody up
            raise
        self._leave_line(ticket, ticket_fd)
        waited = (time.monotonic() - started) * 1000
        return Slot(slot[0], slot[1], self.size, waited, first)

    def _leave_line(self, ticket: int, ticket_fd: int) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self._ticket_path(ticket))
        os.close(ticket_fd)  # drops the lock: the next in line wakes

    def _try_slots(self) -> tuple[int, int] | None:
        for index in range(self.size):
            fd = _open_shared(self.directory / f"slot-{index}")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            return index, fd
        return None


@dataclass
class Slot:
    """A measurement slot held by this process until `release()` (or its death)."""

    index: int
    fd: int
    size: int
    waited_ms: float  # from drawing a ticket to holding the slot
    ahead: int  # waiters ahead when this one joined the line

    quiet_fd: int = -1

    def release(self) -> None:
        if self.quiet_fd >= 0:
            os.close(self.quiet_fd)
            self.quiet_fd = -1
        if self.fd >= 0:
            _record(self.fd, "R")
            os.close(self.fd)
            self.fd = -1


def _flock(fd: int, operation: int, path: Path, timeout_s: float) -> None:
    try:
        slot_files.flock(fd, operation, path, timeout_s)
    except LockTimeout as err:
        raise _held_too_long(err) from None


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    fd = _open_shared(path, os.O_RDONLY)
    try:
        _flock(fd, fcntl.LOCK_EX, path, MUTEX_TIMEOUT_S)
        yield
    finally:
        os.close(fd)


_TICKET_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _record(fd: int, what: str) -> None:
    """'T <ns>' (taken) or 'R <ns>' (given back) in a slot file, on CLOCK_MONOTONIC."""
    os.lseek(fd, 0, os.SEEK_SET)
    os.ftruncate(fd, 0)
    os.write(fd, f"{what} {time.monotonic_ns()}\n".encode())


def _is_held(path: Path) -> bool:
    """Whether a ticket's owner still holds it; a dead one's file is removed if allowed.

    Anything but a regular file (a FIFO or link planted under a ticket's name) is no ticket.
    """
    try:
        fd = os.open(path, _TICKET_FLAGS)
    except (FileNotFoundError, OSError):
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError as err:
        if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return True
        raise
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):  # sticky directory: only its owner (or root) may
        os.unlink(path)
    return False


def _wait_for_release(path: Path, deadline: float) -> None:
    """Block until the ticket at `path` is released (its owner got a slot, or died)."""
    try:
        fd = os.open(path, _TICKET_FLAGS)
    except (FileNotFoundError, OSError):
        return
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            slot_files.flock(fd, fcntl.LOCK_SH, path, max(deadline - time.monotonic(), 0.0))
    except LockTimeout:
        raise UserError(
            f"no measurement slot came free in {LINE_TIMEOUT_S:g} s: "
            f"the place in line ahead of this run ({path}) never moved",
            f"see who holds it (fuser -v {path}) and stop it, "
            f"or set {DIR_ENV} to a folder of your own",
        ) from None
    finally:
        os.close(fd)

"""The measurement slots' files, opened as files other users can plant: checked, never
followed, never blocking, and every lock with a time limit (tfolab.core.slots uses these).

Rules:
- The shared folder is trusted only if it is a real folder (lstat: no link)
  owned by root or by this user, and either sticky or writable by its owner
  alone; its `size` file must be a regular file owned by the folder's owner
  (or root) that nobody else may write. A folder that fails is not used:
  tfolab.core.slots falls back to a folder of this user's own. A private
  folder (that fallback) is trusted only if this user owns it and nobody
  else may enter it (no group or other bits): another user who made it
  first, or could open a file in it, could hold its locks. In a user
  namespace, owners from outside it all look alike (the overflow uid), so
  there the overflow uid is taken for root; tfolab's runner opens the slots
  before it enters its namespace, where owners are real.
- Every file in it is opened with O_NOFOLLOW | O_NONBLOCK and must then be a
  regular file (fstat): a link, FIFO or device named `quiet` never blocks a
  run, it makes the folder unusable, said in one line.
- A lock is waited for at most a given time: the waiting happens in the
  kernel (a helper thread blocked in flock on a duplicate of the descriptor,
  so nothing polls while a run measures); past the time, LockTimeout says
  which file, and the helper gives the lock back if it ever gets it. A lock
  taken returns only once the helper thread has ended: the runner unshares a
  user namespace right after, which a multithreaded process cannot (EINVAL).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import threading
from pathlib import Path

SHARED_FILE_MODE = 0o666  # every user flocks and bumps the shared files
SIZE_FILE_MODE = 0o644  # written once by the folder's maker, read by everyone
CHECKED_FILES = ("mutex", "quiet", "counter", "size")


class Untrusted(Exception):
    """Why a slots folder cannot be trusted (one fragment: "it is owned by uid 1000")."""


class LockTimeout(Exception):
    """A lock another process held for longer than the time allowed."""

    def __init__(self, path: Path, waited_s: float) -> None:
        super().__init__(f"{path} stayed locked for {waited_s:g} s")
        self.path = path
        self.waited_s = waited_s


def overflow_uid() -> int:
    """The uid files of unmapped owners show in a user namespace (65534 unless changed)."""
    try:
        return int(Path("/proc/sys/kernel/overflowuid").read_text())
    except (OSError, ValueError):
        return 65534


def in_user_namespace() -> bool:
    """Whether this process sees a uid map other than the initial namespace's."""
    try:
        fields = Path("/proc/self/uid_map").read_text().split()
    except OSError:
        return False
    return fields != ["0", "0", "4294967295"]


def trusted_owners() -> set[int]:
    owners = {0, os.geteuid()}
    if in_user_namespace():
        owners.add(overflow_uid())
    return owners


def check_folder(directory: Path, private: bool = False) -> os.stat_result:
    """The folder's lstat if it can be trusted (`private`: as this user's own, which nobody
    else may enter); Untrusted (with why) otherwise."""
    info = os.lstat(directory)
    if stat.S_ISLNK(info.st_mode):
        raise Untrusted("it is a symbolic link")
    if not stat.S_ISDIR(info.st_mode):
        raise Untrusted("it is not a folder")
    if private:
        if info.st_uid != os.geteuid():
            raise Untrusted(f"it is owned by uid {info.st_uid}, not you")
        if info.st_mode & 0o077:
            raise Untrusted(f"others may enter it (mode {info.st_mode & 0o777:o}, not 700)")
    elif info.st_uid not in trusted_owners():
        raise Untrusted(f"it is owned by uid {info.st_uid}, neither root nor you")
    if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
        raise Untrusted("others may write in it but it is not sticky")
    for name in CHECKED_FILES:
        try:
            found = os.lstat(directory / name)
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(found.st_mode):
            raise Untrusted(f"its {name!r} is not a regular file")
    return info


def check_size_file(fd: int, folder: os.stat_result) -> None:
    """The `size` file: the folder's owner's (or root's), writable by nobody else.

    One from an older tfolab (0666) is made the owner's alone when its owner,
    who owns the folder too, opens it (a run of the older version only reads
    it); anyone else does not trust it.
    """
    info = os.fstat(fd)
    allowed = {folder.st_uid, 0} | ({overflow_uid()} if in_user_namespace() else set())
    if info.st_uid not in allowed:
        raise Untrusted(f"its size file is owned by uid {info.st_uid}, not the folder's owner")
    if info.st_mode & 0o022 and info.st_uid == folder.st_uid == os.geteuid():
        os.fchmod(fd, SIZE_FILE_MODE)
    elif info.st_mode & 0o022:
        raise Untrusted("others may write its size file")


def open_file(path: Path, flags: int = os.O_RDWR, mode: int = SHARED_FILE_MODE) -> int:
    """Open (creating with `mode` if missing) a regular file, no link followed, never blocking.

    Without O_CREAT first: fs.protected_regular refuses O_CREAT on another
    user's file in a sticky directory even where a plain open is allowed.
    OSError(ELOOP) for a link; Untrusted for a FIFO, device or folder.
    """
    flags |= os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        try:
            fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, mode)
            with contextlib.suppress(OSError):
                os.fchmod(fd, mode)  # past the umask: every user must open it
        except FileExistsError:
            fd = os.open(path, flags)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Untrusted(f"its {path.name!r} is not a regular file")
    return fd


def flock(fd: int, operation: int, path: Path, timeout_s: float) -> None:
    """flock(fd, operation), waiting at most `timeout_s` (LockTimeout after), without polling."""
    try:
        fcntl.flock(fd, operation | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    helper_fd = os.dup(fd)  # the same open file: its lock is fd's lock
    state = threading.Lock()
    got = threading.Event()
    abandoned = False

    def wait() -> None:
        try:
            fcntl.flock(helper_fd, operation)
        except OSError:
            os.close(helper_fd)
            return
        with state:
            if not abandoned:
                got.set()
            os.close(helper_fd)  # fd still holds the lock, unless abandoned (then it is freed)

    helper = threading.Thread(target=wait, name="tfolab-lock", daemon=True)
    helper.start()
    if got.wait(timeout_s):
        helper.join()  # gone before we return: a runner unshares a user namespace next,
        return  # which a process with a second thread cannot (EINVAL)
    with state:
        if got.is_set():
            helper.join()
            return
        abandoned = True
    raise LockTimeout(path, timeout_s)


def make_dir(directory: Path, mode: int) -> None:
    """mkdir with `mode` past the umask (through a descriptor: no link followed)."""
    try:
        os.mkdir(directory, mode)
    except FileExistsError:
        return
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def read_size(directory: Path, folder: os.stat_result, asked: int) -> str:
    """The `size` file's text, checked (check_size_file); made with `asked` if missing.

    Called with the mutex held, so only one process makes it.
    """
    path = directory / "size"
    flags = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, os.O_RDONLY | flags)
    except FileNotFoundError:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | flags, SIZE_FILE_MODE)
        try:
            os.fchmod(fd, SIZE_FILE_MODE)
            os.write(fd, f"{asked}\n".encode())
        finally:
            os.close(fd)
        return str(asked)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Untrusted("its 'size' is not a regular file")
        check_size_file(fd, folder)
        text = os.read(fd, 32).decode(errors="replace").strip()
    finally:
        os.close(fd)
    if not text:
        raise Untrusted("its size file is empty")
    return text

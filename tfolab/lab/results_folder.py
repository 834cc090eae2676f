"""The class's results folder as `tfolab serve --results DIR` prepares it: the students'
sessions write there, the teacher reads, nobody else does, and no link is followed.

Rules:
- DIR may not be a symbolic link (nor become one: every check and change is
  made on a descriptor opened with O_NOFOLLOW | O_DIRECTORY, so an ownership
  change never reaches another file).
- A folder serve makes is owned by the sessions' user, its group the group of
  the folder it is made in (the teacher's, for a folder in the teacher's
  home), mode FOLDER_MODE (2750: setgid, group may read, others nothing).
  Files in it are written 0640 (tfolab.lab.attempts, tfolab.lab.results_dir),
  so the setgid group, the teacher's, reads every attempt and run.
- A folder that exists already is used as it is (its owner's choice): for the
  teacher to read it, make it the sessions' user's and setgid with the
  teacher's group, as serve would.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from tfolab.core.errors import UserError
from tfolab.core.privileges import Account

FOLDER_MODE = 0o2750
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def check_results(path: str | None) -> Path | None:
    """The folder `--results` names (made absolute); UserError if it cannot be one."""
    if path is None:
        return None
    folder = Path(path).expanduser().absolute()
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        if not folder.parent.is_dir():
            raise UserError(
                f"--results {path}: the folder {folder.parent} does not exist", "create it first"
            ) from None
        return folder
    if stat.S_ISLNK(info.st_mode):
        raise UserError(
            f"--results {path} is a symbolic link, and serve does not follow links",
            "give the folder it points to, or another folder",
        )
    if not stat.S_ISDIR(info.st_mode):
        raise UserError(f"--results {path} is not a folder", "give a folder (it may not exist yet)")
    return folder


@contextlib.contextmanager
def _opened(folder: Path) -> Iterator[int]:
    try:
        fd = os.open(folder, _DIR_FLAGS)
    except OSError:
        raise UserError(
            f"--results {folder} is not a folder (or became a link) while serve prepared it",
            "give a folder nobody else can write in",
        ) from None
    try:
        yield fd
    finally:
        os.close(fd)


def prepare_results(folder: Path | None, account: Account | None) -> None:
    """Make `folder` if missing, for `account` (None: serve's own user) and the teacher's group."""
    if folder is None:
        return
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        with _opened(folder):  # exists: a folder, not a link; used as it is
            return
    with _opened(folder) as fd:
        if os.fstat(fd).st_uid != os.geteuid():  # swapped for another's folder meanwhile
            raise UserError(
                f"--results {folder} was replaced while serve prepared it",
                "give a folder in a place nobody else can write in",
            )
        group = os.stat(folder.parent).st_gid
        os.fchown(fd, account.uid if account else -1, group)
        os.fchmod(fd, FOLDER_MODE)

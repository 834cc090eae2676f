"""The results folder `tfolab serve --results` prepares, with real users: the session user
(nobody) writes, the teacher (daemon, the group of the folder it is made in) reads every
attempt and run, another user (bin) reads none, and no link is ever followed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tfolab.core.errors import UserError
from tfolab.core.privileges import find_account
from tfolab.lab.attempts import RESULTS_DIR_ENV
from tfolab.lab.results_folder import FOLDER_MODE, check_results, prepare_results
from tfolab.runner.served_class import SERVED_BY_ENV

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.usefixtures("root")  # to be other users

SESSION = """
import pathlib, sys
from tests.cli.test_grade import save_attempt
from tfolab.lab.results_dir import save_result
folder = pathlib.Path(sys.argv[1])
save_attempt(folder, "Ada", "fastopen", "cookie", {"iteration 1": "2D", "iterations 2+": "2D"}, 1)
save_result(folder, "run", {"session": "Ada", "run": {"lab": "fastopen"}})
"""


def as_user(
    name: str, *command: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.as_user", name, *command],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT), **(env or {})),
        timeout=120,
    )


@pytest.fixture
def teacher_home() -> Iterator[Path]:
    """A folder of the teacher's group (daemon's) that every user may pass through."""
    base = Path(tempfile.mkdtemp(prefix="tfolab-results-test-"))
    os.chmod(base, 0o755)
    home = base / "teacher"
    home.mkdir()
    os.chown(home, 0, find_account("daemon").gid)
    os.chmod(home, 0o755)
    yield home
    shutil.rmtree(base, ignore_errors=True)


def test_the_teacher_reads_what_a_session_wrote(teacher_home: Path, nobody_python: str) -> None:
    folder = check_results(str(teacher_home / "class"))
    assert folder is not None
    prepare_results(folder, find_account("nobody"))
    info = folder.stat()
    assert (info.st_uid, info.st_gid) == (65534, find_account("daemon").gid)
    assert info.st_mode & 0o7777 == FOLDER_MODE
    served = {SERVED_BY_ENV: "1", RESULTS_DIR_ENV: str(folder)}
    done = as_user("nobody", nobody_python, "-c", SESSION, str(folder), env=served)
    assert done.returncode == 0, done.stderr
    files = sorted(folder.iterdir())
    assert len(files) == 2 and all(f.stat().st_mode & 0o777 == 0o640 for f in files)
    assert {f.stat().st_gid for f in files} == {find_account("daemon").gid}  # setgid

    graded = as_user("daemon", nobody_python, "-m", "tfolab", "grade", str(folder))
    assert graded.returncode == 0, graded.stderr
    assert "1 students, 1 attempts" in graded.stdout
    assert "1 saved real runs" in graded.stdout and "skipped" not in graded.stdout

    for path in files:  # a classmate on the same machine reads nothing
        assert as_user("bin", "cat", str(path)).returncode != 0


def test_no_link_is_followed(teacher_home: Path) -> None:
    target = teacher_home / "target"
    target.mkdir()
    link = teacher_home / "link"
    link.symlink_to(target)
    with pytest.raises(UserError, match="symbolic link"):
        check_results(str(link))
    # A link planted after the check, before serve prepares the folder:
    late = teacher_home / "late"
    assert check_results(str(late)) == late
    late.symlink_to(target)
    with pytest.raises(UserError, match="became a link"):
        prepare_results(late, find_account("nobody"))
    assert target.stat().st_uid == 0 and target.stat().st_mode & 0o7777 == 0o755

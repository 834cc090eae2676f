"""What `tfolab serve` does with users, as root, for real: its server dies with the job it
was started in even after it changed user (the kernel forgets PR_SET_PDEATHSIG then),
a user whose group is root's is refused, and root takes no folder from its environment."""

from __future__ import annotations

import contextlib
import os
import pwd
import signal
import time

import pytest

from tests.conftest import run_tfolab
from tests.serve.test_serve import _descendants
from tests.serve.test_serve_autogroup import _alive
from tfolab.core.errors import UserError
from tfolab.core.privileges import find_account

needs_root = pytest.mark.usefixtures("root")  # serve changes user


@needs_root
def test_the_server_dies_with_its_job_after_changing_user(serve) -> None:
    served = serve(as_a_shell_job=True)  # the job's process waits; its child serves, as nobody
    waiter = served.process.pid
    (server,) = [p for p in _descendants(waiter) if _parent(p) == waiter]
    assert os.stat(f"/proc/{server}").st_uid == pwd.getpwnam("nobody").pw_uid
    everything = [server, *_descendants(server)]
    os.kill(waiter, signal.SIGKILL)  # what a lost terminal or an OOM kill does to the job
    served.process.wait(timeout=10)
    deadline = time.monotonic() + 15
    while any(_alive(p) for p in everything) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [p for p in everything if _alive(p)]
    for pid in left:  # the failure's own mess: nothing of the test keeps running
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not left, "the server outlived its job"


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


def test_a_user_whose_group_is_roots_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # No such account exists on a clean machine (and tests add none): the lookup is faked.
    fake = pwd.struct_passwd(("wheelish", "x", 4242, 0, "", "/nonexistent", "/bin/false"))
    monkeypatch.setattr(pwd, "getpwnam", lambda name: fake)
    with pytest.raises(UserError, match="primary group is root's"):
        find_account("wheelish")


@needs_root
@pytest.mark.parametrize(
    ("variable", "fix"),
    [
        ("TFOLAB_LABS_DIR", "--labs-dir"),
        ("TFOLAB_RESULTS_DIR", "--results"),
        ("TFOLAB_SLOTS_DIR", "unset it"),
    ],
)
def test_root_takes_no_folder_from_its_environment(variable: str, fix: str, tmp_path) -> None:
    done = run_tfolab(
        "serve", "--port", "0", timeout=60, env=dict(os.environ, **{variable: "/tmp"})
    )
    assert done.returncode == 2 and variable in done.stderr and fix in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stdout == ""

"""What `tfolab serve` does with users, as root, for real: its server dies with the job it
was started in even after it changed user (the kernel forgets PR_SET_PDEATHSIG then),
a user whose group is root's is refused (root's folders: tests/cli/test_root_env.py)."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.environment import require_or_skip
from tests.processes import running
from tests.serve.test_serve import _descendants
from tests.served_slots import slots_by_flag
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
    while any(running(p) for p in everything) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [p for p in everything if running(p)]
    for pid in left:  # the failure's own mess: nothing of the test keeps running
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not left, "the server outlived its job"


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


@needs_root
@pytest.mark.parametrize("given", ["wheelish", "4242"])
def test_a_user_whose_group_is_roots_is_refused(given: str, tmp_path) -> None:
    # A real account whose primary group is root's, seen by the real lookup: the
    # host's /etc/passwd with one more line, bound over it in a mount namespace
    # of serve's own (the host's file is never changed).
    if shutil.which("unshare") is None:
        require_or_skip("unshare", "util-linux unshare makes the mount namespace")
    passwd = tmp_path / "passwd"
    passwd.write_text(
        Path("/etc/passwd").read_text() + "wheelish:x:4242:0::/nonexistent:/bin/false\n"
    )
    command, environment = slots_by_flag(["serve", "--user", given, "--port", "0"], None)
    done = subprocess.run(
        [
            *("unshare", "--mount", "--propagation", "private", "sh", "-c"),
            'mount --bind "$0" /etc/passwd && exec "$@"',
            *(str(passwd), sys.executable, "-m", "tfolab", *command),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=environment,
    )
    assert done.returncode == 2, done.stderr
    assert "primary group is root's" in done.stderr and "usermod -g" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stdout == ""
    with pytest.raises(KeyError):
        pwd.getpwnam("wheelish")  # the host's accounts are as they were


def test_the_group_check_reads_the_account_it_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = pwd.struct_passwd(("wheelish", "x", 4242, 0, "", "/nonexistent", "/bin/false"))
    monkeypatch.setattr(pwd, "getpwnam", lambda name: fake)
    with pytest.raises(UserError, match="primary group is root's"):
        find_account("wheelish")

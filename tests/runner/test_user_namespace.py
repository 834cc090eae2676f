"""Runs inside a user namespace: what the kernel refuses there, the lab works around.

Root inside `unshare --user --map-root-user` is what an unprivileged user gets:
it can own a network namespace, but tcp_metrics' netlink family (the TFO
cookie cache flush) wants CAP_NET_ADMIN in the initial namespace. The runner
then moves each scenario that needs an empty cache to a fresh loopback address.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from tests.conftest import TIMING, LabMachine
from tests.environment import require_or_skip, user_namespace_refused
from tests.served_slots import slots_by_flag
from tests.timing import check_bands, check_exit
from tests.unprivileged import AS_NOBODY, ROOT


def in_user_namespace(*args: str) -> subprocess.CompletedProcess[str]:
    # uid 0 there is root's own uid when the tests run as root: the machine's root, who
    # takes no slots folder from the environment (tfolab.cli.root_env)
    command, environment = slots_by_flag(list(args), None)
    return subprocess.run(
        ["unshare", "--user", "--map-root-user", sys.executable, "-m", "tfolab", *command],
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


@TIMING
def test_fastopen_in_a_user_namespace_keeps_the_story(delaying_machine: LabMachine) -> None:
    if shutil.which("unshare") is None:
        require_or_skip("unshare", "util-linux unshare is not installed")
    probe = in_user_namespace("list")
    if probe.returncode != 0:
        assert user_namespace_refused(probe.stderr), probe.stderr  # else a bug, not the machine
        require_or_skip("user namespaces", probe.stderr.strip()[-200:])
    done = in_user_namespace("run", "fastopen", "--delay", "5", "--json")
    assert done.returncode in (0, 1), done.stdout + done.stderr
    result = json.loads(done.stdout)
    counters = {s["name"]: s["counters"] for s in result["scenarios"]}
    # no cookie may leak from one scenario into the next
    assert counters["server-off"]["TCPFastOpenCookieReqd"] == 2
    assert counters["server-off"]["TCPFastOpenActiveFail"] == 0
    assert counters["cookie-request"]["TCPFastOpenCookieReqd"] == 1
    assert counters["invalid-cookie"]["TCPFastOpenPassiveFail"] == 1
    check_bands(result["scenarios"])
    check_exit(done)


def test_the_cookie_cache_is_left_alone_where_fast_open_is_not_used(
    delaying_machine: LabMachine,
) -> None:
    if shutil.which("unshare") is None:
        require_or_skip("unshare", "util-linux unshare is not installed")
    done = in_user_namespace("run", "handshake", "--delay", "1", "--iterations", "1")
    if done.returncode == 2 and "user namespace" in done.stderr:
        assert user_namespace_refused(done.stderr), done.stderr  # else a bug, not the machine
        require_or_skip("user namespaces", done.stderr.strip()[-200:])
    assert "running plain" in done.stderr, done.stderr
    assert "cookie cache" not in done.stdout + done.stderr


THREAD_THEN_UNSHARE = """
import os, sys, threading
from tfolab.runner import netns
failed = 0
for _ in range(50):
    pid = os.fork()
    if pid == 0:
        helper = threading.Thread(target=lambda: None, name="tfolab-lock")
        helper.start()
        helper.join()  # joined in Python, maybe not yet gone from the kernel
        try:
            netns.enter_new_netns()
        except BaseException as err:
            print(err, file=sys.stderr)
            os._exit(1)
        os._exit(0)
    failed += os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) != 0
print(failed)
"""


def test_a_runner_whose_helper_thread_just_ended_gets_its_user_namespace(
    nobody_python: str,
) -> None:
    """unshare(CLONE_NEWUSER) refuses a process with a second thread (EINVAL): after the
    setup gate's helper thread is joined, the runner waits for the kernel to count one
    (netns._wait_single_threaded). Without it, 4 of 30 runs in a served class failed.
    Run as nobody: root takes the plain CLONE_NEWNET path, which threads do not stop."""
    done = subprocess.run(
        [*AS_NOBODY, nobody_python, "-c", THREAD_THEN_UNSHARE],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )  # fmt: skip
    if done.returncode != 0 and user_namespace_refused(done.stderr):
        require_or_skip("user namespaces", done.stderr.strip()[-200:])
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "0", done.stderr[-2000:]

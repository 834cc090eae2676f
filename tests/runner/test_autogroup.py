"""Scheduler autogroups (tfolab.core.autogroup), on this kernel, for real: what a served
session and a measuring run rely on to share the CPU in the measurement's favour."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unprivileged import ROOT

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/autogroup").exists()
    or Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() != "1",
    reason="no scheduler autogroups here (CONFIG_SCHED_AUTOGROUP, kernel.sched_autogroup_enabled)",
)

REPORT = """
import json, sys
from tfolab.core import autogroup
before = autogroup.nice_of_own()
fresh = autogroup.new_session()
lowered = autogroup.set_nice(int(sys.argv[1]), float(sys.argv[2]))
print(json.dumps({"before": before, "fresh": fresh, "lowered": lowered,
                  "after": autogroup.nice_of_own()}))
"""


def _start(python: str, nice: int, patience_s: float, as_nobody: bool) -> subprocess.Popen[str]:
    prefix = [sys.executable, "-m", "tests.as_user", "nobody"] if as_nobody else []
    return subprocess.Popen(
        [*prefix, python, "-c", REPORT, str(nice), str(patience_s)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )


def _report(process: subprocess.Popen[str]) -> dict:
    out, _ = process.communicate(timeout=60)
    assert process.returncode == 0
    return json.loads(out)


def test_a_new_session_is_an_autogroup_at_nice_0_that_may_be_lowered() -> None:
    report = _report(_start(sys.executable, 19, 5, as_nobody=False))
    assert report == {"before": report["before"], "fresh": True, "lowered": True, "after": 19}


def test_a_class_lowering_at_once_takes_turns_under_the_rate_limit(nobody_python: str) -> None:
    # Unprivileged, the kernel takes one autogroup change per 100 ms on the whole machine
    # and answers EAGAIN to the rest: twelve sessions starting together all get there.
    processes = [_start(nobody_python, 19, 20, as_nobody=True) for _ in range(12)]
    reports = [_report(process) for process in processes]
    assert all(r["fresh"] and r["lowered"] and r["after"] == 19 for r in reports), reports


def test_an_unprivileged_group_may_come_back_up_to_nice_0(nobody_python: str) -> None:
    script = (
        "from tfolab.core import autogroup as a; a.new_session(); "
        "print(a.set_nice(19, 5), a.nice_of_own(), a.set_nice(0, 5), a.nice_of_own(), "
        "a.set_nice(-1, 5))"
    )
    done = subprocess.run(
        [sys.executable, "-m", "tests.as_user", "nobody", nobody_python, "-c", script],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=60,
    )
    assert done.stdout.split() == ["True", "19", "True", "0", "False"], done.stderr

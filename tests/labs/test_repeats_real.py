"""A run the machine disturbs is explained by what it measured, or measured again on evidence,
and says so (tfolab.lab.app_wakes, tfolab.lab.repeats).

While the first runner of `tfolab run handshake` measures, a busy loop at a higher real-time
priority than the lab's takes every CPU in bursts (tests/labs/cpu_hog.py): the lab's threads
wait on a runqueue and its iterations come late. Where the wait fell between a segment and
the call it woke an application for, the applications' own stamps measured it and the run
stands, each iteration judged with them (`apps_late_ms`); where it did not, the runner's
schedstat evidence says by how much, the run measures that scenario again (the hog is gone
with the first runner) and the JSON keeps the evidence; the repeat stands as measured. Needs
root (SCHED_FIFO above the lab's) and a delay backend.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import TIMING, LabMachine
from tests.environment import require_or_skip
from tests.served_slots import slots_by_flag
from tests.timing import check_exit


@TIMING  # the repeat is judged like any run: a late time of its own is a TimingMiss
def test_a_run_the_machine_disturbs_is_explained_or_measured_again_with_the_evidence(
    delaying_machine: LabMachine,
) -> None:
    if os.geteuid() != 0:
        require_or_skip("root", "a busy loop above the lab's real-time priority needs root")
    command, env = slots_by_flag(
        ["run", "handshake", "--delay", "10", "--iterations", "5", "--json"], None
    )
    hog = subprocess.Popen(
        [sys.executable, "-m", "tests.labs.cpu_hog"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    with hog:
        run = subprocess.Popen(
            [sys.executable, "-m", "tfolab", *command],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        with run:
            bursts_out, _ = hog.communicate(f"{run.pid}\n", timeout=60)
            out, err = run.communicate(timeout=120)
    done = subprocess.CompletedProcess(run.args, run.returncode, out, err)
    bursts = int(bursts_out.strip() or 0)
    assert bursts > 0, "the hog never saw the runner"
    result = json.loads(done.stdout)
    seen = [
        (s["cpu_wait_ms"], [(i["measured_ms"], i["ok"]) for i in s["iterations"]],
         [(d["kind"], d["sentence"]) for d in s["packet_disagreements"]], s["counter_diff"])
        for s in result["scenarios"]
    ]  # fmt: skip
    (plain,) = result["scenarios"]
    assert len(plain["iterations"]) == 5  # the repeat's, whole, where there is one
    if result["repeats"]:
        (repeat,) = result["repeats"]
        assert repeat["scenario"] == "plain" and 1 <= repeat["iteration"] <= 5
        assert repeat["cpu_wait_ms"] >= repeat["missed_by_ms"] > 0
        assert all(i["cpu_wait_ms"] < repeat["cpu_wait_ms"] for i in plain["iterations"])
    else:
        # the hog held the applications between a segment and their next call: their own
        # stamps measured it (lab/app_wakes.py), and the band stood that much later
        pushed = [
            i for i in plain["iterations"]
            if i["measured_ms"] - i["predicted_ms"] > i["tolerance_ms"]
        ]  # fmt: skip
        assert pushed, f"{bursts} bursts, neither a repeat nor a measured wake-up in {seen}"
        for i in pushed:
            moved = i.get("apps_late_ms", 0.0) + i.get("backend_late_ms", 0.0)
            assert i["ok"] and moved >= i["measured_ms"] - i["predicted_ms"] - i["tolerance_ms"]
            assert i["apps_late_ms"] > 0, i
    check_exit(done)  # the run stands: in band, packets as predicted (else a TimingMiss)

"""The replay demo for real: a captured Fast Open SYN resent from a raw socket in the lab
namespace reaches the server application a second time, as the model predicts.

Under the timing lock (`flock /tmp/tfolab-timing.lock`), like every real run.
Skips with the reason where there is no lab namespace or no delay backend, or
where packets cannot be captured (the replay needs the captured SYN).
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import TIMING, LabMachine, run_tfolab
from tests.environment import require_or_skip
from tests.timing import check_bands, check_exit, check_packets


@TIMING
@pytest.mark.parametrize("delay_ms", [0, 10])
def test_the_request_reaches_the_application_twice(lab_machine: LabMachine, delay_ms: int) -> None:
    if delay_ms and lab_machine.delay_backend == "none":
        require_or_skip("delay backend", lab_machine.why_no_delay)
    done = run_tfolab("run", "fastopen", "--scenario", "replay", "--delay", str(delay_ms), "--json")
    if done.returncode == 2 and "cannot be captured" in done.stderr:
        require_or_skip("packet capture", done.stderr.strip())
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr
    [scenario] = json.loads(done.stdout)["scenarios"]
    # the client asked once; the server application received and answered twice
    assert scenario["app"] == {"accepted": 2, "requests": 2} == scenario["predicted_app"]
    assert scenario["counters"]["TCPFastOpenPassive"] == 2
    assert scenario["counters"]["TCPFastOpenActive"] == 1
    assert scenario["counter_diff"] == []
    replayed = [r for r in scenario["captured"] if r["connection"] == 2]
    assert replayed[0]["flags"] == ["SYN"] and replayed[0]["length"] == 16
    assert any(r["flags"] == ["RST"] for r in scenario["captured"])
    check_packets([scenario])
    check_bands([scenario])
    check_exit(done)


@TIMING
def test_the_table_shows_two_requests_for_one(delaying_machine: LabMachine) -> None:
    done = run_tfolab("run", "fastopen", "--scenario", "replay", "--delay", "10")
    if done.returncode == 2 and "cannot be captured" in done.stderr:
        require_or_skip("packet capture", done.stderr.strip())
    row = next(line for line in done.stdout.splitlines() if line.startswith("replay "))
    assert "2 req" in row
    assert "2 connections, 2 requests (model 2, 2)" in done.stdout
    check_exit(done)

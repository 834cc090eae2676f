"""The product's promise: every lab, run for real, lands inside the model's bands,
and the kernel's packets are the model's, segment by segment.

All three labs at 0 ms and at 10 ms one way, every scenario, through the
command line exactly as a student runs them. On failure the message names the
scenario, the iteration and how far outside its band it fell, or the packet
sentences of packet_diff.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import TIMING, LabMachine, run_tfolab
from tests.environment import require_or_skip
from tests.physics import check_physics
from tests.timing import check_bands, check_exit, check_packets


@TIMING
@pytest.mark.parametrize("delay_ms", [0, 10])
@pytest.mark.parametrize("lab", ["handshake", "fastopen", "delack"])
def test_every_measurement_inside_its_band(
    lab_machine: LabMachine, lab: str, delay_ms: int
) -> None:
    if delay_ms and lab_machine.delay_backend == "none":
        require_or_skip("delay backend", lab_machine.why_no_delay)
    done = run_tfolab("run", lab, "--delay", str(delay_ms), "--json")
    assert done.returncode in (0, 1), done.stderr
    result = json.loads(done.stdout)
    scenarios = result["scenarios"]
    counters = [f"{s['name']}: {line}" for s in scenarios for line in s["counter_diff"]]
    assert not counters, "\n".join(counters)
    if "capture" in result:
        check_physics(result)
        check_bands(scenarios)
        require_or_skip("packet capture", f"timings agree; {result['capture']}")
    assert all(s["captured"] for s in scenarios)
    check_packets(scenarios)  # what is not time fails plainly, a late arrival is a TimingMiss
    check_physics(result)  # 4D, 2D, 4D + 40..48 ms: written in the test, not the model's
    check_bands(scenarios)
    check_exit(done)


def test_fastopen_counters_confirm_the_story(delaying_machine: LabMachine) -> None:
    done = run_tfolab("run", "fastopen", "--delay", "10", "--json")
    counters = {s["name"]: s["counters"] for s in json.loads(done.stdout)["scenarios"]}
    assert counters["cookie-request"]["TCPFastOpenCookieReqd"] == 1
    assert counters["cookie"]["TCPFastOpenActive"] == 3
    assert counters["invalid-cookie"]["TCPFastOpenPassiveFail"] == 1
    assert counters["invalid-cookie"]["TCPFastOpenActiveFail"] == 1
    assert counters["server-off"]["TCPFastOpenPassive"] == 0
    assert counters["server-off"]["TCPFastOpenCookieReqd"] == 2
    assert counters["no-cookie"]["TCPFastOpenPassive"] == 2


def test_delack_counters_match_the_prediction(delaying_machine: LabMachine) -> None:
    """The model knows every delayed-ACK timer that sends an ACK: DelayedACKs is predicted."""
    done = run_tfolab("run", "delack", "--delay", "10", "--json")
    assert done.returncode in (0, 1), done.stderr
    by_name = {s["name"]: s for s in json.loads(done.stdout)["scenarios"]}
    nagle = by_name["nagle"]
    assert nagle["predicted_counters"]["DelayedACKs"] == 4  # rounds 2-5 stall once each
    assert nagle["counters"]["DelayedACKs"] == 4
    for scenario in by_name.values():
        assert scenario["counter_diff"] == [], scenario["name"]
        predicted = scenario["predicted_counters"].get("DelayedACKs", 0)
        assert scenario["counters"].get("DelayedACKs", 0) == predicted, scenario["name"]


@TIMING
def test_text_report_has_table_counters_and_conclusion(delaying_machine: LabMachine) -> None:
    done = run_tfolab("run", "delack", "--delay", "10", "--scenario", "nagle")
    assert "predicted" in done.stdout and "measured" in done.stdout
    assert "DelayedACKs +4 (model +4)" in done.stdout
    assert "running nagle" in done.stderr
    check_exit(done)
    assert "inside their predicted bands" in done.stdout

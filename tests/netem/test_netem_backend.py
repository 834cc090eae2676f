"""The netem backend, for real, on a kernel that has sch_netem.

This machine's kernel has none, so these run in a stock distribution kernel
through the stock-kernel VM (see README: `-m netem`). That VM is software
emulated: every timing carries a few ms of overhead, more on first use, so
each run starts with a warm-up and the bands here allow for the emulation.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import LabMachine, run_tfolab

pytestmark = pytest.mark.netem

EMULATION_SLACK_MS = 8.0


@pytest.fixture(scope="module")
def netem_machine(lab_machine: LabMachine) -> LabMachine:
    if not lab_machine.netem:
        pytest.skip(f"this kernel has no usable netem ({lab_machine.why_no_delay})")
    return lab_machine


def test_doctor_sees_netem(netem_machine: LabMachine) -> None:
    done = run_tfolab("doctor", "--json")
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["netem"]["ok"], checks["netem"]
    assert "netem will be used" in checks["delay backend (auto)"]["detail"]


def test_handshake_over_netem_measures_4d(netem_machine: LabMachine) -> None:
    run_tfolab("run", "handshake", "--backend", "netem", "--delay", "10", "--iterations", "2")
    done = run_tfolab(
        "run", "handshake", "--backend", "netem", "--delay", "10", "--iterations", "5", "--json"
    )
    assert done.returncode in (0, 1), done.stderr
    result = json.loads(done.stdout)
    assert result["backend"] == "netem"
    measured = sorted(i["measured_ms"] for i in result["scenarios"][0]["iterations"])
    print("netem handshake at D=10:", measured)
    # after warm-up: ~40 ms (4D) plus the emulation's overhead
    assert 39.0 <= measured[len(measured) // 2] <= 40.0 + EMULATION_SLACK_MS
    for i in result["scenarios"][0]["iterations"]:
        assert i["connect_ms"] == pytest.approx(20.0, abs=EMULATION_SLACK_MS)


def test_fastopen_cookie_over_netem_measures_2d(netem_machine: LabMachine) -> None:
    done = run_tfolab(
        "run",
        "fastopen",
        "--scenario",
        "cookie",
        "--backend",
        "netem",
        "--delay",
        "10",
        "--iterations",
        "4",
        "--json",
    )
    assert done.returncode in (0, 1), done.stderr
    scenario = json.loads(done.stdout)["scenarios"][0]
    measured = sorted(i["measured_ms"] for i in scenario["iterations"])
    print("netem fastopen cookie at D=10:", measured)
    assert 19.5 <= measured[len(measured) // 2] <= 20.0 + EMULATION_SLACK_MS
    assert scenario["counters"]["TCPFastOpenActive"] == 4


def test_delack_stall_over_netem(netem_machine: LabMachine) -> None:
    done = run_tfolab(
        "run",
        "delack",
        "--scenario",
        "nagle",
        "--backend",
        "netem",
        "--delay",
        "10",
        "--iterations",
        "5",
        "--json",
    )
    assert done.returncode in (0, 1), done.stderr
    rounds = [i["measured_ms"] for i in json.loads(done.stdout)["scenarios"][0]["iterations"]]
    print("netem delack nagle at D=10:", rounds)
    for later in rounds[1:]:
        assert 80.0 <= later <= 88.0 + EMULATION_SLACK_MS

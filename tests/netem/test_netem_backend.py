"""The netem backend, for real, on a kernel that has sch_netem.

This machine's kernel has none, so these run in a stock distribution kernel
through the stock-kernel VM (see README: `-m netem`). That VM is software
emulated: every one-way trip costs emulation time on top of D. The slack is
not a constant: `emulation` measures it in the VM itself, as the handshake's
four trips at D = 0 through netem (after a warm-up), and every iteration of
every run here must fall within physics (tests/physics.py) plus that
measured cost, doubled, per trip on its path. Packets' arrival times get the
same allowance for the trips before them.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pytest

from tests.conftest import LabMachine, run_tfolab
from tests.environment import require_or_skip
from tests.physics import HEADLINES, headline_range
from tfolab.lab.catalog import find_lab

pytestmark = pytest.mark.netem

CALIBRATION_RUNS = 5
MARGIN = 2.0  # the measured worst cost per trip, doubled: D = 10 is not D = 0
MAX_PLAUSIBLE_MS_PER_TRIP = 10.0  # beyond it the VM is broken, not slow


@pytest.fixture(scope="module")
def netem_machine(lab_machine: LabMachine) -> LabMachine:
    if not lab_machine.netem:
        require_or_skip("netem", f"this kernel has none usable ({lab_machine.why_no_delay})")
    return lab_machine


def test_doctor_sees_netem(netem_machine: LabMachine) -> None:
    done = run_tfolab("doctor", "--json")
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["netem"]["ok"], checks["netem"]
    assert "netem will be used" in checks["delay backend (auto)"]["detail"]


@pytest.fixture(scope="module")
def emulation(netem_machine: LabMachine) -> float:
    """The VM's worst emulation cost per one-way trip, in ms, measured here."""
    run_tfolab("run", "handshake", "--backend", "netem", "--delay", "0", "--iterations", "2")
    done = run_tfolab(
        "run", "handshake", "--backend", "netem", "--delay", "0",
        "--iterations", str(CALIBRATION_RUNS), "--json",
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    measured = [i["measured_ms"] for i in json.loads(done.stdout)["scenarios"][0]["iterations"]]
    per_trip = max(measured) / 4
    print(f"VM emulation at D = 0 (4 trips): {measured} ms, {per_trip:.2f} ms per trip")
    assert per_trip <= MAX_PLAUSIBLE_MS_PER_TRIP, f"the VM is broken: {measured}"
    return per_trip


def _outside(result: dict[str, Any], per_trip_ms: float) -> list[str]:
    """Every iteration of every scenario outside physics plus the VM's measured cost."""
    lab, delay_ms, hz = result["lab"], result["delay_ms"], result["hz"]
    outside = []
    for scenario in result["scenarios"]:
        for iteration in scenario["iterations"]:
            i = iteration["i"]
            low, high = headline_range(lab, scenario["name"], i, delay_ms, hz)
            trips = HEADLINES[(lab, scenario["name"])][i - 1][0]
            high += trips * per_trip_ms * MARGIN
            if not low - 0.1 <= iteration["measured_ms"] <= high:
                outside.append(
                    f"{scenario['name']} #{i}: {iteration['measured_ms']:.2f} ms, "
                    f"physics and the VM allow {low:.1f}-{high:.1f}"
                )
    return outside


def _run(*args: str) -> dict[str, Any]:
    """A warm-up run, then the measured one (`--json`), at D = 10 ms through netem."""
    common = ("--backend", "netem", "--delay", "10")
    run_tfolab("run", *args, *common, "--iterations", "1")
    done = run_tfolab("run", *args, *common, "--json")
    assert done.returncode in (0, 1), done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    assert result["backend"] == "netem"
    return result


@pytest.mark.parametrize(
    "args",
    [("handshake",), ("fastopen", "--scenario", "cookie"), ("delack", "--scenario", "nagle")],
    ids=["handshake-4D", "fastopen-cookie-2D", "delack-nagle-4D+40"],
)
def test_every_iteration_is_physics_plus_the_vms_measured_cost(
    emulation: float, args: tuple[str, ...]
) -> None:
    result = _run(*args)
    for scenario in result["scenarios"]:
        print(args[0], scenario["name"], [i["measured_ms"] for i in scenario["iterations"]])
    outside = _outside(result, emulation)
    assert not outside, "\n".join(outside)


def test_fastopen_counters_over_netem(netem_machine: LabMachine) -> None:
    result = _run("fastopen", "--scenario", "cookie")
    scenario = result["scenarios"][0]
    assert scenario["counters"]["TCPFastOpenActive"] == len(scenario["iterations"])
    assert scenario["counter_diff"] == []


# Packet by packet in the VM: no slack on what the segments are (flags,
# sequence numbers, lengths, options, windows); on when they arrive, the VM's
# measured cost for each trip before the segment (its model time / D, plus
# the one it is on), doubled as for the headlines.
DELAY_MS = 10.0

TIMING_SENTENCE = re.compile(
    r"arrived (?P<kernel>[\d.]+) ms into iteration \d+; the model said (?P<model>[\d.]+) ms "
    r"± (?P<band>[\d.]+)"
)

VM_SCENARIOS = [(lab, s.name) for lab in ("fastopen", "delack") for s in find_lab(lab).scenarios]


@pytest.fixture(scope="module")
def netem_lab_runs(netem_machine: LabMachine) -> dict[str, dict[str, Any]]:
    """One warm-up and one measured `run --json` per lab, shared by the scenarios' tests."""
    runs = {}
    for lab in ("fastopen", "delack"):
        run_tfolab("run", lab, "--backend", "netem", "--delay", "10", "--iterations", "1")
        done = run_tfolab("run", lab, "--backend", "netem", "--delay", "10", "--json")
        assert done.returncode in (0, 1), done.stderr
        runs[lab] = json.loads(done.stdout)
    return runs


def _packet_disagreements(scenario: dict[str, Any], per_trip_ms: float) -> list[str]:
    """The sentences the VM's measured cost does not excuse: every one but a late
    arrival within that cost for the trips up to the segment."""
    left = []
    for sentence in scenario["packet_diff"]:
        timing = TIMING_SENTENCE.search(sentence)
        if timing is None:
            left.append(sentence)
            continue
        kernel, model = float(timing["kernel"]), float(timing["model"])
        trips = math.floor(model / DELAY_MS) + 1
        late = kernel - model - float(timing["band"])
        if kernel < model or late > trips * per_trip_ms * MARGIN:
            left.append(sentence)
    return left


@pytest.mark.parametrize(("lab", "name"), VM_SCENARIOS, ids=[f"{a}-{b}" for a, b in VM_SCENARIOS])
def test_packets_over_netem_are_the_models(
    netem_lab_runs: dict[str, dict[str, Any]], emulation: float, lab: str, name: str
) -> None:
    """Every captured segment is the model's, at D = 10 ms on a stock kernel with netem."""
    result = netem_lab_runs[lab]
    if "capture" in result:
        pytest.fail(f"the VM's kernel refused the capture: {result['capture']}")
    scenario = next(s for s in result["scenarios"] if s["name"] == name)
    assert scenario["captured"], f"{name}: nothing captured"
    left = _packet_disagreements(scenario, emulation)
    assert left == [], "\n".join(left)


@pytest.mark.parametrize("lab", ["fastopen", "delack"])
def test_every_scenarios_iterations_are_physics_plus_the_vms_cost(
    netem_lab_runs: dict[str, dict[str, Any]], emulation: float, lab: str
) -> None:
    """Each iteration of each scenario, the first included (no median, no round skipped)."""
    outside = _outside(netem_lab_runs[lab], emulation)
    assert not outside, "\n".join(outside)

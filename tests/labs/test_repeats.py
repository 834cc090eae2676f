"""What may be measured again (tfolab.lab.repeats): only a late time the lab's wait for a CPU
explains, never TCP, never an early time, never a miss without evidence.

No real run: the "capture" is the model's own segments, as a kernel that did exactly what
the model says would send them, then one thing is changed.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import pytest

from tests.captured_from_model import as_captured
from tfolab.lab import packet_rows
from tfolab.lab.catalog import find_lab
from tfolab.lab.disagreements import Arrival
from tfolab.lab.plan import plan
from tfolab.lab.prediction import predict
from tfolab.lab.repeats import disturbed
from tfolab.lab.results import Repeat, ScenarioResult
from tfolab.model.captured import CapturedRow
from tfolab.model.options import Timestamps

Mutate = Callable[[list[CapturedRow]], list[CapturedRow]]


def measured(
    scenario: str = "plain",
    *,
    lab: str = "handshake",
    late_ms: dict[int, float] | None = None,
    waits_ms: dict[int, float] | None = None,
    mutate: Mutate | None = None,
    settings: dict[str, str] | None = None,
    stolen_ms: float = 0.0,
) -> ScenarioResult:
    """A scenario measured as the model said, iterations `late_ms` late (their segments
    with them), each having waited `waits_ms` for a CPU, the hypervisor having taken
    `stolen_ms` of the machine's CPUs meanwhile."""
    result = predict(plan(find_lab(lab), scenario, 3, settings, delay_ms=10.0), hz=250)
    target = result.scenarios[0]
    sim = target.simulation
    starts = packet_rows.model_starts(sim)
    late = late_ms or {}
    model = (r for r in packet_rows.model_rows(sim) if not r.optional)
    rows = as_captured(model, origin_ms=starts[0], late_ms=late)
    target.captured = mutate(rows) if mutate else rows
    for m in target.measurements:
        m.measured_ms = m.predicted_ms + late.get(m.i, 0.0)
        m.start_ms = starts[m.i] - starts[0]
        m.cpu_wait_ms = (waits_ms or {}).get(m.i, 0.0)
    target.cpu_wait_ms = sum((waits_ms or {}).values())
    target.steal_ms = stolen_ms
    target.compare_packets()
    return target


def test_a_late_iteration_the_wait_explains_is_measured_again() -> None:
    scenario = measured(late_ms={2: 6.0}, waits_ms={2: 7.5})
    assert scenario.disagreements  # its segments arrived late too
    evidence = disturbed(scenario)
    assert evidence is not None
    assert (evidence.scenario, evidence.iteration, evidence.cpu_wait_ms) == ("plain", 2, 7.5)
    # the worst miss: a segment's own band is narrower than the iteration's
    band = scenario.measurements[1].tolerance_ms
    late_segments = [d.late_ms for d in scenario.disagreements if isinstance(d, Arrival)]
    assert evidence.missed_by_ms == pytest.approx(max(6.0 - band, *late_segments))
    assert evidence.missed_by_ms <= 6.0
    assert "iteration 2 was" in evidence.words() and "waited 7.5 ms for a CPU" in evidence.words()
    unmeasured = measured(late_ms={2: 6.0}, waits_ms={2: 7.5})
    unmeasured.cpu_wait_ms = None  # a runner that could not read it: no evidence
    assert disturbed(unmeasured) is None
    assert evidence.to_json()["cpu_wait_ms"] == 7.5


def test_a_miss_the_hypervisor_s_steal_explains_is_measured_again() -> None:
    # a virtual machine paused by its host: no thread of the guest waited on a runqueue
    scenario = measured(late_ms={2: 6.0}, waits_ms={2: 0.3}, stolen_ms=10.0)
    evidence = disturbed(scenario)
    assert evidence is not None and (evidence.cpu_wait_ms, evidence.steal_ms) == (0.3, 10.0)
    assert "the hypervisor took 10 ms of the machine's CPUs" in evidence.words()
    assert evidence.to_json()["steal_ms"] == 10.0
    # the two together must cover the worst miss; neither alone needs to
    assert disturbed(measured(late_ms={2: 6.0}, waits_ms={2: 3.0}, stolen_ms=3.0)) is not None
    assert disturbed(measured(late_ms={2: 6.0}, waits_ms={2: 1.0}, stolen_ms=1.0)) is None
    # and steal never makes an early time, or TCP, the machine's
    assert disturbed(measured(late_ms={2: -6.0}, stolen_ms=50.0)) is None
    counted = measured(late_ms={2: 6.0}, stolen_ms=50.0)
    counted.counter_diff = ["TCPFastOpenActive +1, the model +0"]
    assert disturbed(counted) is None


def test_a_packet_the_delayer_released_late_is_evidence_too() -> None:
    """CI's suite on b9a52d3: the delayer released a server's flight 9 ms after its due
    time, and every packet after it came late; its own statistics say so."""
    scenario = measured(late_ms={2: 6.0}, waits_ms={2: 0.3})
    assert disturbed(scenario) is None
    evidence = disturbed(scenario, delayer_late_ms=9.2)
    assert evidence is not None and evidence.delayer_late_ms == 9.2
    assert "the delayer released a packet 9.2 ms late" in evidence.words()
    assert disturbed(scenario, delayer_late_ms=1.0) is None  # 0.3 + 1.0 < the miss
    assert disturbed(measured(late_ms={2: -6.0}), delayer_late_ms=50.0) is None


def test_a_wait_shorter_than_the_miss_is_no_evidence() -> None:
    assert disturbed(measured(late_ms={2: 6.0}, waits_ms={2: 1.0})) is None
    assert disturbed(measured(late_ms={2: 6.0})) is None  # no wait at all


def test_an_early_time_is_never_the_machine() -> None:
    assert disturbed(measured(late_ms={2: -6.0}, waits_ms={2: 20.0})) is None


def test_what_is_about_tcp_is_never_repeated() -> None:
    def extra_ack(rows: list[CapturedRow]) -> list[CapturedRow]:
        extra = msgspec.structs.replace(rows[3], flags=["ACK"], length=0, options=[Timestamps()])
        return [*rows[:4], extra, *rows[4:]]

    scenario = measured(late_ms={2: 6.0}, waits_ms={1: 20.0, 2: 20.0, 3: 20.0}, mutate=extra_ack)
    assert disturbed(scenario) is None
    counted = measured(late_ms={2: 6.0}, waits_ms={2: 20.0})
    counted.counter_diff = ["TCPFastOpenActive +1, the model +0"]
    assert disturbed(counted) is None


def test_nothing_missed_nothing_repeated() -> None:
    assert disturbed(measured(waits_ms={1: 5.0, 2: 5.0, 3: 5.0})) is None


def test_a_scenario_that_keeps_an_earlier_cookie_cache_stands_as_measured() -> None:
    kept = measured(
        "cookie-request",
        lab="fastopen",
        late_ms={1: 6.0},
        waits_ms={1: 20.0},
        settings={"cookie_cache": "keep"},
    )
    assert disturbed(kept) is None


def test_the_run_json_keeps_the_evidence() -> None:
    result = predict(plan(find_lab("handshake"), "plain", delay_ms=10.0), hz=250)
    result.measured = True
    result.repeats.append(Repeat("plain", 2, 3.4, 7.5))
    assert result.to_json()["repeats"] == [
        {
            "scenario": "plain",
            "iteration": 2,
            "missed_by_ms": 3.4,
            "cpu_wait_ms": 7.5,
            "steal_ms": 0.0,
            "delayer_late_ms": 0.0,
        }
    ]

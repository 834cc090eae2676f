"""The model's bands against numbers written here: physics and the tolerance formula.

Widening the tolerance (a constant, or the formula in tfolab/model/predict.py)
or moving a headline off its physics fails these, whatever the model's own
`ok` says. The expected numbers are computed in the test (tests/physics.py),
never by the code under test.
"""

from __future__ import annotations

import pytest

from tests.physics import HEADLINES, HZ, PROBES, TICK_MS, headline_range
from tfolab.lab.catalog import find_lab
from tfolab.lab.plan import plan
from tfolab.lab.prediction import predict
from tfolab.model.predict import Accuracy
from tfolab.runner.backends import BACKENDS, HOST_OVERHEAD_MS, HOST_OVERHEAD_NORMAL_SCHEDULING_MS

LABS = ("handshake", "fastopen", "delack", "transfer", "loss")


def _predicted(lab: str, delay_ms: float, **options: object) -> dict[str, list]:
    found = find_lab(lab)
    result = predict(plan(found, delay_ms=delay_ms), hz=HZ, **options)
    return {s.planned.name: s for s in result.scenarios}


def test_the_accuracy_constants_are_pinned() -> None:
    assert {name: b.per_packet_error_ms for name, b in BACKENDS.items()} == {
        "nfqueue": 0.4,
        "netem": 0.3,
        "none": 0.1,
    }
    assert HOST_OVERHEAD_MS == 1.0 and HOST_OVERHEAD_NORMAL_SCHEDULING_MS == 4.0
    assert Accuracy() == Accuracy(per_packet_delay_error_ms=0.2, host_overhead_ms=0.5)


@pytest.mark.parametrize("delay_ms", [5.0, 10.0, 25.0])
@pytest.mark.parametrize("lab", LABS)
def test_every_headline_is_its_physics(lab: str, delay_ms: float) -> None:
    scenarios = _predicted(lab, delay_ms)
    assert sorted(scenarios) == sorted(name for (where, name) in HEADLINES if where == lab)
    for name, scenario in scenarios.items():
        assert len(scenario.measurements) == len(HEADLINES[(lab, name)]), name
        for m in scenario.measurements:
            low, high = headline_range(lab, name, m.i, delay_ms)
            assert low <= m.predicted_ms <= high, (name, m.i, m.predicted_ms, (low, high))


@pytest.mark.parametrize(
    ("backend", "realtime", "plain_4d", "tfo_2d", "delack_4d"),
    [
        ("nfqueue", True, 2.6, 1.8, 6.6),  # 4 x 0.4 + 1; 2 x 0.4 + 1; 4 + 4 x 0.4 + 1
        ("netem", True, 2.2, 1.6, 6.2),
        ("nfqueue", False, 5.6, 4.8, 9.6),  # normal scheduling: 4 ms of host overhead
    ],
)
def test_the_tolerance_is_ticks_packets_and_host(
    backend: str, realtime: bool, plain_4d: float, tfo_2d: float, delack_4d: float
) -> None:
    handshake = _predicted("handshake", 10.0, backend=backend, realtime=realtime)
    fastopen = _predicted("fastopen", 10.0, backend=backend, realtime=realtime)
    delack = _predicted("delack", 10.0, backend=backend, realtime=realtime)
    assert [m.tolerance_ms for m in handshake["plain"].measurements] == [plain_4d] * 3
    assert [m.tolerance_ms for m in fastopen["cookie"].measurements] == [tfo_2d] * 3
    assert [m.tolerance_ms for m in delack["nagle"].measurements] == [plain_4d] + [delack_4d] * 4


def test_every_tolerance_follows_the_formula() -> None:
    """timers x tick (a first SYN timeout: its bucket's 8) + packets x the backend's error
    + the host's overhead, exactly."""
    for lab in LABS:
        # the transfer lab's answers beyond ten segments are refused below 2 ms (domain.py),
        # the loss lab's lost request and response below 0.5 ms (loss_probe.py)
        for delay_ms in (10.0,) if lab in ("transfer", "loss") else (0.0, 10.0):
            for name, scenario in _predicted(lab, delay_ms, backend="nfqueue").items():
                paths = scenario.simulation.predictions
                for m, path in zip(scenario.measurements, paths, strict=True):
                    trips, delacks, timeouts = HEADLINES[(lab, name)][m.i - 1]
                    probes = PROBES.get((lab, name), [0] * m.i)[m.i - 1]
                    # a first SYN timeout spreads over its 8-tick bucket, the next on the grid;
                    # a probe over its tick (at 10 ms: 56 ticks, level 0, no rounding doubt)
                    ticks = delacks + (8 + (timeouts - 1) if timeouts else 0) + probes
                    expected = ticks * TICK_MS + path.packets_on_path * 0.4 + 1.0
                    assert m.tolerance_ms == pytest.approx(expected, abs=1e-9), (lab, name)
                    assert path.timers_on_path == delacks + timeouts + probes, (lab, name, m.i)
                    if delay_ms:
                        assert path.packets_on_path == trips, (lab, name, m.i)


def test_a_measurement_is_inside_up_to_the_edge() -> None:
    scenario = _predicted("handshake", 10.0)["plain"]
    m = scenario.measurements[0]
    assert (m.predicted_ms, m.tolerance_ms) == (40.0, 2.6)
    inside = [40.0 - 2.59, 40.0, 40.0 + 2.59]
    outside = [40.0 - 2.61, 40.0 + 2.61]
    for value in inside + outside:
        m.measured_ms = value
        assert m.ok is (value in inside), value

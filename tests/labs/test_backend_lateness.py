"""The delay backend's own lateness, measured per packet (tfo-delay --late-record-fd), moves
the model's arrivals and headlines by what it measured on each one's path; the bands keep
their width.

The physics is stop 47's CI (a host waking late after each long idle): at D = 166 ms each
release came about 1 ms after its due time, so every arrival of the handshake lab's plain
scenario was later than the model's by about 1 ms a trip, the response 4 trips in: outside
bands of 0.4 ms a packet. Here the capture is the model's own, each packet released
`LATE_MS` late, which pushes everything after it on its path.
"""

from __future__ import annotations

import msgspec
import pytest

from tests.captured_from_model import as_captured
from tests.labs import host_captures
from tfolab.lab import packets
from tfolab.lab.catalog import find_lab
from tfolab.lab.disagreements import Arrival
from tfolab.lab.packet_rows import model_rows, model_starts
from tfolab.lab.plan import plan
from tfolab.lab.prediction import accuracy_for
from tfolab.lab.results import Measurement, ScenarioResult
from tfolab.model import Segment, Simulation
from tfolab.model.captured import CapturedRow
from tfolab.model.predict import path_segments, segment_paths

DELAY_MS = 166.0
LATE_MS = 2.0  # each release after its due time (CI's host: about 1 ms)


# a connection per iteration; and a write-write-read round, whose handshake comes before
# its iteration's start (its SYN earlier against that start by the SYN-ACK's lateness)
SCENARIOS = [("handshake", "plain", 2), ("delack", "nagle", 1)]


def _sim(lab: str = "handshake", scenario: str = "plain", iterations: int = 2) -> Simulation:
    return host_captures.model(
        lab, scenario, {}, iterations, DELAY_MS, accuracy=accuracy_for("nfqueue")
    )


def _late_capture(sim: Simulation, *, measured: bool, extra_ms: float = 0.0) -> list[CapturedRow]:
    """The model's rows, each arriving LATE_MS later for itself and for every segment
    before it on its path; `measured`: each row says so (late_ms), as tfo-delay records;
    `extra_ms`: the last row arrives that much later still, its lateness not measured."""
    rows = model_rows(sim)
    captured = as_captured(rows)
    out = []
    for k, (row, cap) in enumerate(zip(rows, captured, strict=True)):
        assert row.event_id is not None
        path = segment_paths(sim.events, sim.predictions)[row.event_id]
        pushed = LATE_MS * (_released(sim, path.on) - _released(sim, path.start_only))
        extra = extra_ms if k == len(rows) - 1 else 0.0
        out.append(
            msgspec.structs.replace(
                cap,
                t_ms=cap.t_ms + pushed + extra,
                late_ms=LATE_MS if measured else 0.0,
            )
        )
    return out


def _released(sim: Simulation, ids: tuple[int, ...]) -> int:
    """How many of these events the delayer released (a path also holds application
    calls, whose lateness is the applications' own: test_app_wakes.py)."""
    return sum(1 for e in sim.events if e.id in ids and isinstance(e, Segment))


def _compare(sim: Simulation, rows: list[CapturedRow]) -> packets.PacketComparison:
    starts = {i: t for i, t in model_starts(sim).items() if i}
    return packets.compare(sim, rows, starts)


@pytest.mark.parametrize(("lab", "scenario", "iterations"), SCENARIOS)
def test_a_late_backend_unmeasured_is_a_timing_miss(
    lab: str, scenario: str, iterations: int
) -> None:
    sim = _sim(lab, scenario, iterations)
    comparison = _compare(sim, _late_capture(sim, measured=False))
    assert comparison.timing_only
    assert any(isinstance(d, Arrival) and d.late_ms > 0 for d in comparison.disagreements)


@pytest.mark.parametrize(("lab", "scenario", "iterations"), SCENARIOS)
def test_the_measured_lateness_moves_each_arrival_by_its_path(
    lab: str, scenario: str, iterations: int
) -> None:
    sim = _sim(lab, scenario, iterations)
    comparison = _compare(sim, _late_capture(sim, measured=True))
    assert comparison.disagreements == ()
    late = packets.backend_lateness(comparison.pairs)
    assert late and set(late.values()) == {LATE_MS}


@pytest.mark.parametrize(("lab", "scenario", "iterations"), SCENARIOS)
def test_lateness_beyond_the_measured_is_still_judged(
    lab: str, scenario: str, iterations: int
) -> None:
    """The last segment's arrival a band and a millisecond later than its path's measured
    lateness: an arrival outside its band, whose sentence names the lateness it counted."""
    sim = _sim(lab, scenario, iterations)
    last = model_rows(sim)[-1]
    rows = _late_capture(sim, measured=True, extra_ms=last.band_ms + 1.0)
    found = _compare(sim, rows).disagreements
    assert len(found) == 1, [d.sentence() for d in found]
    miss = found[0]
    assert isinstance(miss, Arrival)
    own = _released(sim, last.path_before) + last.own_late - _released(sim, last.start_only)
    assert miss.backend_late_ms == LATE_MS * own
    assert 0.9 < miss.late_ms < 1.1
    assert f"with the {miss.backend_late_ms:.2f} ms the delay backend was measured late" in (
        miss.sentence()
    )


def test_a_headline_is_judged_with_the_lateness_on_its_critical_path() -> None:
    sim = _sim()
    (planned,) = plan(find_lab("handshake"), "plain", 2, {}, delay_ms=DELAY_MS).scenarios
    by_id = {e.id: e for e in sim.events}
    measurements = []
    for p in sim.predictions:
        late = LATE_MS * len(path_segments(p.path, by_id))  # each hop's release, in turn
        measurements.append(
            Measurement(p.i, p.predicted_ms + late + p.tolerance_ms / 2, 0.0, 0.0, start_ms=None)
        )
    scenario = ScenarioResult(planned, sim, measurements)
    starts = model_starts(sim)
    for m in scenario.measurements:
        m.start_ms = starts[m.i]
    scenario.captured = _late_capture(sim, measured=True)
    scenario.compare_packets()
    assert scenario.disagreements == ()
    for m, p in zip(scenario.measurements, sim.predictions, strict=True):
        assert m.backend_late_ms == LATE_MS * len(path_segments(p.path, by_id)) > 0
        assert m.ok, (m.measured_ms, m.expected_ms, m.tolerance_ms)
        assert m.measured_ms is not None and m.measured_ms - m.predicted_ms > m.tolerance_ms

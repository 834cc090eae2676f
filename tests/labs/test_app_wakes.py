"""The applications' own wake-ups, measured from their stamped calls, move the model's
arrivals and headlines by what was measured on each one's path; the bands keep their
width, and a wait of TCP's is never explained away as a slow application.

The physics is stop 48's CI: after a second or more asleep, the echo server and the
client each took a few milliseconds to make their next call once a segment woke them
(the server's FIN 3.5 ms late at D = 259, the client's last ACK 4.8 ms late at D = 600).
Here the capture is the model's own, and each call a segment woke an application for is
made WAKE_MS late, which pushes everything after it on its path.
"""

from __future__ import annotations

import math

import msgspec
import pytest

from tests.captured_from_model import as_captured
from tests.labs import host_captures
from tfolab.lab import packets
from tfolab.lab.app_wakes import KernelArrival, WakeHop, app_lateness, wake_hops
from tfolab.lab.catalog import find_lab
from tfolab.lab.disagreements import Arrival
from tfolab.lab.packet_rows import Row, model_rows, model_starts, row_numbers
from tfolab.lab.plan import plan
from tfolab.lab.prediction import accuracy_for
from tfolab.lab.results import Measurement, ScenarioResult
from tfolab.model import AppCall, Simulation
from tfolab.model.captured import CapturedCall, CapturedRow

DELAY_MS = 600.0
WAKE_MS = 3.0  # each woken call after the segment that woke it (CI's host: 1-5 ms)

# a connection per iteration (client and server woken in turn); a Fast Open answer of
# three segments; a write-write-read round on a kept connection (its next round's
# writes are woken by the last answer)
SCENARIOS = [
    ("handshake", "plain", {}, 2),
    ("fastopen", "large-data", {}, 2),
    ("delack", "nagle", {}, 2),
]


def _sim(lab: str, scenario: str, settings: dict[str, str], iterations: int) -> Simulation:
    return host_captures.model(
        lab, scenario, settings, iterations, DELAY_MS, accuracy=accuracy_for("nfqueue")
    )


def _ancestors(sim: Simulation, event_id: int) -> set[int]:
    by_id = {e.id: e for e in sim.events}
    found, current = set(), by_id.get(event_id)
    while current is not None:
        found.add(current.id)
        current = by_id.get(current.caused_by) if current.caused_by is not None else None
    return found


def _pushed(sim: Simulation, event_id: int, woken: set[int]) -> float:
    """How much later than the model an event happens when each woken call is WAKE_MS
    late: by each one on its causal path."""
    return WAKE_MS * len(woken & _ancestors(sim, event_id))


def _woken(sim: Simulation) -> set[int]:
    return {h.call_id for h in wake_hops(sim, row_numbers(sim))}


def _slow_apps(
    sim: Simulation, *, stamped: bool, extra_ms: float = 0.0
) -> tuple[list[CapturedRow], list[CapturedCall]]:
    """The model's rows and calls, each woken call WAKE_MS late; `stamped`: the calls
    are in the capture; `extra_ms`: the last row the model times (and requires) arrives
    that much later still."""
    woken = _woken(sim)
    rows = model_rows(sim)
    last = _last_timed(rows)
    out = []
    for k, (row, cap) in enumerate(zip(rows, as_captured(rows), strict=True)):
        assert row.event_id is not None
        extra = extra_ms if k == last else 0.0
        moved = _pushed(sim, row.event_id, woken) + extra
        out.append(msgspec.structs.replace(cap, t_ms=cap.t_ms + moved))
    number = row_numbers(sim)
    calls = [
        CapturedCall(
            e.time_ms + _pushed(sim, e.id, woken),
            number[e.connection],
            e.side,
            "write" if e.call == "sendto" else e.call,  # type: ignore[arg-type]
        )
        for e in sim.events
        if isinstance(e, AppCall)
        and e.call in ("read", "write", "sendto", "close")
        and e.connection in number
    ]
    return out, calls if stamped else []


def _last_timed(rows: list[Row]) -> int:
    return max(k for k, r in enumerate(rows) if r.timed and not r.optional and not r.lost_in)


def _kernel_starts(sim: Simulation) -> dict[int, float]:
    """Each iteration's measured start: its first call, as late as the calls before it."""
    woken, first = _woken(sim), {p.i: p.path[0] for p in sim.predictions if p.path}
    return {i: t + _pushed(sim, first[i], woken) for i, t in model_starts(sim).items() if i}


def _compare(
    sim: Simulation, rows: list[CapturedRow], calls: list[CapturedCall]
) -> packets.PacketComparison:
    return packets.compare(sim, rows, _kernel_starts(sim), calls=calls)


@pytest.mark.parametrize(("lab", "scenario", "settings", "iterations"), SCENARIOS)
def test_slow_applications_unmeasured_are_a_timing_miss(
    lab: str, scenario: str, settings: dict[str, str], iterations: int
) -> None:
    sim = _sim(lab, scenario, settings, iterations)
    comparison = _compare(sim, *_slow_apps(sim, stamped=False))
    assert comparison.timing_only
    assert any(isinstance(d, Arrival) and d.late_ms > 0 for d in comparison.disagreements)


@pytest.mark.parametrize(("lab", "scenario", "settings", "iterations"), SCENARIOS)
def test_the_stamped_wake_ups_move_each_arrival_by_its_path(
    lab: str, scenario: str, settings: dict[str, str], iterations: int
) -> None:
    sim = _sim(lab, scenario, settings, iterations)
    comparison = _compare(sim, *_slow_apps(sim, stamped=True))
    assert comparison.disagreements == (), comparison.sentences
    woke = comparison.apps_late
    assert woke and all(v == pytest.approx(WAKE_MS, abs=1e-3) for v in woke.values()), woke


@pytest.mark.parametrize(("lab", "scenario", "settings", "iterations"), SCENARIOS)
def test_a_wait_beyond_the_stamped_is_still_judged(
    lab: str, scenario: str, settings: dict[str, str], iterations: int
) -> None:
    """The last segment a band and 5 ms later than its path's measured wake-ups: an
    arrival outside its band (less what a timer-wheel bucket the comparison may choose
    explains, a tick or two), whose sentence names the wake-ups it counted."""
    sim = _sim(lab, scenario, settings, iterations)
    rows = model_rows(sim)
    last = rows[_last_timed(rows)]
    found = _compare(sim, *_slow_apps(sim, stamped=True, extra_ms=last.band_ms + 5.0))
    misses = found.disagreements
    assert len(misses) == 1, [d.sentence() for d in misses]
    miss = misses[0]
    assert isinstance(miss, Arrival)
    assert 2.0 < miss.late_ms < 5.1
    assert miss.apps_late_ms > 0
    assert (
        f"with the {miss.apps_late_ms:.2f} ms the applications took beyond the model to wake "
        "and call on its path" in miss.sentence()
    )


def test_a_stamp_after_the_next_arrival_is_not_counted() -> None:
    """A server that answers only after the client's next segment arrived may have
    waited for it (a wait of TCP's the model must state): its stamp explains nothing."""
    hop = WakeHop(call_id=7, wake_id=3, connection=1, side="server", call="write",
                  gap_ms=0.0, between=())  # fmt: skip
    arrivals = [
        KernelArrival(1, "client", 100.0),  # the request, which woke the model's server
        KernelArrival(1, "client", 140.0),  # the client's next segment
    ]
    on_time = [CapturedCall(102.0, 1, "server", "write")]
    after_next = [CapturedCall(141.0, 1, "server", "write")]
    assert app_lateness([hop], on_time, {3: 100.0}, arrivals) == {7: 2.0}
    assert app_lateness([hop], after_next, {3: 100.0}, arrivals) == {}
    # another connection's or side's calls, or one before the wake, are not this hop's
    elsewhere = [
        CapturedCall(101.0, 2, "server", "write"),
        CapturedCall(101.0, 1, "client", "write"),
        CapturedCall(99.0, 1, "server", "write"),
    ]
    assert app_lateness([hop], elsewhere, {3: 100.0}, arrivals) == {}


def test_the_calls_of_one_hop_count_once_between_them() -> None:
    """A read and then a close, both woken by the same FIN: the close's lateness is what
    it took beyond the read's, so that the path sums to the close's own."""
    read = WakeHop(5, 3, 1, "server", "read", 0.0, ())
    close = WakeHop(6, 3, 1, "server", "close", 0.0, (5,))
    calls = [CapturedCall(101.0, 1, "server", "read"), CapturedCall(101.5, 1, "server", "close")]
    late = app_lateness([read, close], calls, {3: 100.0}, [KernelArrival(1, "client", 100.0)])
    assert late == {5: 1.0, 6: 0.5}
    assert math.isclose(sum(late.values()), 1.5)


def test_a_headline_is_judged_with_the_wake_ups_on_its_critical_path() -> None:
    sim = _sim("handshake", "plain", {}, 2)
    (planned,) = plan(find_lab("handshake"), "plain", 2, {}, delay_ms=DELAY_MS).scenarios
    woken = _woken(sim)
    measurements = []
    for p in sim.predictions:
        on_path = len(woken & set(p.path[1:]))
        late = WAKE_MS * on_path
        measurements.append(
            Measurement(p.i, p.predicted_ms + late + p.tolerance_ms / 2, 0.0, 0.0, start_ms=None)
        )
    scenario = ScenarioResult(planned, sim, measurements)
    starts = _kernel_starts(sim)
    for m in scenario.measurements:
        m.start_ms = starts[m.i]
    scenario.captured, scenario.calls = _slow_apps(sim, stamped=True)
    scenario.compare_packets()
    assert scenario.disagreements == ()
    for m in scenario.measurements:
        assert m.apps_late_ms > 0
        assert m.ok, (m.measured_ms, m.expected_ms, m.tolerance_ms)
        assert m.measured_ms is not None and m.measured_ms - m.predicted_ms > m.tolerance_ms


@pytest.mark.parametrize("client_fastopen", ["connect", "sendto"])
def test_a_late_iteration_start_is_not_counted_again_by_its_calls(client_fastopen: str) -> None:
    """A repeat Fast Open whose client started its iteration 5 ms after the model's
    (between iterations it does what the model does not time): the comparison aligns the
    iteration on its measured start, so the write after that connect(), or the sendto()
    that is the start, is on time, not 5 ms late for the last iteration's segment (stop
    49's CI: a 20.30 ms repeat judged against 22.4)."""
    gap_ms = 5.0
    sim = _sim("fastopen", "plain", {"client_fastopen": client_fastopen}, 2)
    iteration = {e.id: e.iteration for e in sim.events}
    rows = model_rows(sim)
    moved = [
        msgspec.structs.replace(
            cap, t_ms=cap.t_ms + (gap_ms if iteration[row.event_id] == 2 else 0)
        )
        for row, cap in zip(rows, as_captured(rows), strict=True)
        if row.event_id is not None
    ]
    number = row_numbers(sim)
    calls = [
        CapturedCall(
            e.time_ms + (gap_ms if e.iteration == 2 else 0.0),
            number[e.connection],
            e.side,
            "write" if e.call == "sendto" else e.call,  # type: ignore[arg-type]
        )
        for e in sim.events
        if isinstance(e, AppCall) and e.call in ("read", "write", "sendto", "close")
    ]
    starts = {i: t + (gap_ms if i == 2 else 0.0) for i, t in model_starts(sim).items() if i}
    comparison = packets.compare(sim, moved, starts, calls=calls)
    assert comparison.disagreements == (), comparison.sentences
    assert all(abs(v) < 1e-3 for v in comparison.apps_late.values()), comparison.apps_late

"""The timer-wheel search (packets._wheel_buckets) tries a connection's other positions
only where one could change a disagreement: not where every disagreement is about time
and the first comes before any of the connection's timers is due. On a slow or emulated
host every arrival is late, and each position is a whole simulation: CI's VM spent over
3 minutes on two 300 kB answers at D = 574 ms (fuzzer seed 5394).

No real run: the "capture" is the model's own segments, made late.
"""

from __future__ import annotations

import msgspec
import pytest

from tests.captured_from_model import as_captured
from tests.labs.search_spies import wheel_searches
from tfolab.lab import packet_rows, packets
from tfolab.lab.catalog import find_lab
from tfolab.lab.plan import plan
from tfolab.lab.prediction import predict
from tfolab.model import Simulation, Timer

DELAY_MS = 574.28  # 2D beyond the SYN-ACK timer's second: a level-1 timer races the ACK


def _scenario(iterations: int = 1) -> Simulation:
    lab = find_lab("handshake")
    result = predict(plan(lab, "plain", iterations, {}, delay_ms=DELAY_MS), hz=250)
    sim = result.scenarios[0].simulation
    assert sim.wheel_races == tuple(range(1, iterations + 1))
    return sim


def _tried(
    sim: Simulation,
    late_from_ms: float,
    monkeypatch: pytest.MonkeyPatch,
    late_connection: int | None = None,
) -> list[int]:
    """The connection of each other position the comparison simulates, against a
    capture whose segments arriving from `late_from_ms` on (the model's clock; of
    `late_connection` only, if given) are 3 ms late."""
    calls = wheel_searches(monkeypatch)
    starts = packet_rows.model_starts(sim)
    rows = [r for r in packet_rows.model_rows(sim) if not r.optional]
    captured = as_captured(rows, origin_ms=starts[0])
    late = [
        msgspec.structs.replace(c, t_ms=c.t_ms + 3.0)
        if r.arrived_ms >= late_from_ms and late_connection in (None, r.connection)
        else c
        for r, c in zip(rows, captured, strict=True)
    ]
    comparison = packets.compare(sim, late, {i: s - starts[0] for i, s in starts.items()})
    assert comparison.disagreements and comparison.timing_only
    return calls


def test_a_host_late_from_the_start_is_not_searched(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _tried(_scenario(), 0.0, monkeypatch) == []


def test_the_connection_that_disagrees_is_searched_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Three racing connections, the third late after its timer is due: its positions
    are tried before any of the two that agree (packets._wheel_order), which come after
    only because none of its own explains the lateness."""
    sim = _scenario(3)
    due = min(e.deadline_ms for e in sim.events if isinstance(e, Timer) and e.connection == 3)
    tried = _tried(sim, due, monkeypatch, late_connection=3)
    own = len(tried) - len([c for c in tried if c != 3])
    assert own > 0 and tried[:own] == [3] * own
    assert tried[own:] and tried[own] == 2  # then the latest that agrees


def test_lateness_after_a_timer_is_due_is_still_searched(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sim = _scenario()
    due = min(e.deadline_ms for e in sim.events if isinstance(e, Timer) and e.connection == 1)
    assert _tried(sim, due, monkeypatch)

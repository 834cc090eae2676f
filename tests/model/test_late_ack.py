"""model/late_ack.py: the third outcome of a delayed-ACK race against a FIN, at D = 0 only."""

from __future__ import annotations

import pytest

from tests.model.scenarios import SCENARIOS, scenario
from tfolab.model import Segment, Timer, simulate
from tfolab.model.late_ack import late_arrivals


@pytest.mark.parametrize("item", SCENARIOS, ids=lambda s: f"{s.lab}-{s.name}")
def test_every_race_against_a_closing_fin_has_its_late_outcome(item) -> None:
    sim = simulate(item.config, one_way_delay_ms=0, iterations=item.iterations)
    segments = {e.id: e for e in sim.events if isinstance(e, Segment)}
    races = [e for e in sim.events if isinstance(e, Timer) and e.race]
    late = {a.timer: a for a in late_arrivals(sim.events, 0)}
    for timer in races:
        fin = segments[timer.caused_by]
        if "FIN" not in fin.flags:
            assert timer.id not in late
            continue
        ack, answer, reset = late[timer.id].after
        assert (ack.sender, ack.flags, ack.seq, ack.ack) == (fin.sender, ("ACK",), fin.seq, fin.ack)
        last_ack = next(
            s for s in segments.values()
            if s.connection == fin.connection and s.sender == fin.receiver
            and s.flags == ("ACK",) and s.ack == fin.end_seq
        )  # fmt: skip
        assert (answer.sender, answer.flags, answer.seq, answer.ack) == (
            last_ack.sender, last_ack.flags, last_ack.seq, last_ack.ack
        )  # fmt: skip
        assert (reset.sender, reset.flags, reset.seq, reset.ack, reset.options) == (
            fin.sender, ("RST",), fin.end_seq, None, ()
        )  # fmt: skip


def test_a_delay_keeps_the_order_so_there_is_no_late_outcome() -> None:
    item = scenario("fastopen", "cookie")
    sim = simulate(item.config, one_way_delay_ms=10, iterations=3)
    assert any(isinstance(e, Timer) and e.race for e in sim.events)
    assert late_arrivals(sim.events, 10) == ()
    at_zero = simulate(item.config, one_way_delay_ms=0, iterations=3)
    assert len(late_arrivals(at_zero.events, 0)) == 3

"""A lost pure ACK (ack_loss.py): followed where a later segment acknowledges as much
before the peer's earliest timer, refused where none does.

The kernel agreed on all 79 lost pure ACKs the labs' scenarios have in their first eight
packets per side at D = 13 ms (this host, 6.18, NFQUEUE; docs/TCP-NOTES.md)."""

from __future__ import annotations

import pytest

from tfolab.lab.catalog import find_lab
from tfolab.model import Segment, Simulation, Timer
from tfolab.model.scenario import parse_settings
from tfolab.model.simulation import ModelInputError, simulate


def _sim(lab: str, scenario: str, drop: str, **settings: str) -> Simulation:
    config = find_lab(lab).scenario(scenario).config
    config = config.with_typed(parse_settings({"drop": drop, **settings}))
    return simulate(config, one_way_delay_ms=13, iterations=2, hz=250)


def _lost(sim: Simulation) -> Segment:
    [lost] = [e for e in sim.events if isinstance(e, Segment) and e.lost]
    return lost


def _fired(sim: Simulation) -> list[Timer]:
    return [e for e in sim.events if isinstance(e, Timer) and e.action == "fired"]


def test_the_handshake_s_ack_lost_is_repeated_by_the_request() -> None:
    """The request, sent right after it, acknowledges the SYN-ACK too: the server's
    child is made by the request (tcp_check_req), long before its SYN-ACK timer (1 s)."""
    sim = _sim("loss", "request-lost", "client:2@1")
    lost = _lost(sim)
    assert (lost.sender, lost.flags, lost.ack) == ("client", ("ACK",), 1)
    [request] = [
        e for e in sim.events
        if isinstance(e, Segment) and e.iteration == 1 and e.sender == "client" and e.length
    ]  # fmt: skip
    assert request.ack == 1 and not request.lost
    assert _fired(sim) == [] and sim.counters == {}
    first, second = sim.predictions
    assert first.predicted_ms == pytest.approx(second.predicted_ms)


def test_the_ack_of_the_response_lost_is_repeated_by_the_fin() -> None:
    sim = _sim("loss", "request-lost", "client:4@1")
    lost = _lost(sim)
    [fin] = [
        e for e in sim.events
        if isinstance(e, Segment) and e.iteration == 1 and e.sender == "client"
        and "FIN" in e.flags
    ]  # fmt: skip
    assert fin.ack == lost.ack and fin.time_ms - lost.time_ms < 1
    assert _fired(sim) == [] and sim.counters == {}


def test_an_ack_nothing_repeats_before_the_peer_s_timer_is_refused() -> None:
    """Nagle: the server's delayed ACK of write 1 is what releases write 2, so nothing
    acknowledges write 1 again before the client's probe (which would carry write 2)."""
    with pytest.raises(ModelInputError, match="earliest its tail-loss probe"):
        _sim("delack", "nagle", "server:2@1", fresh_connection_each_iteration="true")


def test_past_500_ms_the_lost_ack_of_the_syn_ack_needs_no_check() -> None:
    """At D = 600 the SYN goes again, so request-lost's client:3 is the handshake's ACK.
    The server's SYN-ACK timer fires before that ACK would have arrived in either world,
    and the model runs that timer (synack_timer.py): the request, right behind the lost
    ACK, completes the handshake as it would have."""
    config = find_lab("loss").scenario("request-lost").config
    sim = simulate(config, one_way_delay_ms=600, iterations=1, hz=250)
    lost = _lost(sim)
    assert (lost.sender, lost.flags, lost.ack) == ("client", ("ACK",), 1)
    [request] = [
        e for e in sim.events if isinstance(e, Segment) and e.length and e.sender == "client"
    ]
    assert request.ack == 1 and request.sent_ms - lost.sent_ms < 1
    [synack_timer] = [t for t in _fired(sim) if t.side == "server"]
    assert synack_timer.time_ms < lost.sent_ms + 600  # before the lost ACK's arrival

"""Each explanation names the kernel's reason, pinned to the rule it follows.

- tcp_fin(): in FIN_WAIT2 (and FIN_WAIT1) the FIN is ACKed by tcp_fin itself
  (tcp_send_ack), unconditionally; no quick-ACK or delayed-ACK decision.
- tcp_measure_rcv_mss / __tcp_cleanup_rbuf: an ACK at read in an interactive
  socket is due to ICSK_ACK_PUSHED2, never to "not interactive".
- tcp_event_data_sent compares unsigned with ato 0 before any data arrived:
  nobody enters pingpong at t = 0.
- tcp_delack_timer_handler counts DelayedACKs for every ACK the timer sends.
"""

from __future__ import annotations

import pytest

from tests.model.scenarios import SCENARIOS, NamedScenario, scenario
from tfolab.model import Note, Segment, Timer, simulate


@pytest.mark.parametrize("item", SCENARIOS, ids=lambda s: f"{s.lab}-{s.name}")
@pytest.mark.parametrize("delay", [0, 10])
def test_the_ack_of_the_servers_fin_is_tcp_fins_own(item: NamedScenario, delay: float) -> None:
    sim = simulate(item.config, one_way_delay_ms=delay, iterations=item.iterations)
    segments = [e for e in sim.events if isinstance(e, Segment)]
    server_fins = [s for s in segments if s.sender == "server" and "FIN" in s.flags]
    assert server_fins
    for fin in server_fins:
        [ack] = [
            s
            for s in segments
            if s.sender == "client" and s.connection == fin.connection and s.caused_by == fin.id
        ]
        assert ack.flags == ("ACK",) and ack.ack == fin.seq + 1
        assert ack.sent_ms == fin.arrived_ms
        assert "tcp_fin() sends it unconditionally" in ack.explanation
        assert "FIN_WAIT2" in ack.explanation
        assert "quick-ACK" not in ack.explanation


def test_nodelay_acks_at_read_for_pushed2_not_for_a_non_interactive_server() -> None:
    item = scenario("delack", "nodelay")
    sim = simulate(item.config, one_way_delay_ms=10, iterations=5)
    at_read = [
        e
        for e in sim.events
        if isinstance(e, Segment) and e.sender == "server" and "at read" in e.explanation
    ]
    assert {e.iteration for e in at_read} >= {2, 3, 4, 5}
    for ack in at_read:
        assert "ICSK_ACK_PUSHED2" in ack.explanation and "tcp_measure_rcv_mss" in ack.explanation
        assert "not interactive" not in ack.explanation


@pytest.mark.parametrize("delay", [0, 10])
def test_no_cookie_client_is_not_interactive_at_time_zero(delay: float) -> None:
    item = scenario("fastopen", "no-cookie")
    sim = simulate(item.config, one_way_delay_ms=delay, iterations=item.iterations)
    early = [
        e
        for e in sim.events
        if isinstance(e, Note) and "pingpong" in e.text and e.side == "client"
        and e.time_ms < 2 * delay + 0.001
    ]  # fmt: skip
    assert early == []


@pytest.mark.parametrize("delay", [0, 5, 10, 25])
def test_delayed_acks_are_counted_per_timer_that_sent_an_ack(delay: float) -> None:
    item = scenario("delack", "nagle")
    sim = simulate(item.config, one_way_delay_ms=delay, iterations=item.iterations)
    sent = [
        e for e in sim.events if isinstance(e, Segment) and "sent by the timer" in e.explanation
    ]
    fired = [e for e in sim.events if isinstance(e, Timer) and e.action == "fired"]
    assert len(sent) == item.iterations - 1  # every round after the first stalls once
    assert len(fired) >= len(sent)
    assert sim.counters.get("DelayedACKs", 0) == len(sent)


@pytest.mark.parametrize("name", ["nodelay", "single-write", "cork", "quickack"])
def test_no_stall_no_delayed_ack_counted(name: str) -> None:
    item = scenario("delack", name)
    sim = simulate(item.config, one_way_delay_ms=10, iterations=item.iterations)
    assert "DelayedACKs" not in sim.counters

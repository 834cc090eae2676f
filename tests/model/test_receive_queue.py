"""What tcp_cleanup_rbuf needs before an ACK goes at TCP_QUICKACK or at a read.

__tcp_sock_set_quickack runs tcp_cleanup_rbuf(sk, 1), which ACKs only when
nothing is queued for recv() (`!sk_rmem_alloc`); an unread FIN is queued too.
An ACK sent at a read comes after the read that sends it.
"""

from __future__ import annotations

import pytest

from tests.model.scenarios import scenario
from tfolab.model import AppCall, Segment, simulate


@pytest.mark.parametrize("delay", [0, 10])
def test_quickack_does_not_ack_a_fin_still_queued(delay: float) -> None:
    item = scenario("delack", "quickack")
    sim = simulate(item.config, one_way_delay_ms=delay, iterations=3)
    server = [e for e in sim.events if isinstance(e, Segment) and e.sender == "server"]
    client_fin = next(
        e
        for e in sim.events
        if isinstance(e, Segment) and e.sender == "client" and "FIN" in e.flags
    )
    after_fin = [s for s in server if s.ack is not None and s.ack > client_fin.seq]
    assert [s.flags for s in after_fin] == [("FIN", "ACK")]  # the FIN carries the ACK


def test_an_ack_at_read_follows_the_read() -> None:
    item = scenario("delack", "nodelay")
    sim = simulate(item.config, one_way_delay_ms=10, iterations=3)
    by_id = {e.id: e for e in sim.events}
    at_read = [e for e in sim.events if isinstance(e, Segment) and "at read" in e.explanation]
    assert at_read
    for ack in at_read:
        cause = by_id[ack.caused_by] if ack.caused_by is not None else None
        assert isinstance(cause, AppCall) and cause.call == "read"
        assert "ICSK_ACK_PUSHED2" in ack.explanation

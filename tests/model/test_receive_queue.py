"""What tcp_cleanup_rbuf needs before an ACK goes at TCP_QUICKACK or at a read.

__tcp_sock_set_quickack runs tcp_cleanup_rbuf(sk, 1) in ESTABLISHED or
CLOSE_WAIT with an ACK scheduled (6.1.176 and 6.12.117 alike): a small pushed
segment is ACKed only when nothing is queued for recv() (`!sk_rmem_alloc`; an
unread FIN is queued too), but more than one full segment unacknowledged is
ACKed at once, before the read, with the window of the unread memory (fuzzer
seed 5105, tests/labs/test_quickack_capture.py). An ACK sent at a read comes
after the read that sends it.
"""

from __future__ import annotations

import dataclasses

import pytest

from tests.model.scenarios import scenario
from tfolab.model import AppCall, Segment, Simulation, simulate
from tfolab.model.delack import ACK_PUSHED, ACK_SCHED, AckState, DelackRules
from tfolab.model.rcv_space import receive_memory_for

MSS, SKB_HEAD, RCVBUF = 3781, 832, 131072  # MTU 3833; 6.18's tcp_rmem[1]


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


def seed_5105(delay: float) -> Simulation:
    """delack quickack, TCP_CORK, MTU 3833, 10 + 7561 bytes, 4 rounds (window scale 10)."""
    item = scenario("delack", "quickack")
    config = dataclasses.replace(item.config, cork=True, mtu=3833, second_write_bytes=7561)
    rules = receive_memory_for((6, 18), RCVBUF, 32 << 20)
    return simulate(
        config,
        one_way_delay_ms=delay,
        iterations=4,
        receive_space_bytes=32 << 20,
        receive_memory=dataclasses.replace(rules, skb_head_truesize=SKB_HEAD),
    )


def test_quickack_acks_more_than_a_full_segment_before_the_read() -> None:
    sim = seed_5105(62.27)
    by_id = {e.id: e for e in sim.events}
    round4 = [e for e in sim.events if e.iteration == 4]
    ack = next(
        e
        for e in round4
        if isinstance(e, Segment) and e.sender == "server" and e.length == 0 and e.ack == 30285
    )
    cause = by_id[ack.caused_by] if ack.caused_by is not None else None
    assert isinstance(cause, AppCall) and cause.detail == "TCP_QUICKACK 1"
    assert "__tcp_sock_set_quickack" in ack.explanation
    read = next(
        e for e in round4 if isinstance(e, AppCall) and e.side == "server" and e.call == "read"
    )
    assert cause.id < ack.id < read.id
    # tcp_space with 7571 bytes unread: two fresh skbs (the 9 bytes coalesced into the
    # second), at the ratio tcp_measure_rcv_mss measured (3781 << 8) / 4613 = 209
    ratio = (MSS << 8) // (MSS + SKB_HEAD)
    unread = 2 * (MSS + SKB_HEAD) + 9
    assert ack.window == -(-((RCVBUF - unread) * ratio >> 8) // 1024) == 98
    # the echo, after the read: rcv_ssthresh, grown in round 4 to tcp_space() with the
    # first segment queued (tcp_grow_window's room), rounded up to the scale
    echo = next(e for e in round4 if isinstance(e, Segment) and e.sender == "server" and e.length)
    ssthresh = (RCVBUF - (MSS + SKB_HEAD)) * ratio >> 8
    assert echo.window == -(-ssthresh // 1024) == 101
    read_acks = [
        e
        for e in round4
        if isinstance(e, Segment) and e.sender == "server" and e.caused_by == read.id
    ]
    assert not read_acks  # nothing left to ACK, and no window worth an update


def test_quickack_leaves_a_small_unread_segment_to_the_read() -> None:
    sim = simulate(scenario("delack", "quickack").config, one_way_delay_ms=10, iterations=4)
    by_id = {e.id: e for e in sim.events}
    quickacks = {
        e.id for e in sim.events if isinstance(e, AppCall) and e.detail == "TCP_QUICKACK 1"
    }
    server_acks = [
        e for e in sim.events if isinstance(e, Segment) and e.sender == "server" and not e.length
    ]
    assert server_acks
    assert not [a for a in server_acks if a.caused_by in quickacks]
    assert any(isinstance(by_id.get(a.caused_by or -1), AppCall) for a in server_acks)


@pytest.mark.parametrize("established", [True, False])
def test_quickack_runs_cleanup_only_in_established_or_close_wait(established: bool) -> None:
    rules = DelackRules(hz=250, pingpong_thresh=1)
    state = AckState(rcv_mss=MSS, pending=ACK_SCHED, pingpong=1)
    assert rules.set_quickack(state, established) is established
    assert state.pingpong == 0  # inet_csk_exit_pingpong_mode in every state
    assert bool(state.pending & ACK_PUSHED) is established
    idle = AckState(rcv_mss=MSS)
    assert rules.set_quickack(idle, True) is False  # no ACK scheduled: nothing to run

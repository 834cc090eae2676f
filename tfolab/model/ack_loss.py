"""A lost pure ACK: what its peer's timers do without it.

Rules (Linux 6.1 and 6.18 alike):
- An ACK carries nothing that is sent again. What it acknowledged stays in the
  peer's retransmit queue, its timers armed, until a later segment acknowledges
  as much or more (the request after the handshake's ACK, the FIN after the ACK
  of a response): ACKs are cumulative. The model then only takes the ACK away:
  the peer's RTT sample, its window's growth and whatever the ACK would have
  released come with that later segment.
- The peer's first timer for that data is never earlier than min(2 srtt + 2 ms,
  srtt + 200 ms) after it sent the oldest of it (tcp_schedule_loss_probe: 2 srtt
  plus TCP_TIMEOUT_MIN with several segments out, plus tcp_rto_min with one, no
  later than the RTO; the RTO srtt + rttvar, rttvar at least tcp_rto_min), nor
  than TCP_TIMEOUT_INIT (1 s) before its first RTT sample (a SYN-ACK's timer in
  SYN_RECV, reqsk_timer_handler; a Fast Open child's, tcp_fastopen_synack_timer).
  Where no later segment has acknowledged the data a tick before that, the peer
  would send again data its peer already has (answered with a D-SACK): refused
  at that point, with the reason.
- The last ACK of a close, sent from TIME_WAIT to a peer in LAST_ACK whose FIN
  is all it has in flight, has no later segment: the peer's tail-loss probe of
  its FIN fires, armed when the FIN left (loss_probe.py), and TIME_WAIT answers
  it (time_wait.py).
- An ACK that acknowledged nothing new (a window update, a duplicate, a
  challenge ACK) is followed only where its peer has nothing in flight and
  nothing waiting to be sent: nothing there can depend on it.
- The ACK of a SYN-ACK needs no such check: its peer in SYN_RECV has one timer,
  the SYN-ACK's (reqsk_timer_handler, or a Fast Open child's
  tcp_fastopen_synack_timer; tcp_schedule_loss_probe and tcp_rearm_rto do
  nothing there), and synack_timer.py runs it in the model, so whatever it
  does before a later segment acknowledges the SYN-ACK is drawn: past
  D = 500 ms it fires before the lost ACK would have arrived anyway.
"""

from __future__ import annotations

from tfolab.model import loss_probe, loss_rto
from tfolab.model.flights import LostTail
from tfolab.model.path import LossNotFollowed
from tfolab.model.rtt_estimator import RTO_MIN_US
from tfolab.model.sock import RTO_INIT_NS, TcpSock
from tfolab.model.state import TcpState

NS_PER_US = 1000
TCP_TIMEOUT_MIN_US = 2000  # the probe's floor with several segments out


def refusal(sock: TcpSock, now: int, first_ack: bool, transmit: loss_rto.Transmit) -> str | None:
    """The path lost `sock`'s pure ACK (of its rcv_nxt): why the model cannot follow it, or None
    (having set up what follows: the peer's probe of its FIN, or a check at the peer's
    earliest timer). `first_ack`: it acknowledged more than this side's earlier
    segments had."""
    peer = sock.peer
    if peer is None:
        return "a lost pure ACK with no peer socket"
    if sock.state is TcpState.TIME_WAIT:
        return _last_ack(sock, peer, transmit)
    if not first_ack:
        if peer.flights or peer.unsent or (peer.fin_requested and not peer.fin_sent):
            return (
                f"a lost pure ACK that acknowledged nothing new while the {peer.side} has "
                "data in flight or waiting (a window update or a duplicate it may act on)"
            )
        return None
    ack = sock.rcv_nxt
    covered = [f for f in peer.flights if f.end <= ack]
    if not covered:
        return f"a lost pure ACK of part of one of the {peer.side}'s segments"
    if peer.lost_tail is not None or peer.total_retrans:
        return f"a lost pure ACK while the {peer.side} retransmits"
    if peer.state is TcpState.SYN_RECV and peer.request is not None:
        return None  # the request's SYN-ACK timer is its only one, and the model runs it
    due = _earliest_timer_ns(peer, covered[0].sent_ns)
    sock.env.call_at(max(due, now), lambda t: _check(peer, ack, t))
    return None


def _earliest_timer_ns(peer: TcpSock, oldest_sent_ns: int) -> int:
    """The earliest the peer's probe or retransmission timer may run for data it sent
    from `oldest_sent_ns` on, a tick early for the jiffies' phase."""
    tick_ns = round(peer.env.clock.tick_ns)
    if peer.rtt is None:
        return oldest_sent_ns + RTO_INIT_NS - tick_ns
    srtt_us = peer.rtt.srtt_us
    floor_us = min(2 * srtt_us + TCP_TIMEOUT_MIN_US, srtt_us + RTO_MIN_US)
    return oldest_sent_ns + floor_us * NS_PER_US - tick_ns


def _check(peer: TcpSock, ack: int, now: int) -> None:
    """At the peer's earliest timer: has a later segment acknowledged the data?"""
    if peer.snd_una >= ack or peer.state in (TcpState.CLOSED, TcpState.TIME_WAIT):
        return
    raise LossNotFollowed(
        f"the path lost an ACK, and nothing acknowledged the {peer.side}'s data again "
        f"by {now / 1e6:.1f} ms, the earliest its tail-loss probe or retransmission timer "
        f"could fire: the {peer.side}'s probe (of what its peer has, answered with a "
        "D-SACK, or of data it holds back) is not modelled yet"
    )


def _last_ack(sock: TcpSock, peer: TcpSock, transmit: loss_rto.Transmit) -> str | None:
    """The last ACK of a close: the peer's probe of its FIN (loss_probe.lost)."""
    fins = [f for f in peer.flights if not f.data and f.end == peer.snd_nxt]
    if peer.state is not TcpState.LAST_ACK or len(peer.flights) != 1 or not fins:
        return f"a lost last ACK while the {peer.side} is in {peer.state.name}"
    if peer.lost_tail is not None or peer.total_retrans:
        return f"a lost last ACK after the {peer.side} retransmitted"
    fin = fins[0]
    tail = LostTail(fin.seq, fin.end, ("FIN", "ACK"), b"", "FIN", fin.event_id)
    loss_probe.lost(peer, fin.sent_ns, tail, transmit)
    return None

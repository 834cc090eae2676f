"""The retransmission timer, where the model follows it: an answer its client dropped.

Rules (Linux 6.1 and 6.18):
- The segment dropped here is a Fast Open child's answer that reached its
  client before a SYN-ACK did: without a delay (loop.py's "ahead" point), or
  after the path lost the child's SYN-ACK. In SYN_SENT,
  tcp_rcv_synsent_state_process drops a segment without SYN ("fifth, if
  neither of the SYN or RST bits is set then drop the segment"). One such
  segment is followed; a second leaves the domain.
- The kernel runs the timer for every unacknowledged flight; the model draws
  it only where it fires, for a flight its peer dropped (Flight.dropped).
- The child's first RTT sample comes with the ACK of its SYN-ACK
  (tcp_rcv_state_process, TCP_SYN_RECV: tcp_synack_rtt_meas), microseconds
  and at least 1 (tcp_rtt_estimator: srtt_us = max(1U, srtt)), and sets the
  RTO to m + max(2m, tcp_rto_min), 200 ms, rounded up to jiffies
  (__tcp_set_rto, usecs_to_jiffies). tcp_rcv_synrecv_state_fastopen then
  re-arms the timer with it (tcp_rearm_rto) while the answer is
  unacknowledged; no loss probe stood before it (tcp_schedule_loss_probe
  skips a Fast Open connection whose handshake has not ended).
- When it fires, tcp_retransmit_timer sends the head of the retransmit queue
  again (tcp_retransmit_skb): the same bytes and flags, this moment's ACK and
  window. loop.py names the point only where the answer is one segment, so
  the head is all that was lost.
"""

from __future__ import annotations

from tfolab.model.expiry import expired
from tfolab.model.flights import Flight
from tfolab.model.output import transmit
from tfolab.model.sock import TcpSock
from tfolab.model.wire import Wire


def dropped_by_peer(sock: TcpSock, wire: Wire) -> None:
    """The peer dropped `wire`, a flight of this socket's: its timer will fire for it.
    A second dropped flight leaves the domain: after the timeout the rest would go from
    a congestion window of one (tcp_enter_loss), which the model does not follow."""
    if sock.dropped:
        sock.env.beyond_domain.append(
            f"the client dropped the {sock.side}'s {wire.what} in SYN_SENT too, a second "
            "segment of the answer sent before the handshake ended "
            "(tcp_rcv_synsent_state_process): after the retransmission timer the rest "
            "leaves from a congestion window of one (tcp_enter_loss), which the model "
            "does not follow yet; it follows an answer of one segment"
        )
        return
    sock.dropped[wire.seq] = wire
    for flight in sock.flights:
        if flight.seq == wire.seq:
            flight.dropped = True


def rearm_after_synack(sock: TcpSock, now: int, caused_by: int) -> None:
    """tcp_rcv_synrecv_state_fastopen -> tcp_rearm_rto: drawn where a dropped flight waits."""
    if not any(f.dropped for f in sock.flights):
        return
    env = sock.env
    rto = sock.rto_jiffies()  # the first sample's: m + max(2m, 200 ms)
    expires = sock.jiffies(now) + rto
    fire_ns, width = sock.wheel_timer(now, expires)  # past 63 ticks, a wider bucket
    armed = sock.timer(
        now,
        fire_ns,
        name="rto",
        action="armed",
        explanation=(
            f"retransmission timer re-armed with the RTO this ACK's RTT sample sets, "
            f"{env.clock.jiffies_to_ms(rto):g} ms (tcp_synack_rtt_meas, "
            f"tcp_rcv_synrecv_state_fastopen -> tcp_rearm_rto): the answer is still "
            f"unacknowledged (fires in "
            f"{(fire_ns - now) / 1e6:.1f} ms, at the end of a {width}-tick bucket of the "
            f"timer wheel)"
        ),
        cause="ACK of the SYN-ACK arrived",
        caused_by=caused_by,
        spread_ticks=width,
    )
    env.call_at(fire_ns, lambda t: _fire(sock, t, armed, width))


def _fire(sock: TcpSock, now: int, armed: int, width: int) -> None:
    """tcp_retransmit_timer: the head of the retransmit queue again, if still unacknowledged.
    Its bucket's real edges are unknown: the expiry spreads over the bucket's `width`."""
    head = sock.flights[0] if sock.flights else None
    if head is None or not head.dropped:
        return
    fired = expired(
        sock,
        now,
        "retransmission timer fired: the answer was never acknowledged",
        armed,
        spread_ticks=width,
    )
    lost = sock.dropped.pop(head.seq)
    event_id = transmit(
        sock,
        now,
        flags=lost.flags,
        seq=lost.seq,
        payload=lost.payload,
        what=f"{lost.what} again",
        explanation=(
            f"{lost.what} ({len(lost.payload)} B) sent again by the retransmission timer "
            "(tcp_retransmit_timer -> tcp_retransmit_skb): the client, still in SYN_SENT "
            "when it arrived, had dropped it"
        ),
        cause="the retransmission timer fired",
        caused_by=fired,
    )
    sock.flights[0] = Flight(head.seq, head.end, now, True, event_id)

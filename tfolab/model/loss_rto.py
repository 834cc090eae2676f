"""The retransmission timeout after a lost tail-loss probe, and its backoff.

Rules (Linux 6.1 and 6.18 alike: tcp_output.c tcp_send_loss_probe and
tcp_rearm_rto, tcp_timer.c tcp_retransmit_timer, tcp_input.c tcp_enter_loss,
tcp_timeout_mark_lost, tcp_mark_skb_lost, tcp_ack_update_rtt):
- tcp_send_loss_probe ends with icsk_pending = 0 and tcp_rearm_rto, so the RTO
  runs a whole icsk_rto from the probe's tick, not from the lost segment's
  departure; a lost probe waits it out.
- When it fires, tcp_retransmit_timer counts TCPTimeouts and, in
  tcp_write_timeout, TcpTimeoutRehash (sk_rethink_txhash); no failure counter
  on the first expiry (the probe left the socket in the Open state). Then
  tcp_enter_loss cuts ssthresh to CUBIC's max(cwnd x 717/1024, 2) (once per
  episode: not again while in Loss with a retransmission out), sets cwnd to
  the packets in flight + 1 (1: the head is marked lost), and forgets the
  probe (tlp_high_seq = 0). tcp_retransmit_skb sends the head again: the same
  bytes and flags, this moment's ACK and window, marked a retransmission.
  icsk_rto then doubles (icsk_backoff) and the timer runs again from this tick.
- A lost retransmission waits out the doubled RTO. That expiry finds the head
  marked lost and retransmitted (tcp_timeout_mark_lost -> tcp_mark_skb_lost):
  TCPLostRetransmit, and the head goes again.
- The ACK of a retransmitted segment gives no sample from its send time
  (Karn's rule: FLAG_RETRANS_DATA_ACKED) but one from its TSecr, in whole
  milliseconds (receive.py); the sample sets the RTO again without backoff
  (tcp_set_rto, icsk_backoff = 0). tcp_process_loss then ends the episode
  without an undo (the TSecr echoes the retransmission itself, so
  tcp_packet_delayed is false), and slow start grows cwnd from 1 (receive.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from tfolab.model import expiry, rtt_estimator
from tfolab.model.flights import LostTail, Resend
from tfolab.model.sock import TcpSock

NS_PER_US = 1000
US_PER_SECOND = 1_000_000
TCP_RTO_MAX_S = 120
CUBIC_BETA = 717  # tcp_cubic.c beta, over BICTCP_BETA_SCALE 1024
BICTCP_BETA_SCALE = 1024
# output.transmit, handed in by output.py (which calls loss_probe as it sends)
Transmit = Callable[..., int]


def cubic_ssthresh(cwnd: int) -> int:
    """tcp_cubic.c cubictcp_recalc_ssthresh: cwnd x 717/1024, at least 2."""
    return max(cwnd * CUBIC_BETA // BICTCP_BETA_SCALE, 2)


def rto_jiffies(sock: TcpSock, shift_us: int) -> int:
    """icsk_rto without backoff, the RTT samples each `shift_us` longer than the
    model's: __tcp_set_rto's srtt + rttvar, rounded up to jiffies."""
    rtt = rtt_estimator.estimate(sock.rtt_history, shift_us)
    assert rtt is not None
    per_jiffy = US_PER_SECOND // sock.env.clock.hz  # usecs_to_jiffies: HZ 250 divides 10^6
    return -(-rtt.rto_us // per_jiffy)


def backed_off(sock: TcpSock, rto: int) -> int:
    """icsk_rto after sock.rto_backoff doublings, at most TCP_RTO_MAX."""
    return min(rto << sock.rto_backoff, TCP_RTO_MAX_S * sock.env.clock.hz)


def armed(sock: TcpSock, now: int, tail: LostTail, transmit: Transmit, *, grid: int) -> None:
    """The probe or a retransmission of `tail` was lost too: the RTO from this tick,
    the tick a timer fired on from a bucket `grid` ticks wide (whose edges the real
    jiffies decide: a bucket no wider sits on its grid, a wider one spreads)."""
    low = backed_off(sock, rto_jiffies(sock, 0))
    high = backed_off(sock, rto_jiffies(sock, sock.env.rtt_excess_ns // NS_PER_US))
    fire_ns, width = sock.wheel_timer(now, sock.jiffies(now) + low)
    spread = width if width > grid else 1 + (high - low)
    sock.lost_tail = tail
    sock.env.call_at(fire_ns, lambda t: _fire(sock, t, tail, low, high, spread, width, transmit))


def _fire(
    sock: TcpSock,
    now: int,
    tail: LostTail,
    low: int,
    high: int,
    spread: int,
    width: int,
    transmit: Transmit,
) -> None:
    """tcp_retransmit_timer: the head again, if it is still the one in flight."""
    if sock.lost_tail is not tail or [f.seq for f in sock.flights] != [tail.seq]:
        return
    clock = sock.env.clock
    again = sock.rto_backoff > 0
    either = (
        ""
        if high == low
        else f" (or {clock.jiffies_to_ms(high):g} ms: the kernel's RTT samples are the round "
        "trip plus microseconds of host time, which decide the rounding)"
    )
    base = "the RTO" if not again else f"the RTO doubled {sock.rto_backoff} time(s) (icsk_backoff)"
    fired = expiry.expired(
        sock,
        now,
        (
            f"retransmission timer fired: {tail.what} unacknowledged {clock.jiffies_to_ms(low):g} "
            f"ms{either} after the last time it left, {base}: srtt + rttvar from "
            "tcp_rtt_estimator, rounded up to ticks (tcp_send_loss_probe -> tcp_rearm_rto "
            "restarted it from the probe; tcp_retransmit_timer, 6.1 and 6.18)"
        ),
        tail.event_id,
        spread_ticks=spread,
    )
    if again:
        sock.count("TCPLostRetransmit")  # tcp_mark_skb_lost: lost, and retransmitted
    else:
        sock.snd_ssthresh = cubic_ssthresh(sock.snd_cwnd)  # tcp_enter_loss, once an episode
    sock.snd_cwnd = 1  # tcp_packets_in_flight (0: the head is lost) + 1
    sock.tlp_high_seq = None
    sock.lost_tail = None
    sock.rto_backoff += 1  # after tcp_retransmit_skb in the kernel; read only if it is lost
    event_id = resend(
        sock,
        now,
        Resend(tail, width),
        transmit,
        how=(
            "by the retransmission timer (tcp_retransmit_timer -> tcp_enter_loss: cwnd 1, "
            f"ssthresh {sock.snd_ssthresh}; tcp_retransmit_skb): the same bytes, this "
            "moment's ACK and window"
        ),
        cause="the retransmission timer fired",
        caused_by=fired,
    )
    sock.total_retrans += 1
    sock.flights[0] = replace(sock.flights[0], sent_ns=now, event_id=event_id, retransmitted=True)


def resend(
    sock: TcpSock,
    now: int,
    resent: Resend,
    transmit: Transmit,
    *,
    how: str,
    cause: str,
    caused_by: int,
) -> int:
    """`resent.tail` on the wire again (the probe's or the RTO's), the socket marked as
    resending it while it leaves, so that a loss of this copy arms the RTO (armed);
    `how` ends the explanation. Returns the segment's event id."""
    tail = resent.tail
    size = f" ({len(tail.payload)} B)" if tail.payload else ""
    sock.resending = sock.last_resend = resent
    try:
        return transmit(
            sock,
            now,
            flags=tail.flags,
            seq=tail.seq,
            payload=tail.payload,
            what=f"{tail.what} again",
            explanation=f"{tail.what}{size} sent again {how}",
            cause=cause,
            caused_by=caused_by,
        )
    finally:
        sock.resending = None

"""The tail-loss probe: a lone segment the path lost, sent again before any RTO.

Rules (Linux 6.1 and 6.18, identical here; tcp_output.c tcp_schedule_loss_probe
and tcp_send_loss_probe, tcp_input.c tcp_process_tlp_ack):
- tcp_write_xmit arms the probe timer after it sends new data or a FIN:
  twice srtt, plus tcp_rto_min (200 ms) with one segment out, rounded up to
  jiffies (usecs_to_jiffies), and never later than the RTO from the head's
  send time (tcp_rto_delta_us: icsk_rto itself, the head just sent). The RTO
  is srtt + rttvar from every sample so far (rtt_estimator.py); after one
  sample m it is m + max(2m, 200 ms), so up to m = 200 ms the probe comes at
  the RTO's own jiffy, later at 2m + 200 ms. The kernel's samples are the
  model's round trips plus microseconds of host time; where those could move
  either figure across a jiffy, the probe may come a tick later (its spread
  says so). tcp_schedule_loss_probe asks nothing of the state: a FIN alone in
  flight (FIN_WAIT1, LAST_ACK) is probed as data is.
- When it fires with nothing unsent, tcp_send_loss_probe sends the last
  segment again (__tcp_retransmit_skb): the same bytes and flags, this
  moment's ACK and window, TCPLossProbes counted, tlp_high_seq = snd_nxt. It
  is not marked a retransmission (no TCPCB_RETRANS), so its ACK samples the
  RTT from the probe's own send time.
- The ACK exactly at tlp_high_seq that advances snd_una (the probe's) matches
  no branch of tcp_process_tlp_ack; a pure duplicate ACK there ends the
  episode (no loss); the first ACK beyond it counts TCPLossProbeRecovery and
  cuts the window once: tcp_init_cwnd_reduction (CUBIC's ssthresh, cwnd x
  717/1024, at least 2), tcp_end_cwnd_reduction (cwnd = ssthresh).
- The model follows a probe where the lost segment carried data or was a FIN
  alone, acknowledged nothing its peer still waited for (else the peer's own
  probe races it), went out with nothing else in flight, on a connection that has
  retransmitted nothing, and the socket sent no other data or FIN before the
  probe. A probe the path loses too waits out the RTO (loss_rto.py). A second
  segment, a probe of new data, a lost pure ACK: refused, each with its
  reason (ack_loss.py takes the pure ACKs it can).
"""

from __future__ import annotations

from dataclasses import replace

from tfolab.model import loss_rto, rtt_estimator
from tfolab.model.flights import LostTail, Resend
from tfolab.model.loss_rto import Transmit, cubic_ssthresh
from tfolab.model.path import LossNotFollowed
from tfolab.model.rtt_estimator import RTO_MIN_US
from tfolab.model.sock import TcpSock
from tfolab.model.state import TcpState

NS_PER_US = 1000
US_PER_SECOND = 1_000_000
SENDING_STATES = (TcpState.ESTABLISHED, TcpState.CLOSE_WAIT)
FIN_STATES = (TcpState.FIN_WAIT1, TcpState.LAST_ACK)  # where tcp_send_fin leaves a socket


def probe_jiffies(sock: TcpSock, shift_us: int) -> int:
    """tcp_schedule_loss_probe's timeout with one segment out, the RTT samples each
    `shift_us` longer than the model's: min(usecs_to_jiffies(2 srtt + rto_min), icsk_rto)."""
    rtt = rtt_estimator.estimate(sock.rtt_history, shift_us)
    assert rtt is not None
    per_jiffy = US_PER_SECOND // sock.env.clock.hz  # usecs_to_jiffies: HZ 250 divides 10^6
    probe = -(-((rtt.srtt_x8 >> 2) + RTO_MIN_US) // per_jiffy)
    return min(probe, loss_rto.rto_jiffies(sock, shift_us))


def refusal(
    sock: TcpSock, flags: tuple[str, ...], payload: bytes, *, first_ack: bool = False
) -> str | None:
    """Why the model cannot follow the loss of this segment (not a SYN) with a probe;
    None if it can. `first_ack`: the segment acknowledged more than this side's earlier
    segments had."""
    who = f"the {sock.side}'s"
    if not payload and "FIN" not in flags:
        return (
            "a lost pure ACK: the peer's timers for what it acknowledged, and the later "
            "segment that acknowledges it again"
        )
    if payload and "FIN" in flags:
        return "data with a FIN"
    if sock.state not in (FIN_STATES if "FIN" in flags else SENDING_STATES):
        return f"{who} {'FIN' if 'FIN' in flags else 'data'} sent in {sock.state.name}"
    if sock.lost_tail is not None:
        return f"a second segment lost while {who} first waits for its probe"
    peer = sock.peer
    if first_ack and peer is not None and any(f.end <= sock.rcv_nxt for f in peer.flights):
        return (
            f"it carried the first ACK of what the {peer.side} sent last, so the "
            f"{peer.side}'s own probe races this one's (a FIN or data sent twice, "
            "answered with a D-SACK)"
        )
    if sock.resending:
        return None  # the probe or the RTO's retransmission of the one lost: loss_rto.py
    if sock.flights:
        return (
            f"{who} segment lost with {len(sock.flights)} other(s) in flight: RACK "
            "(tcp_rack_mark_lost) and the probe of a flight"
        )
    if sock.total_retrans:
        return (
            f"{who} segment lost after a retransmission: the RTO's backoff and Karn's rule "
            "(no sample from a retransmitted segment)"
        )
    return None


def lost(sock: TcpSock, now: int, tail: LostTail, transmit: Transmit) -> None:
    """The path lost `tail`, sent alone: the probe timer, as tcp_write_xmit arms it;
    where it was the probe or a retransmission, the RTO (loss_rto.py)."""
    if sock.resending:
        loss_rto.armed(sock, now, tail, transmit, grid=sock.resending.width)
        return
    low = probe_jiffies(sock, 0)  # each sample a microsecond over the model's (sock.py)
    high = probe_jiffies(sock, sock.env.rtt_excess_ns // NS_PER_US)
    expires = sock.jiffies(now) + low
    fire_ns, width = sock.wheel_timer(now, expires)
    spread = width if width > 1 else 1 + (high - low)
    sock.lost_tail = tail
    sock.env.call_at(fire_ns, lambda t: _fire(sock, t, low, high, spread, width, transmit))


def sent_meanwhile(sock: TcpSock, flags: tuple[str, ...], payload: bytes) -> None:
    """Another segment with data or a FIN leaves while the lost one waits: refused."""
    if sock.lost_tail is None or not (payload or "FIN" in flags):
        return
    what = "its FIN" if "FIN" in flags and not payload else "more data"
    raise LossNotFollowed(
        f"the path lost the {sock.side}'s {sock.lost_tail.what}, and {what} left before its "
        "tail-loss probe: the probe of a flight of two (2 srtt + 2 ms) and RACK are not "
        "modelled yet"
    )


def _fire(
    sock: TcpSock, now: int, low: int, high: int, spread: int, width: int, transmit: Transmit
) -> None:
    """tcp_send_loss_probe: the last segment again, if it is still the one in flight."""
    tail = sock.lost_tail
    if tail is None or [f.seq for f in sock.flights] != [tail.seq]:
        return
    if sock.unsent:
        raise LossNotFollowed(
            f"the path lost the {sock.side}'s {tail.what}, and its tail-loss probe would "
            "carry new data (tcp_send_loss_probe sends the unsent head first, past Nagle "
            "and the window): not modelled yet"
        )
    clock = sock.env.clock
    either = (
        ""
        if high == low
        else f" (or {clock.jiffies_to_ms(high):g} ms: the kernel's RTT sample is the round "
        "trip plus microseconds of host time, which decide the rounding)"
    )
    fired = sock.timer(
        now,
        now,
        name="tlp",
        action="fired",
        explanation=(
            f"tail-loss probe timer fired: {tail.what} unacknowledged "
            f"{clock.jiffies_to_ms(low):g} ms{either} after it left (tcp_schedule_loss_probe: "
            "2 srtt + 200 ms with one segment out, no later than the RTO, srtt + rttvar from "
            "tcp_rtt_estimator; rounded up to ticks)"
        ),
        cause="the timer expired",
        caused_by=tail.event_id,
        spread_ticks=spread,
    )
    sock.lost_tail = None
    event_id = loss_rto.resend(
        sock,
        now,
        Resend(tail, width),
        transmit,
        how=(
            "as the tail-loss probe (tcp_send_loss_probe -> __tcp_retransmit_skb): nothing "
            "unsent, so the last segment; the same bytes, this moment's ACK and window"
        ),
        cause="the tail-loss probe timer fired",
        caused_by=fired,
    )
    sock.count("TCPLossProbes")
    # no TCPCB_RETRANS: its ACK samples the RTT from now (tcp_clean_rtx_queue)
    sock.flights[0] = replace(sock.flights[0], sent_ns=now, event_id=event_id)
    sock.tlp_high_seq = sock.snd_nxt


def ack_arrived(sock: TcpSock, ack: int, *, advanced: bool, not_dup: bool) -> None:
    """tcp_process_tlp_ack, for a probe that sent the last segment again (tlp_retrans)."""
    high = sock.tlp_high_seq
    if high is None or ack < high:
        return
    if ack > high:
        # a loss the probe repaired: tcp_init_cwnd_reduction, CWR, tcp_end_cwnd_reduction
        sock.count("TCPLossProbeRecovery")
        sock.snd_ssthresh = cubic_ssthresh(sock.snd_cwnd)
        sock.snd_cwnd = sock.snd_ssthresh
        sock.tlp_high_seq = None
    elif not (advanced or not_dup):
        sock.tlp_high_seq = None  # a pure duplicate ACK: original and probe both arrived

"""The client's SYN retransmission timer: a SYN the path lost is sent again.

Rules (Linux 6.1 and 6.18; tcp_output.c tcp_connect, tcp_timer.c
tcp_retransmit_timer, tcp_output.c tcp_retransmit_skb):
- tcp_connect arms the retransmission timer with TCP_TIMEOUT_INIT (1 s) as the
  SYN leaves. When it fires in SYN_SENT, tcp_retransmit_skb sends the SYN
  again: the same sequence number and options (a new timestamp), counted in
  TCPTimeouts and TCPSynRetrans; from the second timeout on, TCPLostRetransmit
  as well (tcp_enter_loss -> tcp_timeout_mark_lost -> tcp_mark_skb_lost: the
  head was marked lost and retransmitted already).
- A Fast Open SYN (with data, a cookie or a cookie request) is sent again bare:
  tcp_send_syn_data left the data in its own skb behind the SYN and set
  fo->cookie.len = -1 ("Exclude Fast Open option for SYN retries"). Its third
  timeout counts TCPFastOpenActiveFail (tcp_fastopen_active_detect_blackhole).
- The next timeout: 6.1 doubles it (icsk_rto << 1: 1, 2, 4 s, ...). From 6.5
  it stays TCP_TIMEOUT_INIT while tp->total_rto (the timeouts so far) is at
  most tcp_syn_linear_timeouts (a namespace sysctl, 4 by default), then
  doubles: 1, 1, 1, 1, 1, 2, 4 s ("tcp: make the first N SYN RTO backoffs
  linear"; measured on 6.18: two SYNs lost, connect() 2.05 s at D = 13 ms).
- It is a timer-wheel timer: 1 s is 250 jiffies at HZ 250, on level 1, whose
  buckets are 8 ticks wide (kernel/time/timer.c calc_index), so it fires at the
  end of a bucket that the jiffies counter's real value decides. The first
  one's bucket is unknown to the model (Timer.spread_ticks = the bucket's
  width); one armed as the previous one fired sits on that bucket's grid, and
  spreads only where its own buckets are wider.
- The first timer's bucket and the SYN-ACK's arrival race where the round
  trip is near 1 s (D near 500 ms): which comes first, the bucket's real edges
  decide (clock.py, a named race). A SYN-ACK that arrives after a
  retransmission is the answer to whichever SYN the server saw first (its
  TSecr echoes it; handshake.receive_synack).
"""

from __future__ import annotations

from tfolab.model import expiry
from tfolab.model.output import transmit
from tfolab.model.sock import TcpSock
from tfolab.model.state import TcpState

TCP_TIMEOUT_INIT_MS = 1000


def arm(sock: TcpSock, now: int, syn_event: int) -> None:
    """tcp_connect: the retransmission timer, TCP_TIMEOUT_INIT after the SYN leaves."""
    _arm(sock, now, TCP_TIMEOUT_INIT_MS, syn_event, timeouts=0, grid=1)


def _arm(sock: TcpSock, now: int, rto_ms: int, syn_event: int, *, timeouts: int, grid: int) -> None:
    expires = sock.jiffies(now) + sock.env.clock.ms_to_jiffies(rto_ms)
    fire_ns, width = sock.wheel_timer(now, expires)
    # where a capture measured this retransmission leave later after its tick
    fire_ns += sock.env.syn_timers_late.get((sock.connection, timeouts), 0)
    spread = 1 if width <= grid else width
    sock.env.call_at(
        fire_ns,
        lambda t: _fire(sock, t, rto_ms, syn_event, timeouts=timeouts, width=width, spread=spread),
    )


def _fire(
    sock: TcpSock, now: int, rto_ms: int, syn_event: int, *, timeouts: int, width: int, spread: int
) -> None:
    """tcp_retransmit_timer in SYN_SENT: the SYN again, and the timer re-armed."""
    if sock.state is not TcpState.SYN_SENT:
        return
    fired = expiry.expired(
        sock,
        now,
        f"SYN retransmission timer fired: no SYN-ACK {rto_ms / 1000:g} s after the SYN "
        f"(tcp_retransmit_timer; TCP_TIMEOUT_INIT{_backoff_words(timeouts)}); it fires "
        f"at the end of a {width}-tick bucket of the timer wheel",
        syn_event,
        spread_ticks=spread,
        name="syn",
    )
    plan = sock.syn_plan
    if timeouts == 2 and (sock.syn_data or (plan is not None and plan.tfo_attempted)):
        # tcp_write_timeout -> tcp_fastopen_active_detect_blackhole: the third timeout of a
        # SYN that tried Fast Open (blackhole detection off by default: nothing disabled)
        sock.count("TCPFastOpenActiveFail")
    if timeouts:
        # tcp_enter_loss -> tcp_timeout_mark_lost: the SYN, marked lost at the first
        # timeout and retransmitted since, is lost again (tcp_mark_skb_lost)
        sock.count("TCPLostRetransmit")
    sock.count("TCPSynRetrans")  # tcp_retransmit_skb of a SYN
    timeouts += 1
    event_id = transmit(
        sock,
        now,
        flags=("SYN",),
        seq=0,
        what="SYN again",
        explanation=(
            f"the SYN sent again (retransmission {timeouts}, tcp_retransmit_skb): the same "
            f"sequence number{_bare_words(sock)}, a new timestamp"
        ),
        cause="the SYN retransmission timer fired",
        caused_by=fired,
        mss_option=sock.advmss,
    )
    sock.flights[0].retransmitted = True  # Karn: the SYN-ACK's sample comes from TSecr
    sock.total_retrans += 1
    _arm(sock, now, _next_rto_ms(sock, rto_ms, timeouts), event_id, timeouts=timeouts, grid=width)


def _next_rto_ms(sock: TcpSock, rto_ms: int, timeouts: int) -> int:
    """The timeout after `timeouts` timeouts: kept while linear (6.5+), else doubled."""
    if timeouts <= sock.env.rmem.syn_linear_timeouts:
        return rto_ms
    return min(rto_ms * 2, 120_000)  # TCP_RTO_MAX


def _bare_words(sock: TcpSock) -> str:
    """What a Fast Open SYN sent again leaves behind (tcp_send_syn_data)."""
    plan = sock.syn_plan
    left = [
        what
        for what, present in (
            ("its data", bool(sock.syn_data)),
            ("its Fast Open option", plan is not None and plan.cookie is not None),
        )
        if present
    ]
    if not left:
        return " and options"
    return (
        f" and the other options, without {' and '.join(left)} (tcp_send_syn_data: "
        "fo->cookie.len = -1, the data in its own skb behind the SYN)"
    )


def _backoff_words(timeouts: int) -> str:
    return "" if timeouts == 0 else f", after {timeouts} timeout(s)"

"""The server's SYN-ACK timer, and a retransmitted SYN in SYN_RECV: the SYN-ACK sent again.

Rules (Linux 6.1 and 6.18; tcp_input.c tcp_conn_request, inet_connection_sock.c
reqsk_timer_handler, tcp_minisocks.c tcp_check_req; request_sock.py keeps the
numbers):
- tcp_conn_request arms the request's timer with TCP_TIMEOUT_INIT (1 s) as the
  SYN-ACK leaves (inet_csk_reqsk_queue_hash_add). Each expiry counts
  TCPTimeouts (tcp_syn_ack_timeout), sends the SYN-ACK again (6.1
  inet_rtx_syn_ack, 6.18 tcp_rtx_synack: TCPSynRetrans) and re-arms it for
  TCP_TIMEOUT_INIT << num_timeout: 1, 2, 4 s... Neither kernel has a linear
  start for SYN-ACKs. After tcp_synack_retries (5) expiries the request goes.
- A pure SYN with the client's ISN reaching the request (the client's SYN
  timer fired first) gets the SYN-ACK at once, unless one went out that way
  less than tcp_invalid_ratelimit (500 ms) ago (tcp_oow_rate_limited on the
  request's own last_oow_ack_time: TCPACKSkippedSynRecv). It is a
  retransmission (TCPSynRetrans), not a timeout, and it pushes the pending
  timer to now + (TCP_TIMEOUT_INIT << num_timeout) (mod_timer_pending).
- The resent SYN-ACK has the same ISN and options and a new TSval; its TSecr
  still echoes the SYN that created the request (a retransmitted SYN does not
  update ts_recent).
- Which comes first at the server, its timer or the client's retransmitted SYN,
  the timer wheel decides: both are level-1 timers (1 s is 250 ticks at HZ
  250, buckets of 8) armed about D apart, and the buckets' edges sit where the
  jiffies counter's real value puts them (clock.py, Env.wheel_offsets). An
  arrival inside a timer's bucket is a named race (Env.wheel_races).
- The request's timer is level-1 or higher: its first expiry, or one armed by
  a SYN's arrival, spreads over its bucket (Timer.spread_ticks); one re-armed as
  the previous fired sits on that bucket's grid.
- A Fast Open child's SYN-ACK timer is the child's own retransmission timer
  (tcp_fastopen_create_child arms it with req->timeout, TCP_TIMEOUT_INIT;
  tcp_retransmit_timer hands it to tcp_fastopen_synack_timer while fastopen_rsk
  is set, and tcp_rearm_rto leaves it alone meanwhile, so the answer the child
  sent is not what it resends). Each expiry counts TCPTimeouts, sends the SYN-ACK
  again (tcp_rtx_synack: TCPSynRetrans, and total_retrans for a passive Fast
  Open socket) and re-arms for req->timeout << num_timeout, as the request's.
  The second expiry would first run tcp_enter_loss (icsk_retransmits == 1): not
  modelled, refused where it happens. A retransmitted SYN reaching the child
  (tcp_rcv_state_process -> tcp_check_req with fastopen) gets the SYN-ACK at
  once under the same rate limit, but only req->rsk_timer.expires moves: the
  child's timer keeps its expiry.
"""

from __future__ import annotations

from tfolab.model import expiry
from tfolab.model.output import transmit
from tfolab.model.request_sock import Request
from tfolab.model.sock import TCP_INVALID_RATELIMIT_MS, TcpSock
from tfolab.model.state import TcpState
from tfolab.model.wire import Wire

TCP_TIMEOUT_INIT_MS = 1000
TCP_RTO_MAX_MS = 120_000
TCP_SYNACK_RETRIES = 5  # net.ipv4.tcp_synack_retries's default


def arm(sock: TcpSock, now: int, synack_event: int, *, window: int, fastopen: bool) -> None:
    """tcp_conn_request (or tcp_fastopen_create_child for a Fast Open child): the
    SYN-ACK's timer, TCP_TIMEOUT_INIT after it leaves; `window` is its window field."""
    sock.request = Request(first_synack_ns=now, window=window, fastopen=fastopen)
    _arm(sock, now, synack_event, grid=1)


def _timeout_ms(request: Request) -> int:
    """reqsk_timeout: TCP_TIMEOUT_INIT << num_timeout, at most TCP_RTO_MAX."""
    return min(TCP_TIMEOUT_INIT_MS << request.num_timeout, TCP_RTO_MAX_MS)


def _arm(sock: TcpSock, now: int, caused_by: int, *, grid: int) -> None:
    request = sock.request
    assert request is not None
    request.generation += 1
    generation = request.generation
    rto_ms = _timeout_ms(request)
    expires = sock.jiffies(now) + sock.env.clock.ms_to_jiffies(rto_ms)
    fire_ns, width = sock.wheel_timer(now, expires)
    spread = 1 if width <= grid else width
    sock.env.call_at(
        fire_ns,
        lambda t: _fire(sock, t, generation, rto_ms, caused_by, width=width, spread=spread),
    )


def _fire(
    sock: TcpSock,
    now: int,
    generation: int,
    rto_ms: int,
    caused_by: int,
    *,
    width: int,
    spread: int,
    deferred: bool = False,
) -> None:
    """reqsk_timer_handler (a Fast Open child's: tcp_fastopen_synack_timer): TCPTimeouts,
    the SYN-ACK again, the timer re-armed (doubled)."""
    request = sock.request
    if sock.state is not TcpState.SYN_RECV or request is None:
        return
    if generation != request.generation:
        return  # a retransmitted SYN pushed it (mod_timer_pending): another timer now
    env = sock.env
    if not deferred and env.timers_coalesce(sock.connection):
        # the timer softirq ran late, as late as the client's next segment: it runs
        # first there, and both that segment and the timer answer at once
        arrival = env.next_arrival(sock.connection, "client", now, now + round(env.clock.tick_ns))
        if arrival is not None:
            env.call_first_at(
                arrival,
                lambda t: _fire(
                    sock, t, generation, rto_ms, caused_by,
                    width=width, spread=spread, deferred=True,
                ),
            )  # fmt: skip
            return
    handler = (
        "the Fast Open child's retransmission timer: tcp_retransmit_timer -> "
        "tcp_fastopen_synack_timer"
        if request.fastopen
        else "reqsk_timer_handler"
    )
    fired = expiry.expired(
        sock,
        now,
        f"SYN-ACK timer fired: no ACK {rto_ms / 1000:g} s after the SYN-ACK "
        f"({handler}; TCP_TIMEOUT_INIT{_backoff_words(request.num_timeout)}); "
        f"it fires at the end of a {width}-tick bucket of the timer wheel",
        caused_by,
        spread_ticks=spread,
        name="synack",
    )
    if request.fastopen and request.num_timeout >= 1:
        sock.env.beyond_domain.append(
            "a Fast Open child's SYN-ACK timer expired a second time: "
            "tcp_fastopen_synack_timer then runs tcp_enter_loss on the answer it sent "
            "(icsk_retransmits == 1), which the model does not follow yet"
        )
        return
    if request.num_timeout >= TCP_SYNACK_RETRIES:
        sock.env.beyond_domain.append(
            f"the server's request expired after {TCP_SYNACK_RETRIES} SYN-ACK timeouts "
            "(tcp_synack_retries): the model does not follow what the client does next"
        )
        return
    event_id = _synack_again(
        sock,
        now,
        f"the SYN-ACK sent again by its timer (retransmission {request.num_retrans + 1}; "
        "6.1 inet_rtx_syn_ack, 6.18 tcp_rtx_synack): the same ISN and options, a new "
        "timestamp",
        cause="the SYN-ACK timer fired",
        caused_by=fired,
    )
    request.num_timeout += 1
    _arm(sock, now, event_id, grid=width)


def syn_again(sock: TcpSock, now: int, wire: Wire) -> None:
    """tcp_check_req: the client's SYN again, in SYN_RECV: the SYN-ACK at once unless
    rate-limited, and the request's timer pushed back (a Fast Open child's is not)."""
    request = sock.request
    assert request is not None
    sock.note_wheel_race(now)
    if sock.oow_rate_limited(now, request.last_oow_ack_jiffies):
        sock.count("TCPACKSkippedSynRecv")
        sock.note(
            now,
            "the retransmitted SYN gets no SYN-ACK: one answered a SYN less than "
            f"{TCP_INVALID_RATELIMIT_MS} ms ago (tcp_check_req -> tcp_oow_rate_limited)",
            wire.event_id,
            "SYN arrived again",
        )
        return
    request.last_oow_ack_jiffies = sock.jiffies(now)
    timer_words = (
        "the child's own retransmission timer keeps its expiry (with fastopen only "
        "req->rsk_timer.expires moves)"
        if request.fastopen
        else f"the request's timer is pushed back to {_timeout_ms(request) / 1000:g} s from now"
    )
    event_id = _synack_again(
        sock,
        now,
        "the SYN-ACK sent again at once: the client's SYN arrived again while the request "
        'waits for its ACK (tcp_check_req, "pure retransmitted SYN"; 6.1 '
        f"inet_rtx_syn_ack, 6.18 tcp_rtx_synack); a retransmission, not a timeout, and "
        f"{timer_words}",
        cause="the SYN arrived again",
        caused_by=wire.event_id,
    )
    if not request.fastopen:
        _arm(sock, now, event_id, grid=1)


def _synack_again(sock: TcpSock, now: int, explanation: str, *, cause: str, caused_by: int) -> int:
    request = sock.request
    assert request is not None
    sock.count("TCPSynRetrans")
    request.num_retrans += 1
    event_id = transmit(
        sock,
        now,
        flags=("SYN", "ACK"),
        seq=0,
        what="SYN-ACK again",
        explanation=explanation,
        cause=cause,
        caused_by=caused_by,
        mss_option=sock.advmss,
        syn_window=request.window,
    )
    if sock.flights and sock.flights[0].seq == 0:
        sock.flights[0].retransmitted = True  # Karn: the ACK's sample comes from TSecr
    return event_id


def _backoff_words(timeouts: int) -> str:
    return "" if timeouts == 0 else f" << {timeouts}"

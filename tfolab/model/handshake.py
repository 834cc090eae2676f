"""The three-way handshake and Fast Open, as functions over one socket (sock.py).

Rules (tcp_output.c tcp_connect / tcp_send_syn_data, tcp_input.c
tcp_rcv_synsent_state_process / tcp_rcv_fastopen_synack, tcp_fastopen.c):
- The client's SYN carries the options (MSS, SACK permitted, timestamps,
  window scale 7) and, with Fast Open, a cookie or a cookie request and
  possibly data (see fastopen.plan_client_syn). CLOSED -> SYN_SENT.
- The server answers with a SYN-ACK that never carries data; it acks the SYN
  data only when the listener accepted it (a Fast Open child socket, which the
  application can accept and answer at once, before the handshake ends).
  LISTEN -> SYN_RECV; the ACK of the SYN-ACK makes it ESTABLISHED and takes
  a Fast Open child off the listener's TFO queue (`ack_of_synack`).
- On the SYN-ACK the client caches a cookie, retransmits SYN data that was not
  acknowledged at once (the retransmission carries the ACK), and otherwise
  either ACKs at once or, when a blocking sendto()/write() still has data
  waiting for the connection (sk_write_pending), holds the ACK (quick-ACK
  mode, a 200 ms TCP_DELACK_MAX timer) so that the data about to be sent
  carries it. A request that fitted whole in the SYN leaves nothing waiting
  (tcp_send_syn_data clears fastopen_req->data), so its SYN-ACK is ACKed at
  once.
  SYN_SENT -> ESTABLISHED. A segment other than a SYN-ACK is ignored there.
- Both sides adopt the peer's MSS option if it is smaller than their own.
"""

from __future__ import annotations

from tfolab.model import delack_timer, syn_timer, synack_timer
from tfolab.model.clock import NS_PER_MS
from tfolab.model.delack import ACK_SCHED, ACK_TIMER
from tfolab.model.fastopen import CookieCache, FastOpenServer, SynDecision, SynPlan, client_learns
from tfolab.model.flights import Flight
from tfolab.model.output import retransmit_syn_data, send_ack, transmit
from tfolab.model.sock import TcpSock
from tfolab.model.state import TcpEvent
from tfolab.model.wire import Wire

# ------------------------------------------------------------ client


def connect(
    sock: TcpSock,
    now: int,
    plan: SynPlan,
    cache: CookieCache,
    *,
    write_pending: bool,
    caused_by: int | None,
) -> int:
    """tcp_connect / tcp_send_syn_data: send the SYN, with data from the queue if planned."""
    sock.move(TcpEvent.CONNECT)
    sock.syn_plan = plan
    sock.cookie_cache = cache
    sock.write_pending = write_pending
    data = bytes(sock.unsent[: plan.data_bytes])
    del sock.unsent[: plan.data_bytes]
    sock.syn_data = data
    sock.snd_nxt = 1 + len(data)
    what = f"SYN+data ({len(data)} B)" if data else "SYN"
    event_id = transmit(
        sock,
        now,
        flags=("SYN",),
        seq=0,
        payload=data,
        what="SYN+data" if data else "SYN",
        explanation=f"{what}: {plan.explanation}",
        cause="the client opens the connection",
        caused_by=caused_by,
        cookie=plan.cookie,
        mss_option=sock.advmss,
    )
    sock.flights.append(Flight(0, 1 + len(data), now, False, event_id, data=bool(data)))
    syn_timer.arm(sock, now, event_id)
    return event_id


def receive_synack(sock: TcpSock, now: int, wire: Wire) -> None:
    """tcp_rcv_synsent_state_process: a SYN-ACK arrives at the client in SYN_SENT."""
    if not (wire.syn and "ACK" in wire.flags) or wire.ack is None:
        return
    sock.timestamps_on()  # saw_tstamp: tp->advmss -= TCPOLEN_TSTAMP_ALIGNED, first
    if wire.mss_option is not None:
        sock.clamp_mss(wire.mss_option)
    sock.peer_window(wire.window)  # tp->max_window = snd_wnd, then tcp_sync_mss
    syn = sock.flights[0]
    sock.note_wheel_race(now)
    if not syn.retransmitted:
        sock.rtt_sample(now - syn.sent_ns)
    elif wire.echoes_ns is not None:
        sock.rtt_sample(tsecr_sample_ns(now, wire.echoes_ns))
    sock.flights = []
    sock.snd_una = wire.ack
    sock.rcv_nxt = wire.seq + 1
    sock.rcv_wup = sock.rcv_nxt
    sock.move(TcpEvent.RECV_SYNACK)
    sock.ts_recent_ns = wire.sent_ns
    sock.rspace.init_buffer_space()  # tcp_finish_connect -> tcp_init_transfer
    if sock.total_retrans > 1 and wire.echoes_ns != syn.sent_ns:
        _cwnd_of_one(sock, now, wire.event_id, "SYNs")
    sock.ack.lrcvtime = sock.jiffies(now)
    cause = "SYN-ACK arrived"
    plan = sock.syn_plan
    assert plan is not None and sock.cookie_cache is not None
    unacked = len(sock.syn_data) > 0 and wire.ack < 1 + len(sock.syn_data)
    learnt = client_learns(
        sock.cookie_cache,
        wire.cookie,
        len(sock.syn_data),
        plan,
        syn_resent=syn.retransmitted,
        syn_data_acked=not unacked,
    )
    if learnt:
        sock.note(now, learnt, wire.event_id, cause)
    if unacked:
        sock.count("TCPFastOpenActiveFail")
        cause = "the SYN-ACK acknowledged only the SYN"
        # the rest of the request is not queued yet: the sendto() or write() that the
        # SYN-ACK wakes copies it once its connect wait ends (tcp_sendmsg_locked after
        # tcp_sendmsg_fastopen), so tcp_data_snd_check here finds nothing more to send
        retransmit_syn_data(sock, now, sock.syn_data, cause=cause, caused_by=wire.event_id)
        return
    if sock.syn_data:
        sock.count("TCPFastOpenActive")
        sock.note(now, "the SYN-ACK acknowledges the SYN data: Fast Open worked", wire.event_id)
    if sock.write_pending:
        _hold_ack_for_pending_write(sock, now, wire, cause)
        return
    send_ack(
        sock,
        now,
        "the handshake's third segment: the client ACKs the SYN-ACK at once "
        "(tcp_rcv_synsent_state_process: no write is waiting for the connection)",
        cause,
        wire.event_id,
    )


def _hold_ack_for_pending_write(sock: TcpSock, now: int, wire: Wire, cause: str) -> None:
    """tcp_rcv_synsent_state_process with sk_write_pending: quick-ACK mode, a DELACK_MAX timer."""
    rules = sock.env.rules
    sock.ack.pending |= ACK_SCHED | ACK_TIMER
    rules.enter_quickack_mode(sock.ack, sock.rspace.rcv_wnd)
    expiry = sock.jiffies(now) + rules.delack_max
    sock.ack.timeout = expiry
    delack_timer.arm(
        sock,
        now,
        expiry,
        wire.event_id,
        cause,
        why=(
            "ACK held: a blocking sendto()/write() waits for this connection, "
            "so the data about to leave (or the reply) will carry the ACK"
        ),
    )


def tsecr_sample_ns(now: int, echoed_ns: int) -> int:
    """The RTT sample a retransmitted handshake segment's answer gives (Karn's rule
    leaves only its TSecr; tcp_ack_update_rtt, 6.1 tcp_time_stamp - rcv_tsecr, 6.18
    tcp_rtt_tsopt_us): from the echoed segment's departure, in whole milliseconds of
    the timestamp clock, at least 1. That clock's millisecond edges sit where the
    host's boot put them; the model counts from its own 0 (an error under 1 ms)."""
    return max(1, now // NS_PER_MS - echoed_ns // NS_PER_MS) * NS_PER_MS


def _cwnd_of_one(sock: TcpSock, now: int, caused_by: int, what: str) -> None:
    """tcp_init_transfer: more than one retransmission of the handshake's segment, and
    an answer that echoes one of the retransmissions (tcp_try_undo_spurious_syn keeps
    the undo marker): the first congestion window is 1 (6.1 and 6.18)."""
    sock.snd_cwnd = 1
    sock.note(
        now,
        f"{sock.side}'s first congestion window is 1 segment: {sock.total_retrans} "
        f"retransmitted {what}, and the answer echoes a retransmission, not the first "
        "(tcp_init_transfer after tcp_try_undo_spurious_syn)",
        caused_by,
        "the handshake ended",
    )


# ------------------------------------------------------------ server


def accept_syn(
    sock: TcpSock,
    now: int,
    wire: Wire,
    decision: SynDecision,
    fastopen_queue: FastOpenServer | None = None,
    *,
    lab_ends_first: bool = False,
) -> int:
    """tcp_conn_request: the listener's child answers the SYN with a SYN-ACK.

    `lab_ends_first`: a replayed SYN's connection, whose ACK never comes; the run stops
    capturing before a Fast Open child's SYN-ACK timer can fire (domain.py's replay
    limit; replay.py notes what follows), so the model arms none for it.

    `decision` is the listener's Fast Open verdict (fastopen.server_decide);
    `fastopen_queue` is the listener's queue a Fast Open child counts against.
    """
    sock.move(TcpEvent.RECV_SYN)
    sock.fastopen_queue = fastopen_queue
    if wire.mss_option is not None:
        sock.clamp_mss(wire.mss_option)
    sock.peer_window(wire.window)  # tp->max_window = snd_wnd, then tcp_sync_mss
    sock.rcv_nxt = wire.seq + 1
    sock.ts_recent_ns = wire.sent_ns  # the SYN's TSval, echoed by every SYN-ACK
    if decision.accept_data:
        sock.tfo_child = True
        # tcp_fastopen_create_child -> tcp_init_transfer: the clamp is set now, from the
        # advmss that has not yet lost the timestamps (6.1 and 6.18 alike)
        sock.rspace.init_buffer_space()
        sock.fastopen_child_mss(wire.window)
        sock.rcv_buf += wire.payload
        sock.rcv_nxt += len(wire.payload)
        if wire.payload:
            sock.rspace.charge(len(wire.payload))
    sock.snd_nxt = 1
    sock.ack.lrcvtime = sock.jiffies(now)
    acks = "the SYN and its data" if decision.accept_data and wire.payload else "the SYN"
    window = sock.rspace.header_window(syn=True)  # rsk_rcv_wnd, unscaled
    event_id = transmit(
        sock,
        now,
        flags=("SYN", "ACK"),
        seq=0,
        what="SYN-ACK",
        explanation=f"SYN-ACK acks {acks}: {decision.explanation}",
        cause="SYN arrived",
        caused_by=wire.event_id,
        cookie=decision.reply_cookie,
        mss_option=sock.advmss,
    )
    sock.flights.append(Flight(0, 1, now, False, event_id, data=False))
    if not (lab_ends_first and sock.tfo_child):
        synack_timer.arm(sock, now, event_id, window=window, fastopen=sock.tfo_child)
    return event_id


def ack_of_synack(sock: TcpSock, now: int, wire: Wire, *, sampled: bool) -> None:
    """The ACK of the SYN-ACK: ESTABLISHED; a Fast Open child leaves the TFO queue.

    tcp_rcv_state_process, TCP_SYN_RECV: the advmss loses the timestamps first, then
    a child that is not Fast Open's runs tcp_init_transfer, so its window_clamp keeps
    one MSS without them in reserve (65536 - 8948 at MTU 9000: the window 443 x 128
    that CI's 6.1 offers, not 442). That order is commit cd171461b90a ("tcp: fix
    initial tp->rcvq_space.space value for passive TS enabled flows", 6.16, taken
    into the stable kernels in June 2025, Debian's 6.1 among them); a kernel built
    before it ran tcp_init_transfer first and would offer 442. The model follows the
    fixed order for every release: the release number alone cannot tell them apart.
    """
    sock.move(TcpEvent.RECV_ACK_OF_SYN)
    sock.timestamps_on()
    request, sock.request = sock.request, None
    if request is not None:
        sock.note_wheel_race(now)
        if not sampled and wire.echoes_ns is not None:
            # tcp_synack_rtt_meas: no sample from snt_synack once a SYN-ACK was resent
            sock.rtt_sample(tsecr_sample_ns(now, wire.echoes_ns))
        # tcp_create_openreq_child; a Fast Open child counted its own (tcp_rtx_synack)
        sock.total_retrans = request.num_retrans
        undo_marker = request.num_timeout > 0 and wire.echoes_ns != request.first_synack_ns
        # a Fast Open child ran tcp_init_transfer when it was made, before any resend
        if sock.total_retrans > 1 and undo_marker and not request.fastopen:
            _cwnd_of_one(sock, now, wire.event_id, "SYN-ACKs")
    if not sock.tfo_child:
        sock.rspace.init_buffer_space()
    if sock.tfo_child and sock.fastopen_queue is not None:
        sock.fastopen_queue.pending -= 1

"""A segment arrives: the receive path of one socket, as functions over sock.py's record.

Rules (tcp_rcv_established / tcp_rcv_state_process, in this order):
- a segment carrying an earlier connection's numbers on this 4-tuple (a
  TIME_WAIT socket's ACK, replay.py) is refused; in SYN_RECV its ACK draws a
  RST (tcp_ack fails, tcp_v4_send_reset);
- in SYN_SENT only a SYN-ACK matters (handshake.receive_synack); TIME_WAIT
  answers as time_wait.py says; a socket in CLOSED or LISTEN ignores everything
  here (the listener's SYN goes to handshake.accept_syn); the client's SYN
  again reaches the request in SYN_RECV (synack_timer.syn_again), and any SYN
  after the handshake draws a challenge ACK (_syn_after_handshake);
- a segment that ends before rcv_wup (the handshake's ACK that the first data
  overtook at D = 0, loop.py) fails tcp_sequence in tcp_validate_incoming and is
  dropped; tcp_send_dupack answers it with an ACK unless tcp_oow_rate_limited
  holds it back (one such ACK per TCP_INVALID_RATELIMIT, 500 ms; 6.1 and 6.18);
- the ACK first: it frees acknowledged data (tcp_clean_rtx_queue), samples
  the RTT from a segment never retransmitted, drops the write marks it
  covers, settles a tail-loss probe (tcp_process_tlp_ack, loss_probe.py), and
  moves the state: the ACK of the SYN-ACK (SYN_RECV ->
  ESTABLISHED), or the ACK of our FIN (FIN_WAIT1 -> FIN_WAIT2, CLOSING ->
  TIME_WAIT, LAST_ACK -> CLOSED; the table is state.py's);
- then the data, in order (the link never reorders; anything else is a
  duplicate, ACKed at once): tcp_event_data_recv and tcp_measure_rcv_mss
  update the delayed-ACK state (delack.py);
- then the FIN (tcp_fin): into CLOSE_WAIT, which enters pingpong so the ACK
  may ride on the application's own FIN; in FIN_WAIT1 (into CLOSING) and
  FIN_WAIT2 (into TIME_WAIT) tcp_fin itself calls tcp_send_ack: that ACK is
  unconditional, no quick-ACK or delayed-ACK decision is involved;
- then data held by Nagle may leave, released by the new ACK
  (tcp_data_snd_check);
- last the ACK decision (tcp_ack_snd_check, delack_timer.py).
The application runs after all that, when the loop wakes its script.
"""

from __future__ import annotations

from tfolab.model import delack_timer, loss_probe, synack_timer, time_wait
from tfolab.model.delack import ACK_NOW, ACK_SCHED
from tfolab.model.flights import Flight
from tfolab.model.handshake import ack_of_synack, receive_synack, tsecr_sample_ns
from tfolab.model.output import push, send_ack
from tfolab.model.replay import reset_stale_ack
from tfolab.model.sock import TCP_INVALID_RATELIMIT_MS, TcpSock
from tfolab.model.state import TcpEvent, TcpState
from tfolab.model.wire import Wire


def receive_segment(sock: TcpSock, now: int, wire: Wire) -> None:
    """One segment from the peer reaches this socket at `now`."""
    if wire.stale:  # another connection's numbers (replay.py): refused, maybe reset
        if sock.state is TcpState.SYN_RECV and wire.ack is not None and "RST" not in wire.flags:
            reset_stale_ack(sock, now, wire)
        return
    if "RST" in wire.flags:
        if wire.seq == sock.rcv_nxt and sock.state is not TcpState.CLOSED:
            sock.move(TcpEvent.RECV_RST)
            sock.note(
                now,
                f"the RST sits exactly at rcv_nxt: tcp_reset closes the {sock.side}'s socket "
                "(its application's next call gets ECONNRESET)",
                wire.event_id,
                "RST arrived",
            )
        return
    if sock.state is TcpState.SYN_SENT:
        receive_synack(sock, now, wire)
        return
    if sock.state is TcpState.TIME_WAIT:
        time_wait.receive(sock, now, wire)
        return
    if sock.state in (TcpState.CLOSED, TcpState.LISTEN):
        return
    if wire.syn:
        _syn_after_handshake(sock, now, wire)
        return
    if sock.state is not TcpState.SYN_RECV and wire.seq + len(wire.payload) < sock.rcv_wup:
        _out_of_window(sock, now, wire)
        return
    window_before = sock.snd_wnd
    if wire.ack is not None:
        sock.peer_window(wire.window, wire.seq, wire.ack)  # tcp_ack_update_window
    acked_new = wire.ack is not None and wire.ack > sock.snd_una
    # tcp_data_snd_check runs for every ACK: a window update alone releases data too
    opened = sock.snd_wnd > window_before
    if acked_new:
        _process_ack(sock, now, wire)
    if wire.ack is not None:
        loss_probe.ack_arrived(
            sock,
            wire.ack,
            advanced=acked_new,
            not_dup=bool(wire.payload) or wire.fin or opened,  # FLAG_DATA, FLAG_WIN_UPDATE
        )
    if wire.payload:
        _queue_data(sock, now, wire)
    if wire.fin and wire.seq + len(wire.payload) == sock.rcv_nxt:
        _process_fin(sock, now, wire)
    if (acked_new or opened) and (sock.unsent or (sock.fin_requested and not sock.fin_sent)):
        why = f"ACK {wire.ack} arrived" if acked_new else f"the window opened to {sock.snd_wnd} B"
        push(sock, now, cause=f"released: {why}", caused_by=wire.event_id)
    if sock.ack.scheduled:
        delack_timer.ack_snd_check(sock, now, wire)
    if not sock.more_in_burst:
        sock.burst.close()


def _syn_after_handshake(sock: TcpSock, now: int, wire: Wire) -> None:
    """A SYN (the client's again) or a SYN-ACK (the server's again) after SYN_SENT.

    In SYN_RECV the client's SYN again goes to the request, a Fast Open child's too
    (tcp_rcv_state_process hands it to tcp_check_req;
    synack_timer.syn_again). Once the handshake is over, tcp_validate_incoming
    answers any SYN with a challenge ACK ("syn_challenge", 6.1 and 6.18:
    TCPSYNChallenge, then TCPChallengeACK), unless tcp_send_challenge_ack's
    per-socket rate limit holds it back (tcp_oow_rate_limited on the socket's
    last_oow_ack_time, shared with tcp_send_dupack: TCPACKSkippedChallenge; the
    per-netns limit, tcp_challenge_ack_limit, is INT_MAX by default)."""
    if sock.state is TcpState.SYN_RECV:
        if sock.request is None or "ACK" in wire.flags or wire.seq != 0:
            sock.env.beyond_domain.append(
                f"a {wire.what} reached the {sock.side}'s socket in SYN_RECV that is not "
                "the client's SYN again (tcp_check_req): not modelled yet"
            )
            return
        synack_timer.syn_again(sock, now, wire)
        return
    if sock.state is TcpState.CLOSED:
        sock.env.beyond_domain.append(
            f"a {wire.what} reached the {sock.side}'s socket in {sock.state.name} "
            "(tcp_timewait_state_process): not modelled yet"
        )
        return
    sock.count("TCPSYNChallenge")
    if sock.oow_rate_limited(now, sock.last_oow_ack_jiffies):
        sock.count("TCPACKSkippedChallenge")
        sock.note(
            now,
            f"the {wire.what} gets no challenge ACK: one left less than "
            f"{TCP_INVALID_RATELIMIT_MS} ms ago (tcp_send_challenge_ack -> "
            "tcp_oow_rate_limited)",
            wire.event_id,
            f"{wire.what} arrived after the handshake",
        )
        return
    sock.last_oow_ack_jiffies = sock.jiffies(now)
    sock.count("TCPChallengeACK")
    send_ack(
        sock,
        now,
        f"challenge ACK: a {wire.what} after the handshake is never taken "
        "(tcp_validate_incoming, syn_challenge -> tcp_send_challenge_ack); this ACK "
        "says where the connection stands (RFC 5961)",
        f"{wire.what} arrived after the handshake",
        wire.event_id,
    )


def _out_of_window(sock: TcpSock, now: int, wire: Wire) -> None:
    """tcp_validate_incoming: tcp_sequence refuses a segment that ends before rcv_wup
    (SKB_DROP_REASON_TCP_OLD_SEQUENCE on 6.18); tcp_send_dupack answers it with an ACK,
    unless tcp_oow_rate_limited holds that back (a segment without data, within
    sysctl_tcp_invalid_ratelimit of the last such answer)."""
    if sock.oow_rate_limited(now, sock.last_oow_ack_jiffies):
        return
    sock.last_oow_ack_jiffies = sock.jiffies(now)
    send_ack(
        sock,
        now,
        f"ACK at once: the segment ended at {wire.seq + len(wire.payload)}, before what "
        f"this side last acknowledged ({sock.rcv_wup}), so tcp_validate_incoming drops "
        "it as out of window and tcp_send_dupack answers it",
        "tcp_send_dupack",
        wire.event_id,
    )


def _rtt_sample(sock: TcpSock, now: int, wire: Wire, newly: list[Flight]) -> bool:
    """tcp_clean_rtx_queue and tcp_ack_update_rtt: a sample from the oldest segment newly
    acknowledged, unless one of them was sent again (Karn's rule, FLAG_RETRANS_DATA_ACKED):
    then from the TSecr, in whole milliseconds. Returns whether a sample was taken from
    the sequence (what tcp_synack_rtt_meas would have had)."""
    if not newly:
        return False
    if not any(f.retransmitted for f in newly):
        sock.rtt_sample(now - newly[0].sent_ns)
        return True
    if wire.echoes_ns is not None and sock.state is not TcpState.SYN_RECV:
        sock.rtt_sample(tsecr_sample_ns(now, wire.echoes_ns))  # ack_of_synack's own there
    return False


def _process_ack(sock: TcpSock, now: int, wire: Wire) -> None:
    assert wire.ack is not None
    newly = [f for f in sock.flights if f.end <= wire.ack]
    sock.flights = [f for f in sock.flights if f.end > wire.ack]
    sock.snd_una = wire.ack  # tcp_ack moves snd_una before tcp_clean_rtx_queue samples
    sampled = _rtt_sample(sock, now, wire, newly)
    sock.marks = [m for m in sock.marks if m.end > sock.snd_una]
    acked = sum(1 for f in newly if f.data)
    if acked and sock.snd_cwnd < 2 * sock.max_packets_out:
        if sock.snd_ssthresh is not None and sock.snd_cwnd + acked > sock.snd_ssthresh:
            sock.env.beyond_domain.append(
                f"the {sock.side}'s window grows past ssthresh {sock.snd_ssthresh} after a "
                "loss probe's cut (CUBIC's congestion avoidance): not modelled yet"
            )
        # tcp_cong_avoid -> tcp_slow_start: in slow start cwnd grows by every segment this
        # ACK delivered, while tcp_is_cwnd_limited holds (cwnd < 2 x max_packets_out)
        if sock.cwnd_grown_by is None:
            sock.cwnd_grown_by = sock.max_packets_out
        sock.snd_cwnd += acked
    if not sock.flights:
        sock.max_packets_out = 0  # tcp_cwnd_validate starts a new usage period
    if sock.state is TcpState.SYN_RECV:
        ack_of_synack(sock, now, wire, sampled=sampled)
    elif sock.fin_sent and sock.snd_una == sock.snd_nxt:
        sock.move(TcpEvent.RECV_ACK_OF_FIN)


def _queue_data(sock: TcpSock, now: int, wire: Wire) -> None:
    if wire.seq != sock.rcv_nxt:  # a duplicate: ACK it at once
        sock.ack.pending |= ACK_NOW
        return
    sock.rcv_buf += wire.payload
    sock.rcv_nxt += len(wire.payload)
    sock.burst.add(sock.rcv_nxt, sock.rspace.truesize(len(wire.payload)))
    rules = sock.env.rules
    rcv_mss_before = sock.ack.rcv_mss
    segment = wire.gso_size or len(wire.payload)  # tcp_measure_rcv_mss: gso_size ?: len
    # tcp_event_data_recv measures rcv_mss first, then grants quick ACKs by it
    rules.measure_rcv_mss(sock.ack, segment, wire.psh, sock.advmss)
    text = rules.event_data_recv(
        sock.ack, sock.jiffies(now), sock.rto_jiffies(), sock.rspace.rcv_wnd
    )
    if sock.peer is not None:
        sock.rspace.release_tail(sock.peer.snd_una)
    if sock.rspace.queue(
        len(wire.payload),
        rcv_mss_before,
        fresh=wire.fresh,
        measured=sock.ack.rcv_mss,
        end=sock.rcv_nxt,
        syn_data=wire.syn_data,
        segment=segment,
        frags=wire.frags,
    ):
        sock.ack.quick |= 1  # tcp_grow_window grew rcv_ssthresh
    sock.burst.woke_reader(sock.epollin_ready)
    if text:
        sock.note(now, f"{sock.side}: {text}", wire.event_id, "tcp_event_data_recv")


def _process_fin(sock: TcpSock, now: int, wire: Wire) -> None:
    """tcp_fin: the FIN takes one sequence number and schedules an ACK.

    In FIN_WAIT1 and FIN_WAIT2 tcp_fin sends the ACK itself (tcp_send_ack)
    before moving on (tcp_set_state(TCP_CLOSING) / tcp_time_wait): whatever
    the quick-ACK count or pingpong say, the peer's FIN is ACKed at once.
    """
    sock.rcv_nxt += 1
    sock.fin_received = True
    sock.ack.pending |= ACK_SCHED  # inet_csk_schedule_ack
    before = sock.state
    state = sock.move(TcpEvent.RECV_FIN)
    if state is TcpState.CLOSE_WAIT:
        sock.ack.pingpong = sock.env.rules.pingpong_thresh  # inet_csk_enter_pingpong_mode
        return
    if state in (TcpState.CLOSING, TcpState.TIME_WAIT):
        after = "CLOSING" if state is TcpState.CLOSING else "TIME_WAIT (tcp_time_wait)"
        send_ack(
            sock,
            now,
            f"ACK of the FIN at once: in {before.name} tcp_fin() sends it unconditionally "
            f"(tcp_send_ack), then the {sock.side} enters {after}",
            f"FIN (seq {wire.seq + len(wire.payload)}) arrived",
            wire.event_id,
        )
        sock.note(now, f"{sock.side} enters {state.name}", wire.event_id)

"""When a scheduled ACK leaves: at once, or held on the socket's delayed-ACK timer.

Rules (net/ipv4/tcp_input.c, tcp_output.c, tcp_timer.c; the decisions
themselves are delack.py's, this module applies them to one socket):
- `ack_snd_check` is __tcp_ack_snd_check, run after a segment's data and FIN
  are processed: the ACK goes at once when delack.ack_now says so; otherwise
  tcp_send_delayed_ack arms the timer (or keeps an earlier deadline), or
  sends now when a pending timer is about to expire.
- `arm` sets the timer on jiffies; it fires on a tick (clock.timer_fires_at).
  Re-arming for the instant it already fires at records nothing new. The
  loop is told the deadline (Env.call_at) and calls `fire` then; the timer
  armed later or cancelled since (an ACK left: output._ack_sent) makes that
  call a no-op.
- `fire` is tcp_delack_timer_handler: it sends the ACK if one is still
  scheduled, and leaves pingpong or doubles ato (delack.timer_fired); each
  ACK it sends counts TcpExt DelayedACKs (LINUX_MIB_DELAYEDACKS). A timer that
  finds nothing scheduled (an ACK already left) counts nothing.
- An immediate ACK is a race (Segment.race) only without a delay (D = 0),
  when the segment is not the last of its burst and the application called
  into this socket (connect, write, read) within its reaction time: woken,
  it may hold the socket lock, and segments that arrive meanwhile wait in its
  backlog. Linux 6.1 may coalesce them there (tcp_add_backlog), and from 6.7
  __tcp_ack_snd_check defers the ACK of a segment processed from the backlog
  to tcp_release_cb (TCP_ACK_DEFERRED): either way one ACK may cover both.
  Whether the lock is held at that instant is the race. With a delay the
  burst arrives D after it left, long after the call that caused it, and
  every ACK is certain. When the burst's last segment is not ACKed at once,
  the race ACK is not merged away but deferred: it leaves either way, and
  acknowledges its own segment or the whole burst (`_merge_deferred`); the
  first pure ACK of that data that would follow (the timer's, or the read's
  in __tcp_cleanup_rbuf) then leaves only in the first outcome
  (output.transmit makes it optional; a timer's counts Timer.unless_merged).
- An ACK due at once while the socket's backlog is processed (its reader
  held it, backlog.py) is deferred to tcp_release_cb on 6.7+
  (TCP_ACK_DEFERRED: one ACK for the batch) and sent at once before.
- Every armed timer says why it holds the ACK: the caller's reason, the FIN
  the socket hopes to piggyback on (CLOSE_WAIT), interactive mode (pingpong),
  or no quick ACK left.
"""

from __future__ import annotations

from tfolab.model.output import send_ack
from tfolab.model.sock import TcpSock
from tfolab.model.state import TcpState
from tfolab.model.wire import Wire


def unread_windows(sock: TcpSock, now: int) -> tuple[int, ...]:
    """Window fields the ACK may carry if the application's last read had not yet run when
    this segment, or an earlier one, was processed; () unless that is a race: D = 0,
    the read freed memory, and it ran within the reaction time.

    The model runs the application's read at the instant it was woken; a real
    one reads up to Env.app_reaction_ns later. Segments the peer sent at the
    same instant (its own application's next call) may be processed first,
    with the data the read will take still in the receive queue, and their
    ACKs offer a lower right edge, which tcp_select_window then never moves
    left: the next ACK's bound follows from that edge (`sock.unread_edge`),
    whether the read has run by then or not. Captured on Linux 6.1 (CI's VM,
    fastopen large-data at D = 0): the ACK of 2869, the first segment after
    the SYN's 1420 bytes, carried 498, not 501; in other runs the ACK of 3001
    after it carried 497, the bound that 498 left.
    """
    if (
        sock.env.link.one_way_delay_ns
        or not sock.read_freed
        or now >= sock.read_at_ns + sock.env.app_reaction_ns
    ):
        return ()
    space, mss, unacked = sock.rspace, sock.ack.rcv_mss, sock.rcv_nxt - sock.rcv_wup
    offered = space.rcv_wnd if sock.unread_edge is None else sock.unread_edge - sock.rcv_wup
    unread = space.window_if_read(mss, space.rmem + sock.read_freed, offered, unacked)
    read_since = space.window_if_read(mss, space.rmem, offered, unacked)
    read = space.window_if_read(mss, space.rmem, space.rcv_wnd, unacked)
    sock.unread_edge = sock.rcv_nxt + (unread << space.wscale)
    return tuple(sorted({unread, read_since} - {read}))


def ack_snd_check(sock: TcpSock, now: int, wire: Wire) -> None:
    """__tcp_ack_snd_check after `wire` was processed: ACK now, or arm the timer."""
    rules = sock.env.rules
    advances = sock.rspace.right_edge_advances(sock.ack.rcv_mss)
    below_lowat = len(sock.rcv_buf) < sock.rcvlowat  # rcv_nxt - copied_seq < sk_rcvlowat
    why = rules.ack_now(sock.ack, sock.unacked_received_bytes, advances, below_lowat)
    cause = f"{wire.what} (seq {wire.seq}:{wire.seq + len(wire.payload)}) arrived"
    owner = sock.owner
    if why is not None and owner is not None and owner.processing:
        if sock.env.rmem.backlog_ack_defer:
            # __tcp_ack_snd_check from __release_sock (6.7+): tcp_release_cb sends it
            owner.ack_deferred = True
            return
        why += " (processed from the backlog at release_sock; Linux before 6.7 sends it now)"
    if why is not None:
        busy = (
            sock.env.link.one_way_delay_ns == 0
            and sock.more_in_burst
            and now < sock.app_busy_until_ns
        )
        woken = bool(wire.payload) and sock.burst.is_race(sock.more_in_burst)
        text = f"ACK at once: {why}"
        if busy:
            text += (
                "; but a race (D = 0): the application was in a call on this socket at that "
                "moment (a read, or a write it now waits behind), and segments that arrive "
                "while it holds the socket wait in its backlog, where Linux 6.1's "
                "tcp_add_backlog may merge this one with the next, and 6.7+ defers the ACK "
                "to tcp_release_cb (TCP_ACK_DEFERRED): then one ACK covers both"
            )
        elif woken:
            waker = (
                "the burst's first segment woke the reader"
                if not sock.burst.woken
                else "the ACK that completed the handshake woke the reader (sk_state_change)"
                if sock.tfo_child
                else "the ACK that completed the handshake woke accept() (sk_state_change)"
            )
            text += (
                f"; but a race: {waker}, and once it holds "
                "the socket the rest of the burst waits in its backlog, where Linux 6.1's "
                "tcp_add_backlog merges it and 6.7+ defers its ACK to tcp_release_cb "
                "(TCP_ACK_DEFERRED): then one ACK covers the rest of the burst"
            )
        merged = (
            ()
            if sock.more_in_burst or not wire.payload
            else sock.burst.merged_windows(sock.rspace, sock.ack.rcv_mss, sock.rcv_nxt)
        )
        unread = unread_windows(sock, now)
        if unread:
            merged = tuple(sorted({*merged, *unread}))
            text += (
                f"; and a race for its window (D = 0): the application's read of "
                f"{sock.read_freed} B of truesize ran within its reaction time, so on a real "
                "machine this segment (or one before it) may be processed before the read "
                "copied them: they still count in sk_rmem_alloc, and the window is then "
                f"{' or '.join(map(str, unread))} (tcp_select_window, which never moves the "
                "right edge left)"
            )
        ack_event = send_ack(
            sock,
            now,
            text,
            cause,
            wire.event_id,
            race=busy or woken,
            window_alternatives=merged,
        )
        if wire.payload:
            sock.burst.acked(sock.rcv_wup, sock.rspace.rcv_wnd, busy or woken, ack_event)
        return
    expiry = rules.delayed_ack_expiry(sock.ack, sock.jiffies(now), sock.srtt_jiffies())
    if expiry is None:
        send_ack(
            sock, now, "ACK now: the delayed-ACK timer was about to expire", cause, wire.event_id
        )
        return
    if wire.payload and not sock.more_in_burst:
        _merge_deferred(sock)
    arm(sock, now, expiry, wire.event_id, cause)


def _merge_deferred(sock: TcpSock) -> None:
    """The burst ends with a delayed ACK: its last race ACK may acknowledge the whole burst.

    A reader that won the race held the socket while the rest of the burst waited in
    its backlog: 6.7+ deferred that ACK to tcp_release_cb (TCP_ACK_DEFERRED), which
    sends it after the backlog, acknowledging everything; 6.1's tcp_add_backlog
    coalesced the segments into one skb, ACKed at once as more than one full frame.
    Either way that ACK then covers this segment too, and no delayed-ACK timer is armed
    for it: the timer armed here fires only in the other outcome (`unless_merged`).
    """
    event_id = sock.burst.deferred_race_ack()
    if event_id is None:
        return
    event = sock.env.recorder.get(event_id)
    windows = sock.burst.merged_windows(sock.rspace, sock.ack.rcv_mss, sock.rcv_nxt)
    sock.env.recorder.amend_segment(
        event_id,
        race=False,
        merged_ack=sock.rcv_nxt,
        merged_windows=windows,
        explanation=event.explanation
        + f"; the burst's last segment is not ACKed at once, so that one ACK is this one, "
        f"deferred past the rest of the burst: it then acknowledges all of it "
        f"(ack {sock.rcv_nxt})",
    )
    sock.merged_burst_end = sock.rcv_nxt


def arm(
    sock: TcpSock, now: int, expiry: int, caused_by: int, cause: str, why: str | None = None
) -> None:
    """Arm the delayed-ACK timer for jiffies `expiry` (inet_csk_reset_xmit_timer, DACK)."""
    env = sock.env
    fire_ns = sock.timer_fires_at(expiry, now)
    if fire_ns == sock.delack_fire_ns:
        return
    wait_ms = (fire_ns - now) / 1e6
    if why is None:
        ato_ms = env.clock.jiffies_to_ms(expiry - sock.jiffies(now))
        why = _why_held(sock, ato_ms)
    sock.delack_fire_ns = fire_ns
    sock.delack_armed_ns = now
    sock.delack_ato_jiffies = expiry - sock.jiffies(now)
    sock.delack_event = sock.timer(
        now,
        fire_ns,
        name="delack",
        action="armed",
        explanation=f"{why} (fires in {wait_ms:.1f} ms, on a tick)",
        cause=cause,
        caused_by=caused_by,
    )
    env.call_at(fire_ns, lambda t: fire(sock, t))


def _why_held(sock: TcpSock, ato_ms: float) -> str:
    if sock.unacked_received_bytes > sock.ack.rcv_mss:
        return (
            f"ACK held although more than one full segment is unacknowledged: the unread "
            f"data would pull the window's right edge left (__tcp_select_window < rcv_wnd, "
            f"__tcp_ack_snd_check), so the {sock.side} ACKs when the application reads"
        )
    if sock.state is TcpState.CLOSE_WAIT:
        return f"ACK of the FIN held: {sock.side} hopes to send it with its own FIN"
    if sock.env.rules.in_pingpong(sock.ack):
        return (
            f"ACK held: the {sock.side} is interactive and waits up to {ato_ms:.0f} ms "
            "to piggyback it on a reply"
        )
    return f"ACK delayed: not in quick-ACK mode, the {sock.side} waits up to {ato_ms:.0f} ms"


def fire(sock: TcpSock, now: int) -> None:
    """tcp_delack_timer_handler, if the timer still fires at `now` (else a stale deadline)."""
    if sock.delack_fire_ns != now:
        return
    sock.delack_fire_ns = None
    what = sock.env.rules.timer_fired(sock.ack, sock.jiffies(now), sock.rto_jiffies())
    unless_merged = what is not None and sock.merged_burst_end == sock.rcv_nxt
    fired = sock.timer(
        now,
        now,
        name="delack",
        action="fired",
        explanation=f"delayed-ACK timer fired: {what}"
        if what
        else "delayed-ACK timer: nothing to do",
        cause="the timer expired",
        caused_by=sock.delack_event,
        unless_merged=unless_merged,
    )
    if what is not None:
        sock.count("DelayedACKs")  # tcp_delack_timer_handler: __NET_INC_STATS(DELAYEDACKS)
        send_ack(
            sock,
            now,
            "the delayed ACK finally goes (sent by the timer)",
            "the delayed-ACK timer fired",
            fired,
        )  # optional when unless_merged (output.transmit)

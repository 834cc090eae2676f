"""Sending: a segment onto the link, the ACK, queued data under Nagle and cork, the FIN.

Rules (net/ipv4/tcp_output.c):
- `transmit` is tcp_transmit_skb: every segment carries timestamps; a SYN or
  SYN-ACK also the MSS (advmss), SACK permitted and window scale 7, and the
  Fast Open option when there is one. A segment with the ACK flag carries
  rcv_nxt and sets rcv_wup (tcp_event_ack_sent: it clears the scheduled ACK,
  uses up a quick ACK and stops the delayed-ACK timer, which is recorded as
  cancelled); data may make the socket interactive (tcp_event_data_sent, see
  delack.py), counted once per skb tcp_transmit_skb sends: a GSO packet of
  several segments counts once (6.1 and 6.18).
- `push` is tcp_write_xmit: the unsent queue leaves in segments of at most
  mss_cache bytes while the state allows data, each one tested by Nagle and
  cork (nagle.py); a segment that ends a write carries PSH; a small segment
  sent moves snd_sml (tcp_minshall_update). Consecutive segments form GSO
  skbs of at most pacing.tso_segs segments (tcp_tso_autosize, cut by
  tcp_mss_split_point) and at most pacing.cwnd_quota (tcp_cwnd_test: half the
  congestion window); the last segment of one with more than one segment
  carries the PSH __tcp_transmit_skb forces on GSO skbs.
- `retransmit_syn_data` is tcp_rcv_fastopen_synack's tcp_xmit_retransmit_queue:
  tcp_send_syn_data left the SYN's data on the retransmit queue as one skb of
  its own, flagged ACK|PSH, so when the SYN-ACK does not acknowledge it, it is
  resent alone, with PSH, before the rest of the request leaves as new data
  (Linux 6.1 and 6.18: `496 P | 524 | 380 P` for 1400 bytes at MTU 576).
- Once the queue is empty after close(), the FIN goes (tcp_send_fin) and the
  state moves on SEND_FIN (state.py).
- A segment the path loses (path.py) never arrives; it is recorded when its
  delay would have ended, as the delayer drops it then (native/delay/hold.c).
  The model follows a lost SYN and a lost SYN-ACK (their timers resend them)
  and a lost lone data segment (its tail-loss probe, loss_probe.py), and
  refuses any other loss at once, with its reason (_check_loss).
"""

from __future__ import annotations

from tfolab.model import ack_loss, loss_probe, nagle, pacing, tso_defer
from tfolab.model.events import CookieInfo
from tfolab.model.flights import Flight, LostTail, ends_a_write, segment_name
from tfolab.model.options import TcpOption, Timestamps, syn_options
from tfolab.model.page_frag import PageWrite
from tfolab.model.path import LossNotFollowed
from tfolab.model.sock import TcpSock
from tfolab.model.state import TcpEvent
from tfolab.model.wire import Wire


def transmit(
    sock: TcpSock,
    now: int,
    *,
    flags: tuple[str, ...],
    seq: int,
    payload: bytes = b"",
    what: str,
    explanation: str,
    cause: str,
    caused_by: int | None,
    cookie: CookieInfo | None = None,
    mss_option: int | None = None,
    race: bool = False,
    window_alternatives: tuple[int, ...] = (),
    new_skb: bool = True,
    fresh: bool = False,
    syn_data: bool = False,
    gso_size: int = 0,
    frags: int = 1,
    psh_race: bool = False,
    syn_window: int | None = None,
) -> int:
    """Put one segment on the link and record it; returns the Segment event's id.

    `window_alternatives`: other window fields a race may give it (burst.py);
    `new_skb`: False for the later segments of a GSO packet (one
    tcp_transmit_skb call for all of them); `syn_window`: a SYN-ACK sent again
    carries its request's first window (tcp_make_synack: rsk_rcv_wnd).
    """
    env = sock.env
    loss_probe.sent_meanwhile(sock, flags, payload)
    sock.wstamp_ns = max(sock.wstamp_ns, now)  # __tcp_transmit_skb: tcp_wstamp_ns
    ack = sock.rcv_nxt if "ACK" in flags else None
    if ack is not None and sock.merged_burst_end is not None:
        if sock.merged_burst_end == ack and flags == ("ACK",) and not payload:
            race = True  # delack_timer._merge_deferred: the deferred ACK already covered it
            explanation += (
                "; unless the burst's deferred ACK already acknowledged this data, "
                "in which case no ACK is pending and none leaves here"
            )
        sock.merged_burst_end = None  # the first ACK after the burst is the one in doubt
    acked_before = sock.last_ack_sent  # what this side's earlier segments acknowledged
    if ack is not None:
        sock.last_ack_sent = max(ack, acked_before or 0)
        if "SYN" not in flags:  # a SYN-ACK's window is the initial one, unscaled
            sock.rspace.advertise(sock.ack.rcv_mss, sock.rcv_nxt - sock.rcv_wup)
        sock.rcv_wup = sock.rcv_nxt
    window = sock.rspace.header_window(syn="SYN" in flags) if syn_window is None else syn_window
    # the delayer judges its plan first (hold.c): a packet the plan drops never meets the
    # middlebox, and is recorded as it was sent, when its delay ends
    lost = env.path.loses(sock.iteration, sock.connection, sock.side)
    verdict = (
        "pass" if lost else env.path.middlebox_verdict(flags, len(payload), cookie is not None)
    )
    if verdict == "strip":
        explanation += (
            "; a middlebox on the path takes its Fast Open option out (strip-tfo-option): "
            "it arrives without one"
        )
        cookie = None
    options: tuple[TcpOption, ...] = (Timestamps(),)
    if mss_option is not None:
        options = syn_options(mss_option, env.wscale)
    if cookie is not None:
        options += (cookie.option(),)
    arrival = env.link.arrival(now)
    if lost and sock.connection in env.wheel_races:
        env.drop_after_race = True  # the Nth packet may be another one in the race's other way
    if verdict == "lose":
        explanation += f"; a middlebox on the path drops it ({env.path.middlebox})"
        lost = True
    probe = False
    if lost:
        probe = _check_loss(
            sock,
            now,
            flags,
            payload,
            what,
            first_ack=ack is not None and (acked_before is None or ack > acked_before),
        )
    event = env.recorder.segment(
        iteration=sock.iteration,
        connection=sock.connection,
        sent_ns=now,
        arrived_ns=arrival,
        sender=sock.side,
        flags=flags,
        seq=seq,
        ack=ack,
        length=len(payload),
        options=options,
        cookie=cookie,
        what=what,
        explanation=explanation,
        cause=cause,
        caused_by=caused_by,
        race=race,
        window=window,
        window_alternatives=tuple(w for w in window_alternatives if w != window),
        starts_skb=new_skb,
        psh_race=psh_race,
        lost=lost,
    )
    offered = window if "SYN" in flags else window << env.wscale
    wire = Wire(
        sock.side,
        sock.connection,
        flags,
        seq,
        ack,
        payload,
        cookie,
        mss_option,
        event.id,
        what,
        window=offered,
        fresh=fresh,
        syn_data=syn_data,
        gso_size=gso_size,
        sent_ns=now,
        echoes_ns=sock.ts_recent_ns,
        frags=frags,
    )
    if not lost:
        env.transmit(wire, arrival)
    elif probe:
        end = seq + len(payload) + (1 if "FIN" in flags else 0)  # a FIN takes a number
        first = sock.resending  # a probe or retransmission lost: named as the first was
        tail = LostTail(seq, end, flags, payload, first.tail.what if first else what, event.id)
        loss_probe.lost(sock, now, tail, transmit)
    if ack is not None:
        _ack_sent(sock, now, event.id, what)
    if payload and new_skb and env.rules.data_sent(sock.ack, sock.jiffies(now)):
        sock.note(
            now,
            f"{sock.side} enters pingpong (interactive) mode: it sent data within ato of "
            "receiving data, so from now on it delays its ACKs hoping to piggyback them",
            event.id,
            "tcp_event_data_sent",
        )
    return event.id


def _ack_sent(sock: TcpSock, now: int, event_id: int, what: str) -> None:
    """tcp_event_ack_sent: the ACK is out, so the delayed-ACK timer has nothing left to do."""
    sock.env.rules.ack_sent(sock.ack)
    if sock.delack_fire_ns is None:
        return
    race = what != "ACK" and _timer_may_win(sock, now)
    explanation = f"no delayed ACK needed: the {what} segment carries the ACK"
    if race:
        explanation += (
            "; but a race: the timer was due within the application's reaction time "
            f"(armed for {sock.delack_ato_jiffies} jiffies), so on a real machine the tick "
            "may come first and the ACK leave on its own just before (both are the kernel's)"
        )
        if "FIN" in what and sock.env.link.one_way_delay_ns == 0:
            explanation += (
                ". Without a delay that ACK may even arrive after the FIN: lo queues each "
                "packet on the backlog of the CPU that sent it (loopback_xmit, "
                "enqueue_to_backlog), the timer's on one, the close()'s on another. If the "
                "FIN has put the client in TIME_WAIT, it answers the old ACK with its own "
                "last ACK (tcp_timewait_state_process), and the server's host, whose socket "
                "that last ACK closed, resets (tcp_v4_send_reset; 6.1 and 6.18, late_ack.py). "
                "Or both arrive at once on the two CPUs: the ACK moves the closed client to "
                "TIME_WAIT while the FIN waits in bh_lock_sock, and the FIN then meets a "
                "socket in TCP_CLOSE, which tcp_rcv_state_process drops: no last ACK, and "
                "the FIN is sent again 200 ms or more later, after the capture"
            )
    sock.timer(
        now,
        sock.delack_fire_ns,
        name="delack",
        action="cancelled",
        explanation=explanation,
        cause="an ACK left",
        caused_by=event_id,
        race=race,
    )
    sock.delack_fire_ns = None


def _timer_may_win(sock: TcpSock, now: int) -> bool:
    """Could the delayed-ACK timer fire before an application sending at `now` really does?

    A timer armed for `ato` jiffies, at jiffies j, expires at j + ato and the
    wheel runs it at tick j + ato + 1 (calc_index rounds up, clock.py): with
    the tick's phase unknown, no earlier than `ato` whole ticks after arming
    (armed just before a tick edge), and at the very next tick for ato 0 (a
    Fast Open child that never ran tcp_event_data_recv). The application
    sends up to app_reaction later than the model's instant.
    """
    tick_ns = 1_000_000_000 // sock.env.clock.hz
    earliest = sock.delack_armed_ns + max(sock.delack_ato_jiffies, 0) * tick_ns
    return now + sock.env.app_reaction_ns > earliest


def _check_loss(
    sock: TcpSock,
    now: int,
    flags: tuple[str, ...],
    payload: bytes,
    what: str,
    *,
    first_ack: bool,
) -> bool:
    """The losses the model follows: a client's SYN, Fast Open's too (syn_timer.py), a
    SYN-ACK, a Fast Open child's too (synack_timer.py; the child's answer its client
    then drops in SYN_SENT is resent after the handshake, retransmit.py), a lone data segment
    or FIN (its tail-loss probe: True, loss_probe.py; the RTO where the probe or a
    retransmission is lost too, loss_rto.py), and a pure ACK that a later
    segment repeats or that ends a close (ack_loss.py). Any other lost segment ends the run
    outside the domain, with the reason."""
    if sock.side == "server" and flags == ("SYN", "ACK"):
        if sock.env.link.one_way_delay_ns >= sock.env.app_reaction_ns:
            return False
        raise LossNotFollowed(
            "the path loses the server's SYN-ACK at a one-way delay below "
            f"{sock.env.app_reaction_ns / 1e6:g} ms: the client's SYN timer and the "
            "server's SYN-ACK timer then expire on the same tick, on two CPUs' wheels, and "
            "whether the server's SYN-ACK completes the handshake before the client's timer "
            "runs (CI's fuzz, seed 2026, once: no second SYN) is a race of microseconds the "
            "model does not follow yet"
        )
    if sock.side == "client" and flags == ("SYN",):
        return False  # with data or a Fast Open option too: sent again bare (syn_timer.py)
    if flags == ("ACK",) and not payload:
        why = ack_loss.refusal(sock, now, first_ack, transmit)
        if why is None:
            return False  # a later segment, or the peer's probe, repairs it
    else:
        why = loss_probe.refusal(sock, flags, payload, first_ack=first_ack)
        if why is None:
            return True
    raise LossNotFollowed(
        f"the path loses the {sock.side}'s {what} ({why}): what follows is not modelled "
        "yet; the model follows the loss of the client's SYN (drop=client:1), of the "
        "server's SYN-ACK (drop=server:1), and of a lone data segment or FIN (its "
        "tail-loss probe, and the RTO after a lost probe)"
    )


def send_ack(
    sock: TcpSock,
    now: int,
    explanation: str,
    cause: str,
    caused_by: int | None,
    race: bool = False,
    window_alternatives: tuple[int, ...] = (),
) -> int:
    """tcp_send_ack: an ACK-only segment."""
    return transmit(
        sock,
        now,
        flags=("ACK",),
        seq=sock.snd_nxt,
        what="ACK",
        explanation=explanation,
        cause=cause,
        caused_by=caused_by,
        race=race,
        window_alternatives=window_alternatives,
    )


def retransmit_syn_data(
    sock: TcpSock, now: int, data: bytes, *, cause: str, caused_by: int
) -> None:
    """tcp_rcv_fastopen_synack: the unacknowledged SYN data resent as its own skb, with PSH.

    tcp_send_syn_data sized that skb before the peer's window was known (up to a
    32 KiB page frag from 6.5), so it may be longer than the MSS now in use, which
    tcp_sync_mss bounds to half the peer's largest window (32741 after a SYN-ACK
    offering 65483). __tcp_retransmit_skb then makes it a GSO skb of that MSS
    (tcp_set_skb_tso_segs: gso_size = mss): at lo's MTU it crosses whole, and the
    receiver's tcp_measure_rcv_mss reads gso_size, not its length; below it the
    device cuts it in software (tcp_gso_segment: PSH on the last piece only).
    """
    mss = sock.mss_cache
    pieces = [data] if not sock.software_gso else [
        data[k : k + mss] for k in range(0, len(data), mss)
    ]  # fmt: skip
    seq = 1
    for index, piece in enumerate(pieces):
        last = index == len(pieces) - 1
        name = segment_name(sock.marks, seq, seq + len(piece))
        why = (
            f"{name} ({len(piece)} B) sent again at once: the SYN-ACK did not acknowledge the "
            "SYN's data, and tcp_rcv_fastopen_synack retransmits that data's own skb "
            "(tcp_send_syn_data queued it alone, with PSH)"
        )
        if len(data) > mss:
            why += (
                f"; longer than the MSS now in use ({mss} B, half the peer's window: "
                "tcp_sync_mss), it leaves as a GSO skb of that MSS (__tcp_retransmit_skb)"
                + ("" if len(pieces) == 1 else ", cut by the device in software")
            )
        event_id = transmit(
            sock,
            now,
            flags=("ACK", "PSH") if last else ("ACK",),
            seq=seq,
            payload=piece,
            what=name,
            explanation=why,
            cause=cause,
            caused_by=caused_by,
            new_skb=index == 0,
            fresh=len(pieces) > 1,
            syn_data=True,
            gso_size=mss if len(piece) > mss else 0,
        )
        sock.flights.append(Flight(seq, seq + len(piece), now, True, event_id))
        seq += len(piece)


def size_goal(sock: TcpSock) -> int:
    """tcp_xmit_size_goal: the bytes one sendmsg skb takes, whole segments of mss_cache
    up to half the peer's largest window (tcp_bound_to_half_wnd of sk_gso_max_size)."""
    mss = sock.mss_cache
    goal = sock.bound_to_half_wnd(pacing.GSO_MAX_SIZE)
    return max(goal // mss * mss, mss)


def write(
    sock: TcpSock,
    now: int,
    data: bytes,
    *,
    msg_more: bool,
    cause: str,
    caused_by: int | None,
) -> None:
    """tcp_sendmsg_locked: copy a write into skbs at sock.write_seq, pushing as it goes.

    The bytes fill the unsent tail skb up to size_goal, then new skbs of
    size_goal (a write's first copy clears the tail's PSH). Each skb that fills
    with more of the write to come is pushed at once, before the copy goes on:
    marked PSH and all of the queue pushed when forced_push holds (more than
    half the peer's largest window written since pushed_seq), else, where it is
    the send head, one GSO packet of it (tcp_push_one). A push that sends part
    of the tail leaves the rest as a shorter tail, which the copy fills to
    size_goal again: the write's skbs end where the pushes left them, not at
    multiples of size_goal (6.1 and 6.18), and a PSH mark rides its skb's end.
    The write's end marks its skb PSH unless MSG_MORE (tcp_push,
    tcp_mark_push): that PSH is the write end's (flights.ends_a_write).
    """
    goal = size_goal(sock)
    start, end = sock.write_seq, sock.write_seq + len(data)
    _start_pages(sock, now, start, caused_by)
    pos = start
    while pos < end:
        ends = sock.skb_ends = [e for e in sock.skb_ends if e > sock.snd_nxt]
        tail_start = (ends[-2] if len(ends) > 1 else sock.snd_nxt) if ends else pos
        if ends and ends[-1] == pos and pos - tail_start < goal:
            take = min(goal - (pos - tail_start), end - pos)
            if pos in sock.forced_psh:  # the tail's PSH: cleared by a write's first
                sock.forced_psh.discard(pos)  # copy, else it rides the tail's end
                if pos != start:
                    sock.forced_psh.add(pos + take)
            ends[-1] = pos + take
        else:
            tail_start = pos
            take = min(goal, end - pos)
            ends.append(pos + take)
        sock.page_frag.copy(pos, pos + take)
        sock.unsent += data[pos - start : pos - start + take]
        pos += take
        sock.write_seq = pos
        if pos >= end or pos - tail_start < goal:
            break
        _skb_filled(sock, now, pos, cause, caused_by)
    if not msg_more:
        sock.pushed_seq = end


def _skb_filled(sock: TcpSock, now: int, pos: int, cause: str, caused_by: int | None) -> None:
    """tcp_sendmsg_locked as an skb fills with more to copy: forced_push
    (after(write_seq, pushed_seq + max_window / 2)) marks it PSH and pushes the
    queue; else tcp_push_one sends one GSO packet if it is the send head."""
    if pos > sock.pushed_seq + (sock.max_window >> 1):
        sock.forced_psh.add(pos)
        sock.pushed_seq = pos
        if sock.can_send_data():
            push(sock, now, cause=cause, caused_by=caused_by, copying=True)
    elif [e for e in sock.skb_ends if e > sock.snd_nxt] == [pos] and sock.can_send_data():
        push(sock, now, cause=cause, caused_by=caused_by, push_one=True, copying=True)


def _pages_idle(sock: TcpSock) -> bool:
    """Is every byte this sender copied before acknowledged and read? Then the model
    takes its page as free (refcount back to 1: skb_page_frag_refill reuses it from
    offset 0); read is not yet freed, which is the page race (page_frag.py)."""
    peer = sock.peer
    read = peer is None or not (peer.rcv_buf or peer.pre_read)
    return sock.snd_una == sock.write_seq and not sock.unsent and read


def _start_pages(sock: TcpSock, now: int, start: int, caused_by: int | None) -> None:
    """tcp_sendmsg_locked's first skb_page_frag_refill of a write at `start`: the page
    from 0 where it is free, or, where this timeline takes the race's other outcome
    (Env.pages_held, kernels that defer frees), on at the task's offset."""
    pages = sock.page_frag
    key: PageWrite = (sock.connection, sock.side, start)
    held = sock.env.rmem.defer_free and key in sock.env.pages_held
    offset = pages.offset
    went_on = pages.start_write(start, idle=_pages_idle(sock), held=held)
    if not sock.env.rmem.defer_free:
        pages.other = None  # every read skb is freed at once: no race
    if went_on:
        sock.note(
            now,
            f"the {sock.side}'s page frag is still held: a skb already read waits on its "
            "allocating CPU's defer list (tcp_eat_recv_skb, skb_attempt_defer_free), so "
            f"skb_page_frag_refill keeps the page and this write goes on at offset {offset}, "
            "where the process's last copy stopped (the model's outcome reuses it from 0)",
            caused_by,
            "a page race: the read skb freed on another CPU",
        )


def _note_page_race(sock: TcpSock, seq: int, end: int) -> None:
    """Is the segment [seq, end) one the page race's other outcome would cut into
    another number of fragments? Then that write's race is named (Env.page_races)."""
    pages = sock.page_frag
    if pages.other is None or not pages.differs(seq, end):
        return
    key: PageWrite = (sock.connection, sock.side, pages.other.start)
    if key not in sock.env.page_races:
        sock.env.page_races.append(key)


def push(
    sock: TcpSock,
    now: int,
    *,
    cause: str,
    caused_by: int | None,
    force_first: bool = False,
    push_one: bool = False,
    copying: bool = False,
) -> bool:
    """tcp_write_xmit: send what Nagle/cork allow, then a requested FIN; True if anything left.
    `push_one` (tcp_push_one): one GSO packet at most, never deferred; `copying`: a push
    from inside tcp_sendmsg (TCP_NAGLE_PUSH), whose queue ends where the copy stands,
    not where the write ends."""
    sent = False
    srtt = sock.srtt_ns
    if srtt is not None:
        srtt += sock.env.pacing_excess_ns  # the host's share of the round trip (Env)
    max_segs = pacing.tso_segs(
        sock.mss_cache, srtt, max(sock.snd_cwnd, sock.packets_out), sock.min_rtt_ns
    )
    if sock.env.windows_model:
        _note_tso_race(sock, now, max_segs)
    in_skb = 0  # segments of the GSO skb being sent so far
    skb_limit = 0  # the most segments this skb may take (tcp_cwnd_test, tcp_tso_autosize)
    quota = 0  # the congestion window's room when this skb began (tcp_cwnd_test)
    sock.skb_ends = [e for e in sock.skb_ends if e > sock.snd_nxt]
    sock.page_frag.forget_below(sock.snd_nxt)
    while sock.unsent and sock.can_send_data():
        if in_skb == 0:
            quota = pacing.cwnd_quota(sock.cwnd_packets_out, sock.snd_cwnd)
            if quota == 0:
                if not sock.env.windows_model:
                    sock.env.beyond_domain.append(_cwnd_full(sock.snd_cwnd))
                break
            skb_limit = quota if max_segs is None else min(quota, max_segs)
            if (
                sock.env.windows_model
                and not push_one
                and _defers(sock, now, quota, max_segs, force_first)
            ):
                if sock.held_note != sock.snd_nxt:
                    sock.held_note = sock.snd_nxt
                    sock.note(now, _deferred(sock, quota, max_segs), caused_by, cause)
                break
        n = min(sock.mss_cache, len(sock.unsent))
        if not sock.env.rmem.grow_skb:
            n = min(n, _skb_room(sock))
        if sock.env.windows_model:
            room = sock.wnd_end - sock.snd_nxt
            if in_skb == 0 and n > room:
                _rwnd_limited(sock, now, n, room, caused_by, cause)
                break
            n = min(n, room)  # tcp_mss_split_point: a GSO packet ends at the window's edge
        last = n == len(sock.unsent)
        write_end = last and not copying
        mode = nagle.SendMode(sock.nodelay, sock.cork, sock.msg_more, force_first or copying)
        reason = _hold(sock, n, last, mode, sock.packets_out, sock.snd_nxt, sock.snd_sml)
        if reason is not None:
            if sock.held_note != sock.snd_nxt:
                sock.held_note = sock.snd_nxt
                name = segment_name(sock.marks, sock.snd_nxt, sock.snd_nxt + n)
                sock.note(now, f"{name} ({n} B) waits: {reason}", caused_by, cause)
            break
        payload = bytes(sock.unsent[:n])
        del sock.unsent[:n]
        seq = sock.snd_nxt
        sock.snd_nxt += n
        name = segment_name(sock.marks, seq, seq + n)
        if force_first:
            why = f"{name}: sent again at once, the SYN-ACK did not acknowledge the SYN data"
        elif sock.held_note == seq:
            why = f"{name} leaves now: {cause}"
        else:
            why = f"{name} ({n} B) leaves at once"
        in_skb += 1
        if in_skb == 2 and sock.cwnd_grown_by is not None and not sock.env.windows_model:
            sock.env.beyond_domain.append(_cwnd_grown(sock.side, sock.cwnd_grown_by))
        first_of_skb = in_skb == 1
        ended_by_rule = (
            last
            # sendmsg made its skb end here (from 6.10, tcp_grow_skb pulls the next
            # skb's bytes into a head shorter than the quota)
            or (seq + n in sock.skb_ends and not sock.env.rmem.grow_skb)
            or (not copying and _next_held(sock, seq, n, force_first, sock.packets_out + 1))
            or (sock.env.windows_model and _window_ends_skb(sock, seq + n))
        )
        size_end = not ended_by_rule and _at_size_limit(sock, seq + n, in_skb, skb_limit, quota)
        ends_skb = ended_by_rule or size_end
        # the capture ended it short of its size limit (packet_ends.py)
        shown_end = size_end and in_skb not in (skb_limit, quota)
        gso_psh = ends_skb and in_skb > 1
        # a forced_push PSH marks its sendmsg skb; from 6.10 a GSO packet grown past that
        # skb's end carries the flag to its own end (tcp_grow_skb, tcp_eat_one_skb)
        forced = seq + n in sock.forced_psh and (ends_skb or not sock.env.rmem.grow_skb)
        if forced and not ends_a_write(sock.marks, seq + n):
            why += (
                f"; PSH: forced_push (more than half the peer's largest window, "
                f"{sock.max_window >> 1} B, written since the last PSH)"
            )
        elif gso_psh and not write_end and not ends_a_write(sock.marks, seq + n):
            why += (
                f"; PSH: the last of a {in_skb}-segment GSO packet "
                f"({_cut_by(sock, seq + n, skb_limit, max_segs, shown_end)}; "
                "__tcp_transmit_skb forces PSH on GSO packets)"
            )
        psh = write_end or ends_a_write(sock.marks, seq + n) or gso_psh or forced
        if ends_skb:
            in_skb = 0
        flags = ("ACK", "PSH") if psh else ("ACK",)
        _note_page_race(sock, seq, seq + n)
        event_id = transmit(
            sock,
            now,
            flags=flags,
            seq=seq,
            payload=payload,
            what=name,
            explanation=why,
            cause=cause,
            caused_by=caused_by,
            new_skb=first_of_skb,
            fresh=sock.software_gso and not (first_of_skb and ends_skb),
            frags=sock.page_frag.frags(seq, seq + n),
            psh_race=sock.psh_race
            and not (write_end or ends_a_write(sock.marks, seq + n))
            and not (
                forced and not sock.env.rmem.grow_skb  # before 6.10 skbs end at the mark
            ),
        )
        sock.flights.append(Flight(seq, seq + n, now, force_first, event_id))
        if n < sock.mss_cache and not force_first:
            sock.snd_sml = seq + n  # tcp_minshall_update
        force_first = False
        sent = True
        if push_one and in_skb == 0:
            break  # tcp_push_one: one GSO packet
    sock.max_packets_out = max(sock.max_packets_out, sock.cwnd_packets_out)  # tcp_cwnd_validate
    if not sock.unsent and sock.fin_requested and not sock.fin_sent and not copying:
        _send_fin(sock, now, cause, caused_by)
        sent = True
    return sent


def _at_size_limit(sock: TcpSock, end: int, in_skb: int, skb_limit: int, quota: int) -> bool:
    """Does the GSO packet end here for its size: tcp_tso_autosize's segments or the
    congestion window's quota (skb_limit, the smaller). Where the model names the race
    on the size (Segment.psh_race) and a capture shows the kernel's outcome
    (Env.packet_ends, packet_ends.py), that outcome, within the quota."""
    own = in_skb == skb_limit
    captured = sock.env.packet_ends
    if not sock.psh_race or captured is None:
        return own
    shown = captured.ends_packet((sock.connection, sock.side, end), in_skb)
    if shown is None:
        return own
    taken = shown or in_skb == quota
    sock.env.packet_ends_moved += taken != own
    return taken


def _note_tso_race(sock: TcpSock, now: int, max_segs: int | None) -> None:
    """Is where this train of ACKs' GSO skbs end a race? tcp_tso_autosize's segments
    follow the pacing rate, mss x cwnd / srtt, and the real srtt is the model's plus up
    to the host's round-trip excess (Env.rtt_excess_ns): where that excess would allow
    one segment fewer, the skbs may end elsewhere from here to the end of the train (a
    push more than 1 ms after the last transmit starts a new one, tcp_tso_should_defer)."""
    if now - sock.wstamp_ns > tso_defer.NSEC_PER_MSEC:
        sock.psh_race = False
    if max_segs is None or sock.srtt_ns is None:
        return
    # the band's two ends, whatever share of the excess this timeline took (Env)
    cwnd = max(sock.snd_cwnd, sock.packets_out)
    faster = pacing.tso_segs(sock.mss_cache, sock.srtt_ns, cwnd, sock.min_rtt_ns)
    slower = pacing.tso_segs(
        sock.mss_cache,
        sock.srtt_ns + sock.env.rtt_excess_ns,
        cwnd,
        sock.min_rtt_ns,
    )
    if slower != faster:
        sock.psh_race = True


def _rwnd_limited(
    sock: TcpSock, now: int, n: int, room: int, caused_by: int | None, cause: str
) -> None:
    """tcp_snd_wnd_test: the next skb's first segment does not fit in the peer's window."""
    if sock.held_note != sock.snd_nxt:
        sock.held_note = sock.snd_nxt
        name = segment_name(sock.marks, sock.snd_nxt, sock.snd_nxt + n)
        sock.note(
            now,
            f"{name} ({n} B) waits: the peer's receive window has room for {max(room, 0)} B "
            "(tcp_snd_wnd_test)",
            caused_by,
            cause,
        )
    if not sock.flights:
        sock.env.beyond_domain.append(_ZERO_WINDOW)


def _skb_room(sock: TcpSock) -> int:
    """Before 6.10, the bytes left in the send head's sendmsg skb: tcp_write_xmit sends
    the write queue skb by skb, and tcp_tso_segs cuts each into MSS-sized segments
    from its own start, so a segment never crosses an skb's end. Where an earlier
    send split an skb off the MSS grid (tso_fragment at the window's edge), the rest
    of that skb leaves as one short segment (Linux 6.1 tcp_write_xmit; from 6.10
    tcp_grow_skb moves the next skb's bytes into it instead). Seen in CI's 6.1 VM:
    a 269,765 B answer at MTU 16000, whose window edge cut 1852 B off an skb."""
    skb_end = next((end for end in sock.skb_ends if end > sock.snd_nxt), None)
    return len(sock.unsent) if skb_end is None else skb_end - sock.snd_nxt


def _window_ends_skb(sock: TcpSock, end: int) -> bool:
    """tcp_mss_split_point: does the GSO packet end at `end` because the next segment
    is past the window's edge? A part of it still goes in this packet where Nagle lets
    a partial segment go (tcp_nagle_check: no small segment unacknowledged, no cork)."""
    rest = len(sock.unsent)
    if rest <= 0:
        return False
    room = sock.wnd_end - end
    following = min(sock.mss_cache, rest)
    if following <= room:
        return False
    if room <= 0:
        return True
    held = sock.cork or (
        not sock.nodelay
        and bool(sock.flights)
        and nagle.minshall_check(sock.snd_sml, sock.snd_una, end)
    )
    return held


def _defers(sock: TcpSock, now: int, quota: int, max_segs: int | None, force_first: bool) -> bool:
    """tcp_write_xmit's tcp_tso_should_defer for the write queue's head skb, as
    tcp_grow_skb left it from 6.10 (grown to the quota from the skbs after it)."""
    if max_segs is None or force_first:
        return False
    later_ends = [e for e in sock.skb_ends if e > sock.snd_nxt]
    write_end = sock.snd_nxt + len(sock.unsent)
    skb_end = min(later_ends) if later_ends else write_end
    if sock.env.rmem.grow_skb:
        grown = sock.snd_nxt + min(quota, max_segs) * sock.mss_cache
        skb_end = max(skb_end, min(grown, write_end))
    skb_len = skb_end - sock.snd_nxt
    if skb_len <= sock.mss_cache:  # tcp_init_tso_segs: one segment, Nagle decides
        return False
    room = tso_defer.SendRoom(
        now_ns=now,
        wstamp_ns=sock.wstamp_ns,
        cwnd=sock.snd_cwnd,
        in_flight=sock.cwnd_packets_out,
        mss=sock.mss_cache,
        send_win=sock.wnd_end - sock.snd_nxt,
        snd_wnd=sock.snd_wnd,
        skb_len=skb_len,
        skb_is_tail=skb_end >= write_end,
        fin_follows=sock.fin_requested and skb_end >= write_end,
        head_sent_ns=sock.flights[0].sent_ns if sock.flights else None,
        srtt_ns=sock.srtt_ns or 0,
    )
    return tso_defer.should_defer(room, max_segs)


def _deferred(sock: TcpSock, quota: int, max_segs: int | None) -> str:
    name = segment_name(sock.marks, sock.snd_nxt, sock.snd_nxt + sock.mss_cache)
    return (
        f"{name} waits for the next ACK: the congestion window has room for {quota} "
        f"segment(s), fewer than the {max_segs} of a full GSO packet (tcp_tso_autosize), "
        "and that ACK is due within min(srtt / 2, 1 ms) (tcp_tso_should_defer)"
    )


def _cut_by(sock: TcpSock, end: int, skb_limit: int, max_segs: int | None, shown: bool) -> str:
    """Which rule ended the GSO packet at `end`, for its explanation; `shown`: the
    capture's outcome of the size race ended it (packet_ends.py)."""
    if end in sock.skb_ends:
        return "tcp_sendmsg made skbs of size_goal, half the peer's largest window"
    if shown:
        return (
            "the capture shows it ending here: where a train of ACKs lets the packets end "
            "is a race on the host's timing, each ACK releasing its own quota"
        )
    if max_segs is None or skb_limit < max_segs:
        return "tcp_cwnd_test gives one skb at most half the congestion window"
    return "tcp_tso_autosize cuts the write there"


_ZERO_WINDOW = (
    "a sender waits for its peer's receive window with nothing in flight: the persist "
    "timer (tcp_probe_timer, window probes) is not in the model yet"
)


def _cwnd_full(cwnd: int) -> str:
    """Why a sender whose first window is full leaves the domain (outside the window
    model): 10 segments (tcp_init_cwnd), or 1 after retransmitted handshake segments
    (tcp_init_transfer)."""
    why = (
        ""
        if cwnd == pacing.TCP_INIT_CWND
        else " (tcp_init_transfer: its SYN or SYN-ACK was sent again twice)"
    )
    return (
        f"a sender filled its initial congestion window of {cwnd} segment"
        f"{'s' if cwnd != 1 else ''}{why} with data still to send (tcp_cwnd_test): the wait "
        "for its ACKs needs the congestion-window model"
    )


def _cwnd_grown(side: str, flight: int) -> str:
    return (
        f"the {side}'s congestion window grew in slow start after a flight of {flight} "
        f"segments (more than half of {pacing.TCP_INIT_CWND}: tcp_is_cwnd_limited, "
        "tcp_slow_start), and a later packet of several segments depends on the grown window: "
        "that needs the congestion-window model"
    )


def _hold(
    sock: TcpSock,
    n: int,
    last: bool,
    mode: nagle.SendMode,
    packets_out: int,
    snd_nxt: int,
    snd_sml: int,
) -> str | None:
    return nagle.hold_reason(
        partial=n < sock.mss_cache,
        last=last,
        mode=mode,
        packets_out=packets_out,
        snd_sml=snd_sml,
        snd_una=sock.snd_una,
        snd_nxt=snd_nxt,
    )


def _next_held(sock: TcpSock, seq: int, n: int, forced: bool, packets_out: int) -> bool:
    """Would the segment after this one (seq:seq+n, already off the queue) wait?

    tcp_mss_split_point leaves a partial last segment out of the GSO skb when
    Nagle would hold it, so the skb ends at this segment.
    """
    rest = len(sock.unsent)
    if rest <= 0:
        return False
    following = min(sock.mss_cache, rest)
    snd_sml = seq + n if n < sock.mss_cache and not forced else sock.snd_sml
    mode = nagle.SendMode(sock.nodelay, sock.cork, sock.msg_more, False)
    held = _hold(sock, following, following == rest, mode, packets_out, seq + n, snd_sml)
    return held is not None


def _send_fin(sock: TcpSock, now: int, cause: str, caused_by: int | None) -> None:
    """tcp_send_fin, with tcp_close_state's move (FIN_WAIT1 or LAST_ACK)."""
    seq = sock.snd_nxt
    sock.snd_nxt += 1
    sock.fin_sent = True
    sock.move(TcpEvent.SEND_FIN)
    event_id = transmit(
        sock,
        now,
        flags=("FIN", "ACK"),
        seq=seq,
        what="FIN",
        explanation=f"close(): the {sock.side}'s FIN (not on the headline's path)",
        cause=cause,
        caused_by=caused_by,
    )
    sock.flights.append(Flight(seq, seq + 1, now, False, event_id, data=False))

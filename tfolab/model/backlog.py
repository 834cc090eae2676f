"""A socket its application holds: segments wait in sk_backlog until release_sock.

Why the model needs it: without a delay the two applications run on two
CPUs. A segment one of them sends is received inside its own system call
(loopback's softirq runs as dev_queue_xmit re-enables bottom halves) and may
wake the other, whose read then takes the socket (lock_sock) while the
sender goes on: the rest of the same write, and its next system call, a few
microseconds later. Where the reader takes the socket among those segments
is the host's scheduling (loop.py names each such instant a lock point and
runs the read there when the simulation is asked to). With a delay the same
race holds among the segments that arrive together: the delayer keeps the
microseconds between them. accept() also holds a new socket for a moment
(inet_accept: lock_sock, graft, release_sock), and a request segment that
arrives then waits in its backlog (`TcpEndpoint.hold_for_accept`); so does a
client woken by the SYN-ACK in connect() or sendto() (inet_wait_for_connect:
lock_sock, then the call's release_sock; `TcpEndpoint.hold_for_connect`),
while a Fast Open server's answer arrives. Segments that arrive
while the reader holds the socket wait in its backlog (tcp_v4_rcv ->
tcp_add_backlog), and that changes what the kernel does with them:

Rules (Linux 6.1 and 6.18 unless said):
- `add` is tcp_add_backlog: the segment waits, charged to sk_backlog.len by
  its truesize, or is merged into the backlog's last skb (skb_try_coalesce:
  contiguous, both ACK, no SYN/RST/URG, the same options), charging its
  payload only. skb_try_coalesce refuses a cloned `to`, and on loopback the
  receiver holds the sender's own clone (rcv_space.py), so only a tail cut in
  software (`Wire.fresh`: a GSO packet segmented below lo's MTU) takes
  another. The merged skb keeps the largest segment as gso_size, which
  tcp_measure_rcv_mss reads (`Wire.gso_size`). A segment that arrives once
  the owner's __release_sock has taken the list it would join (its loop sets
  sk_backlog.head and .tail to NULL, then processes that list while the
  socket stays owned) starts a new list, which later arrivals may join and
  the same loop processes next (`split`, a "split" lock point in loop.py;
  6.1 and 6.18 alike). Seen in CI's emulated VM (6.1, fastopen cookie at MTU
  576, a 2500-byte answer at D = 10 ms: one GSO packet, one TSval, arriving
  over 0.3 ms while connect()'s release_sock ran): the client acked 525, 1573
  and 2501 from three lists, [1-525], [525-1573] and [1573-2501].
- `release` is release_sock -> __release_sock: the backlog's segments are
  processed in order by the ordinary receive path (tcp_v4_do_rcv ->
  tcp_rcv_established), while sk_backlog.len still counts all of them; it is
  zeroed only after the last (`sk->sk_backlog.len = 0` at the end of
  __release_sock). tcp_space() subtracts it (include/net/tcp.h), so
  tcp_grow_window's room is smaller, but the reader has by then copied and
  freed what it read: captured on 6.18 at D = 0 (delack nodelay, a
  36086-byte first write), the server read the first 32741 bytes while 3345
  and 6 bytes waited, and rcv_ssthresh grew to tcp_space() with both still
  counted, 118362 bytes: window 116 (x 1024) where the read after all three
  gives 93; the client, reading the 32768-byte echo while its last 3324
  bytes waited, offered 117.
- An ACK due at once while the backlog is processed: 6.7+ defers it
  (__tcp_ack_snd_check sets TCP_ACK_DEFERRED when sock_owned_by_user_nocheck,
  sysctl net.ipv4.tcp_backlog_ack_defer, on by default) and tcp_release_cb
  sends one ACK after the backlog, if an ACK is still scheduled, with the
  window of sk_backlog.len = 0; 6.1 sends each at once (`ReceiveMemory.
  backlog_ack_defer`).
- A blocking reader (the client's read()) flushes the backlog itself when its
  copy reaches the end of the receive queue (tcp_recvmsg_locked:
  copied >= target and sk_backlog.tail -> __sk_flush_backlog, which on 6.18
  also runs tcp_release_cb) and copies on; only then tcp_cleanup_rbuf decides
  the read's ACK, once (`Owner.blocking`: endpoint.take copies without it,
  endpoint.release copies what the backlog queued and runs it). Unless the
  segment came just after the loop's last look found the backlog empty: the
  loop ends, tcp_cleanup_rbuf runs for what was copied, and release_sock
  processes the segment with sk_backlog.len charged (a "stopped" point,
  `TcpEndpoint.stop_copying`; captured on 6.18 at D = 0, MTU 60000: the
  client's window update ACK of 30209 offered 96, the FIN after it 105). Or
  the segment came between that look and tcp_cleanup_rbuf (6.1 and 6.18: a
  few instructions apart): it is charged to sk_backlog.len first, so the
  read's ACK offers a window less its truesize (a "cleanup" point; captured
  on 6.1 at D = 0, MTU 602: ACK of 2751 with window 507, not 508).
  A MSG_DONTWAIT reader (the echo server's recv()) stops there always
  (timeo 0: tcp_recv_should_stop), runs tcp_cleanup_rbuf, and release_sock
  processes the backlog after it; the next readiness event reads the rest.
  Segments that arrive while it still copies are charged to sk_backlog.len
  before that tcp_cleanup_rbuf, and its ACK offers that much less (a recv()'s
  "cleanup" point, `TcpEndpoint.late_cleanup`; captured on 6.1 at D = 0, MTU
  5968: ACK of 38235 with window 461 after two more segments, 466 at once).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from tfolab.model.output import send_ack
from tfolab.model.page_frag import MAX_SKB_FRAGS
from tfolab.model.sock import Owner, TcpSock
from tfolab.model.wire import Wire


def own(sock: TcpSock, *, blocking: bool) -> Owner:
    """lock_sock: from now on segments for this socket wait in its backlog."""
    owner = Owner(blocking=blocking)
    sock.owner = owner
    return owner


def mergeable(sock: TcpSock, wire: Wire) -> bool:
    """Would tcp_add_backlog merge this segment into the backlog's last skb?"""
    owner = sock.owner
    return (
        owner is not None and bool(owner.backlog) and _merged(owner.backlog[-1], wire) is not None
    )


def add(sock: TcpSock, now: int, wire: Wire, *, merge: bool = True, split: bool = False) -> None:
    """tcp_add_backlog: the segment waits, charged to sk_backlog.len by its truesize, or
    joins the backlog's last skb where skb_try_coalesce may (`_merged`). `merge` False:
    __release_sock has already taken the list (sk_backlog.tail is NULL), so there is no
    skb to join, while sk_backlog.len still counts the ones taken. `split`: the same,
    but the release is still busy with the list it took: this segment starts a new
    list that later arrivals may join, processed next by the same release (a named
    race, `SPLIT` below)."""
    owner = sock.owner
    assert owner is not None
    can_merge = owner.backlog and merge and not split
    merged = _merged(owner.backlog[-1], wire) if can_merge else None
    if merged is not None:
        owner.backlog[-1] = merged
        sock.rspace.backlog += len(wire.payload)  # skb_try_coalesce's delta: its frags
        how = f"merged into the backlog's last skb ({len(merged.payload)} B, tcp_add_backlog)"
    else:
        owner.backlog.append(wire)
        sock.rspace.backlog += sock.rspace.truesize(len(wire.payload))  # sk_add_backlog
        how = f"waits in the backlog (tcp_add_backlog){SPLIT if split else ''}"
    sock.note(
        now,
        f"{wire.what} (seq {wire.seq}:{wire.seq + len(wire.payload)}) {how}: the "
        f"{sock.side}'s application holds the socket",
        wire.event_id,
        "the socket is owned by its reader",
    )


SPLIT = (
    ", in a new list: the owner's __release_sock had already taken the list whose last "
    "skb it would have joined, and processes this one after it (a race: the owner's "
    "release runs on the other CPU while the segments arrive)"
)


def _merged(tail: Wire, wire: Wire) -> Wire | None:
    """tcp_add_backlog's coalescing: contiguous, both ACK, no SYN/RST/URG, the same
    options, and a tail that is no clone (skb_try_coalesce refuses a cloned `to`: only
    a skb cut in software qualifies, or one no sender keeps, as a TIME_WAIT socket's
    ACK built by ip_send_unicast_reply; two of those, the same numbers and timestamps
    within one millisecond, merge into one). The merged skb keeps the later ACK and window,
    every flag of both, the largest segment as gso_size, and the fragments of both
    (at most MAX_SKB_FRAGS)."""
    flags = {*tail.flags, *wire.flags}
    if (
        not tail.fresh
        or tail.seq + len(tail.payload) != wire.seq
        or not {"ACK"} <= set(tail.flags) & set(wire.flags)
        or flags & {"SYN", "RST", "URG"}
        or tail.stale != wire.stale
        or tail.frags + wire.frags > MAX_SKB_FRAGS
    ):
        return None
    later = wire.ack is not None and (tail.ack is None or wire.ack >= tail.ack)
    return dataclasses.replace(
        tail,
        flags=tuple(f for f in ("FIN", "ACK", "PSH") if f in flags),
        ack=wire.ack if later else tail.ack,
        window=wire.window if later else tail.window,
        payload=tail.payload + wire.payload,
        event_id=wire.event_id,
        what=f"{tail.what} + {wire.what}",
        gso_size=max(tail.gso_size or len(tail.payload), len(wire.payload)),
        frags=tail.frags + wire.frags,
    )


def release(sock: TcpSock, now: int, receive: Callable[[Wire], None]) -> Owner:
    """release_sock: __release_sock runs the backlog, then tcp_release_cb's deferred ACK.

    Returns the owner that let go.
    """
    owner = sock.owner
    assert owner is not None
    owner.processing = True
    for wire in owner.backlog:
        sock.more_in_burst = False  # the owner itself processes them: no reader to race
        receive(wire)
    owner.processing = False
    sock.rspace.backlog = 0  # only after the last (__release_sock)
    sock.owner = None
    if owner.ack_deferred and sock.ack.scheduled:
        send_ack(
            sock,
            now,
            "ACK deferred while the backlog was processed, sent by tcp_release_cb "
            "(TCP_ACK_DEFERRED, Linux 6.7+): one ACK for the whole backlog, its window "
            "with sk_backlog.len back at 0",
            "release_sock",
            owner.backlog[-1].event_id if owner.backlog else None,
        )
    return owner

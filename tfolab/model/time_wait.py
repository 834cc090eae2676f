"""A segment of its own connection reaching a socket in TIME_WAIT.

Rules (tcp_minisocks.c tcp_timewait_state_process, the TIME_WAIT substate;
Linux 6.1 and 6.18 alike):
- The peer's FIN again (its tail-loss probe or RTO, after this side's last
  ACK was lost) starts below rcv_nxt: "out of window segment", answered with
  an ACK (TCP_TW_ACK; 6.18's TCP_TW_ACK_OOW differs only in clearing the ECN
  bits) after the TIME_WAIT timer restarts (60 s, not drawn).
- tcp_timewait_check_oow_rate_limit holds an answer back only for a segment
  without a sequence number of its own: a FIN or data is never rate-limited
  (tcp_oow_rate_limited: "Data packets without SYNs are not likely part of an
  ACK loop"); a bare ACK gets one answer per tcp_invalid_ratelimit (500 ms),
  counted TCPACKSkippedTimeWait otherwise. tcp_time_wait starts that clock at 0:
  the first answer always leaves.
- The answer (tcp_v4_timewait_ack) carries the socket's last numbers
  (tw_snd_nxt, tw_rcv_nxt), the window tcp_time_wait saved (tw_rcv_wnd: the
  last ACK's, unchanged since nothing was received), and the timestamps
  option only (no SACK); its TSecr stays the FIN's first TSval, as the
  out-of-window segment does not update tw_ts_recent.
- The answer is a segment the path counts (a drop may name it). Lost, the
  peer's FIN, probed or sent again by its RTO, stays unacknowledged: its
  retransmission timer, which tcp_send_loss_probe (or tcp_retransmit_timer)
  restarted as the FIN left, fires a whole RTO later (doubled after an RTO)
  and sends the FIN once more (loss_rto.py); a peer whose FIN was not resent
  by one of those timers is outside the model's domain.
- Anything else reaching TIME_WAIT on its own connection (a segment at or
  beyond rcv_nxt, a SYN) is outside the model's domain, said so.
"""

from __future__ import annotations

from tfolab.model import loss_rto
from tfolab.model.flights import LostTail
from tfolab.model.options import Timestamps
from tfolab.model.output import transmit
from tfolab.model.path import LossNotFollowed
from tfolab.model.sock import TcpSock
from tfolab.model.wire import Wire


def receive(sock: TcpSock, now: int, wire: Wire) -> None:
    """tcp_timewait_state_process for a segment of this socket's own connection."""
    end = wire.seq + len(wire.payload) + (1 if wire.fin else 0)
    if wire.syn or wire.seq >= sock.rcv_nxt:
        sock.env.beyond_domain.append(
            f"a {wire.what} at or beyond rcv_nxt reached the {sock.side}'s socket in "
            "TIME_WAIT (tcp_timewait_state_process): not modelled yet"
        )
        return
    numbered = end != wire.seq
    if not numbered and sock.oow_rate_limited(now, sock.tw_last_oow_ack_jiffies):
        sock.count("TCPACKSkippedTimeWait")
        return
    if not numbered:
        sock.tw_last_oow_ack_jiffies = sock.jiffies(now)
    _answer(sock, now, wire, numbered)


def _answer(sock: TcpSock, now: int, wire: Wire, numbered: bool) -> None:
    """tcp_v4_timewait_ack: the socket's own last ACK again."""
    lost = sock.env.path.loses(sock.iteration, sock.connection, sock.side)
    if lost:
        _peer_waits(sock, now)
    limit = (
        "a FIN takes a sequence number, so no rate limit applies"
        if numbered
        else "the first such answer in 500 ms (tcp_oow_rate_limited)"
    )
    send_ack(
        sock,
        now,
        wire,
        (
            f"the {sock.side}'s socket, in TIME_WAIT, gets the peer's {wire.what}: it starts "
            "below rcv_nxt, out of window, so tcp_timewait_state_process answers with its "
            f"last ACK again (tcp_v4_timewait_ack: its own numbers and saved window; {limit})"
        ),
        window=sock.rspace.header_window(syn=False),
        lost=lost,
    )


def _peer_waits(sock: TcpSock, now: int) -> None:
    """The answer is lost: the peer's FIN, last sent by its probe or RTO, waits for the
    RTO those restarted as it left (loss_rto.armed, from that moment and that timer's
    bucket)."""
    peer = sock.peer
    resent = None if peer is None else peer.last_resend
    if peer is None or resent is None or [f.seq for f in peer.flights] != [resent.tail.seq]:
        raise LossNotFollowed(
            f"the path loses the {sock.side}'s last ACK again (TIME_WAIT's answer), and the "
            "FIN it answers was not sent again by the peer's probe or RTO: not modelled yet"
        )
    fin = peer.flights[0]
    tail = LostTail(fin.seq, fin.end, resent.tail.flags, b"", resent.tail.what, fin.event_id)
    loss_rto.armed(peer, fin.sent_ns, tail, transmit, grid=resent.width)


def send_ack(
    sock: TcpSock,
    now: int,
    wire: Wire,
    explanation: str,
    *,
    window: int | None = None,
    route: int | None = None,
    iteration: int | None = None,
    lost: bool = False,
) -> None:
    """tcp_v4_timewait_ack for `wire`: an ACK of the TIME_WAIT socket's own numbers,
    timestamps only. `window`: the saved window where the model states it; `route`:
    the connection it travels on, where that is a later one on the same 4-tuple (a
    replayed SYN's, replay.py: its numbers are stale there), recorded in `iteration`;
    `lost`: the path loses it (never delivered; recorded when its delay would have ended,
    as the delayer drops it then)."""
    env = sock.env
    arrival = env.link.arrival(now)
    event = env.recorder.segment(
        iteration=sock.iteration if iteration is None else iteration,
        connection=sock.connection,
        sent_ns=now,
        arrived_ns=arrival,
        sender=sock.side,
        flags=("ACK",),
        seq=sock.snd_nxt,
        ack=sock.rcv_nxt,
        length=0,
        options=(Timestamps(),),
        cookie=None,
        what="TIME_WAIT ACK",
        explanation=explanation,
        cause=f"{wire.what} arrived",
        caused_by=wire.event_id,
        window=window,
        lost=lost,
    )
    if lost:
        return
    answer = Wire(
        sock.side,
        sock.connection if route is None else route,
        ("ACK",),
        sock.snd_nxt,
        sock.rcv_nxt,
        b"",
        None,
        None,
        event.id,
        "TIME_WAIT ACK",
        stale=route is not None,
        window=0 if window is None else window << env.wscale,
        sent_ns=now if route is None else 0,
        echoes_ns=sock.ts_recent_ns if route is None else None,
        fresh=True,  # ip_send_unicast_reply's own skb: nothing keeps a clone
    )
    env.transmit(answer, arrival)

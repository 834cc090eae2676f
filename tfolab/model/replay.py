"""The replayed SYN: an attacker resends a captured Fast Open SYN, and what both kernels do.

Scenario `replay_syn`: iteration 1 is an ordinary Fast Open connection with a
valid cookie. Once it is over on the server (REPLAY_GAP after the client's
close + 3D), someone who captured its SYN sends the same bytes again (same
ports, same ISN, same cookie, same request). What follows is Linux's:

- The server has no socket for that 4-tuple any more (it closed second, so it
  holds no TIME_WAIT), so the SYN reaches the listener: tcp_conn_request ->
  tcp_try_fastopen finds the cookie valid (it depends only on the addresses and
  the key) and creates a child with the data queued (TCPFastOpenPassive again).
  Linux keeps no record of cookies already used: the application accepts the
  child and receives the request a second time, and answers it.
- The SYN-ACK and the response reach the client's host, where connection 1's
  socket sits in TIME_WAIT (the client closed first). tcp_timewait_state_process
  answers every out-of-window segment with an ACK of its own old numbers
  (tcp_v4_timewait_ack: seq = its snd_nxt, ack = its rcv_nxt); a SYN or pure
  ACK at most once per tcp_invalid_ratelimit (500 ms), data always.
- Those ACKs reach the new child in SYN_RECV: their ACK number belongs to the
  old connection, so tcp_ack refuses them and tcp_rcv_state_process asks for a
  reset: tcp_v4_send_reset answers each with a RST whose sequence number is the
  ACK's acknowledgment number. The child itself stays (it only sent the RST).
- The first RST carries exactly the TIME_WAIT socket's rcv_nxt, so
  tcp_timewait_state_process kills it (TIME_WAIT assassination, RFC 1337; Linux
  does it while net.ipv4.tcp_rfc1337 = 0, the default). The second finds no
  socket, and a RST is never answered.
- Not drawn (the lab stops 4D after the replay): about 1 s after its SYN-ACK the
  child's retransmission timer resends it; the client's host, with no socket
  now, answers with a RST (tcp_v4_send_reset), which resets the child
  (tcp_reset) and the server application sees ECONNRESET.
- At D = 0 the order changes: the SYN-ACK, the TIME_WAIT ACK, the RST and the
  assassination all run in the softirq of the SYN's arrival, before the server
  process is scheduled to answer (the loop gives the application its turn
  after the kernel's work at one instant). The response then meets no socket:
  the client's host answers it with a RST at the child's rcv_nxt, which resets
  the child at once (tcp_reset). The request was still received twice. The
  server process may run on the other CPU as that chain goes on, and answer
  before the RST, or even before TIME_WAIT has had the SYN-ACK; then the
  answer's send() holds the child while TIME_WAIT acks both, and
  tcp_add_backlog merges the two ACKs into one reset (loop.ReplayOrder).

Segments from the TIME_WAIT socket, and the RSTs answering them, carry
connection 1's sequence numbers: they are recorded on connection 1 (as a
capture numbers them), though they travel on the replayed connection's 4-tuple.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tfolab.model import time_wait
from tfolab.model.clock import ms_to_ns
from tfolab.model.events import Recorder, Side
from tfolab.model.options import syn_options
from tfolab.model.predict import Headline
from tfolab.model.sock import TcpSock
from tfolab.model.wire import Env, Wire

INVALID_RATELIMIT_MS = 500.0  # net.ipv4.tcp_invalid_ratelimit


def replay_wire(original: Wire, connection: int, event_id: int) -> Wire:
    """The captured SYN, byte for byte, now routed as the replayed connection."""
    return replace(original, connection=connection, event_id=event_id)


def send_replay(
    env: Env,
    now: int,
    original: Wire,
    *,
    connection: int,
    iteration: int,
    caused_by: int,
) -> Wire:
    """The attacker's raw socket puts the captured SYN on the link again; returns its wire."""
    options = syn_options(original.mss_option or 0, env.wscale)
    if original.cookie is not None:
        options += (original.cookie.option(),)
    event = env.recorder.segment(
        iteration=iteration,
        connection=connection,
        sent_ns=now,
        arrived_ns=env.link.arrival(now),
        sender="client",
        flags=original.flags,
        seq=original.seq,
        ack=original.ack,
        length=len(original.payload),
        options=options,
        cookie=original.cookie,
        what="replayed SYN+data",
        explanation=(
            f"the replayed SYN: iteration 1's SYN, byte for byte (same ports and ISN, its "
            f"{len(original.payload)} B request and its still valid cookie)"
        ),
        cause="the attacker replays a captured SYN",
        caused_by=caused_by,
    )
    wire = replay_wire(original, connection, event.id)
    env.transmit(wire, env.link.arrival(now))
    return wire


@dataclass
class TimeWaitPeer:
    """The client's host for the replayed 4-tuple: connection 1's TIME_WAIT socket, then none.

    `sock` is connection 1's client socket (in TIME_WAIT); its snd_nxt and
    rcv_nxt are the numbers its ACKs carry. `route` is the replayed
    connection's number, where its segments travel. `synack_waits`: the
    SYN-ACK waits on its CPU's backlog until the answer's send() runs that
    softirq (loop.World._answer_holds), so TIME_WAIT has both at once.
    """

    sock: TcpSock
    route: int
    iteration: int
    headline: Headline
    alive: bool = True
    last_oow_ack_ns: int | None = None
    synack_waits: bool = False
    waiting: Wire | None = None

    def receive(self, now: int, wire: Wire, *, waited: bool = False) -> None:
        """A segment of the replayed connection reaches the client's host (`waited`: the
        SYN-ACK that waited for the answer's send(), see `synack_waits`)."""
        if self.synack_waits and wire.syn:
            self.waiting = wire
            return
        if self.waiting is not None and wire.payload:
            waiting, self.waiting, self.synack_waits = self.waiting, None, False
            self.receive(now, waiting, waited=True)
        if "RST" in wire.flags:
            if self.alive and wire.stale and wire.seq == self.sock.rcv_nxt:
                self.alive = False
                recorder = self.sock.env.recorder
                killed = recorder.note(
                    now,
                    iteration=self.iteration,
                    connection=self.sock.connection,
                    side="client",
                    text=(
                        "the RST carries exactly the TIME_WAIT socket's rcv_nxt: "
                        "tcp_timewait_state_process kills it (TIME_WAIT assassination, "
                        "net.ipv4.tcp_rfc1337 = 0)"
                    ),
                    cause="RST arrived",
                    caused_by=wire.event_id,
                ).id
                if self.headline.end_id is None:
                    return  # the response is still to come: it will meet no socket
                recorder.note(
                    now,
                    iteration=self.iteration,
                    connection=self.route,
                    side="server",
                    text=(
                        "not drawn: the replayed child waits in SYN_RECV; about 1 s after its "
                        "SYN-ACK (TCP_TIMEOUT_INIT) it resends it, the client's host (no socket "
                        "now) answers RST, tcp_reset kills the child, the application sees "
                        "ECONNRESET"
                    ),
                    cause="the lab stops here",
                    caused_by=killed,
                )
            return  # a RST is never answered
        if wire.payload and self.headline.end_id is None:
            self.headline.end_id = self.sock.env.recorder.note(
                now,
                iteration=self.iteration,
                connection=self.route,
                side="client",
                text=(
                    f"the response to the replayed request ({len(wire.payload)} B) reaches the "
                    "client's host: the server application has received and answered the "
                    "request a second time"
                ),
                cause=f"{wire.what} arrived",
                caused_by=wire.event_id,
            ).id
        if not self.alive:
            self._reset(now, wire)
            return
        limited = not wire.payload or wire.syn
        ratelimit_ns = ms_to_ns(INVALID_RATELIMIT_MS)
        recent = self.last_oow_ack_ns is not None and now - self.last_oow_ack_ns < ratelimit_ns
        if limited and recent:
            return  # tcp_oow_rate_limited: TCPACKSkippedTimeWait
        if limited:
            self.last_oow_ack_ns = now
        what = "SYN-ACK" if wire.syn else wire.what
        self._ack(
            now,
            wire,
            f"iteration 1's socket, in TIME_WAIT, gets the replayed connection's {what}: "
            "out of its window, so tcp_timewait_state_process answers with an ACK of its "
            "own old numbers (tcp_v4_timewait_ack)"
            + ("" if limited else "; data is never rate-limited")
            + (
                "; the SYN-ACK had waited on its CPU's backlog until the answer's send() "
                "ran that softirq"
                if waited
                else ""
            ),
        )

    def _reset(self, now: int, wire: Wire) -> None:
        """No socket any more: tcp_v4_rcv -> tcp_v4_send_reset (seq = the segment's ack)."""
        send_reset(
            self.sock.env,
            now,
            wire,
            sender="client",
            iteration=self.iteration,
            recorded_on=self.route,
            routed_on=self.route,
            explanation=(
                f"the {wire.what} reaches a host with no socket for it any more (the TIME_WAIT "
                "socket was killed): tcp_v4_send_reset answers with a RST whose seq is its ack"
            ),
            cause=f"{wire.what} arrived",
        )

    def _ack(self, now: int, wire: Wire, explanation: str) -> None:
        time_wait.send_ack(
            self.sock, now, wire, explanation, route=self.route, iteration=self.iteration
        )


def reset_stale_ack(sock: TcpSock, now: int, wire: Wire) -> None:
    """tcp_rcv_state_process in SYN_RECV: tcp_ack refuses an ACK of another connection's
    numbers, so tcp_v4_send_reset answers it: a RST whose seq is that ACK's ack number.

    The RST carries the old connection's numbers; it is recorded on that
    connection (the one the refused ACK's event belongs to).
    """
    send_reset(
        sock.env,
        now,
        wire,
        sender="server",
        iteration=sock.iteration,
        recorded_on=_event_connection(sock.env.recorder, wire.event_id),
        routed_on=sock.connection,
        explanation=(
            "the replayed child (SYN_RECV) gets an ACK of iteration 1's numbers: tcp_ack "
            "refuses it and tcp_v4_send_reset answers with a RST whose seq is that ACK's "
            "ack number; the child itself stays"
        ),
        cause="an ACK of another connection arrived",
        stale=True,
    )


def send_reset(
    env: Env,
    now: int,
    wire: Wire,
    *,
    sender: Side,
    iteration: int,
    recorded_on: int,
    routed_on: int,
    explanation: str,
    cause: str,
    stale: bool = False,
) -> None:
    """tcp_v4_send_reset: a RST whose seq is the refused segment's ack, recorded and sent.

    `recorded_on` is the connection the ladder draws it on, `routed_on` the one
    the loop delivers it to; `stale` marks numbers of another connection.
    """
    assert wire.ack is not None
    event = env.recorder.segment(
        iteration=iteration,
        connection=recorded_on,
        sent_ns=now,
        arrived_ns=env.link.arrival(now),
        sender=sender,
        flags=("RST",),
        seq=wire.ack,
        ack=None,
        length=0,
        options=(),
        cookie=None,
        what="RST",
        explanation=explanation,
        cause=cause,
        caused_by=wire.event_id,
    )
    rst = Wire(
        sender, routed_on, ("RST",), wire.ack, None, b"", None, None, event.id, "RST", stale=stale
    )
    env.transmit(rst, env.link.arrival(now))


def _event_connection(recorder: Recorder, event_id: int) -> int:
    return recorder.get(event_id).connection

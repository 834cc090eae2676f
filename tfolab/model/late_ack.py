"""A race ACK and its FIN at D = 0: the ACK may arrive after the FIN, or the FIN be lost.

A delayed-ACK timer that may beat the application's segment (Timer.race, see
output._ack_sent) has two outcomes the comparison already accepts: the FIN
carries the ACK, or the timer's pure ACK leaves just before it. This module
states a third and a fourth, and what the kernel does in them (Linux 6.1 and
6.18 alike).

Rules:
- Only without a delay (D = 0). The timer's ACK leaves from the timer's
  softirq on one CPU, the FIN from the application's close() on another, and
  lo hands each packet to the receive backlog of the CPU that sent it
  (loopback_xmit -> __netif_rx -> enqueue_to_backlog(smp_processor_id())):
  the peer may process the FIN first. The capture stamps arrivals, so it shows
  that order. With a delay both wait in one queue (netem's tfifo, or the
  NFQUEUE delayer's single thread) and leave in the order they were sent.
- Only where the FIN puts the peer in TIME_WAIT: the peer closed first, and
  the FIN acknowledges the peer's FIN. tcp_rcv_state_process takes the ACK
  (FIN_WAIT1 -> FIN_WAIT2), tcp_fin sends the peer's last ACK and calls
  tcp_time_wait.
- The late ACK's sequence number is then below the TIME_WAIT socket's
  rcv_nxt, so tcp_timewait_state_process answers it (TCP_TW_ACK; on 6.18
  TCP_TW_ACK_OOW): tcp_v4_timewait_ack sends the socket's own last numbers,
  the same segment as its last ACK. The first such answer is never
  rate-limited (tw_last_oow_ack_time starts at 0).
- Of the peer's two ACKs the first to arrive closes the LAST_ACK socket
  (tcp_rcv_state_process -> tcp_done); the other meets no socket, and
  tcp_v4_send_reset answers with a RST whose sequence number is that ACK's
  acknowledgment number (no ACK flag, no options).
- That RST sits exactly at the TIME_WAIT socket's rcv_nxt, so
  tcp_timewait_state_process kills the socket (RFC 1337's assassination,
  done while net.ipv4.tcp_rfc1337 = 0, the default). Nothing more is sent.

A fourth outcome, of the same race and under the same conditions, loses the
FIN. The timer's ACK and the FIN reach the peer on two CPUs at once; the ACK's
CPU takes the peer's socket from FIN_WAIT1 to FIN_WAIT2 and, the socket being
orphaned by close() and tcp_fin_time not above TCP_TIMEWAIT_LEN (the default),
replaces it with a TIME_WAIT socket (tcp_rcv_state_process, TCP_FIN_WAIT1 ->
tcp_time_wait -> tcp_done). The FIN's CPU had looked the full socket up
before that and waited in bh_lock_sock; it then hands the FIN to a socket in
TCP_CLOSE, which tcp_rcv_state_process discards (SKB_DROP_REASON_TCP_CLOSE).
The kernel's own comment there names it: "We still can lose it now, if it
spins in bh_lock_sock(), but it is really marginal case" (6.1 and 6.12 read
alike). So the timer's ACK arrives and the peer's last ACK never leaves; the
FIN is sent again by its loss probe or RTO, at least TCP_RTO_MIN (200 ms)
later, after the capture's tail. Seen on 6.18 (`fastopen cookie` at D = 0,
connection 2 of 3: the ACK and the FIN 1 us apart, no last ACK), and the same
symptom once on 6.1 (`invalid-cookie`, which has the same race).

A race whose carrier is data, not a FIN, has no late outcome here: the model
does not state what the peer answers to an ACK older than what it has seen.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tfolab.model.events import Event, Segment, Side, Timer
from tfolab.model.options import TcpOption, Timestamps


@dataclass(frozen=True)
class LateSegment:
    """A segment of the late outcome, stated as the comparison compares it."""

    sender: Side
    flags: tuple[str, ...]
    seq: int
    ack: int | None
    options: tuple[TcpOption, ...]
    what: str  # "the timer's ACK", "TIME_WAIT's answer", "the reset"


@dataclass(frozen=True)
class LateArrival:
    """The third outcome of one delayed-ACK race."""

    timer: int  # the race Timer's id
    carrier: int  # the FIN segment the timer raced
    # the peer's last ACK (of that FIN): TIME_WAIT's answer repeats it; the lost FIN's
    # outcome has none
    last_ack: int
    after: tuple[LateSegment, ...]  # arriving after the carrier, in order


def late_arrivals(events: tuple[Event, ...], one_way_delay_ms: float) -> tuple[LateArrival, ...]:
    """Each race ACK that may arrive after its FIN, with what answers it (see the rules)."""
    if one_way_delay_ms:
        return ()
    segments = {e.id: e for e in events if isinstance(e, Segment)}
    found = []
    for timer in (e for e in events if isinstance(e, Timer) and e.race):
        carrier = segments.get(timer.caused_by) if timer.caused_by is not None else None
        if carrier is None or "FIN" not in carrier.flags:
            continue
        answer = _time_wait_answer(carrier, segments.values())
        if answer is None:
            continue
        found.append(
            LateArrival(
                timer=timer.id,
                carrier=carrier.id,
                last_ack=answer.id,
                after=(
                    LateSegment(
                        carrier.sender, ("ACK",), carrier.seq, carrier.ack, (Timestamps(),),
                        "the timer's ACK",
                    ),
                    LateSegment(
                        answer.sender, answer.flags, answer.seq, answer.ack, answer.options,
                        "TIME_WAIT's answer",
                    ),
                    LateSegment(carrier.sender, ("RST",), carrier.end_seq, None, (), "the reset"),
                ),
            )
        )  # fmt: skip
    return tuple(found)


def _time_wait_answer(carrier: Segment, segments: Iterable[Segment]) -> Segment | None:
    """The peer's last ACK, if the carrier FIN put the peer in TIME_WAIT (it acknowledges
    the peer's own FIN); None otherwise."""
    same = [s for s in segments if s.connection == carrier.connection]
    peer_fin = any(
        s.sender == carrier.receiver and "FIN" in s.flags and s.end_seq == carrier.ack for s in same
    )
    if not peer_fin:
        return None
    answers = [
        s
        for s in same
        if s.sender == carrier.receiver
        and not s.lost
        and s.arrived_ms >= carrier.arrived_ms
        and s.flags == ("ACK",)
        and s.length == 0
        and s.ack == carrier.end_seq
    ]
    return min(answers, key=lambda s: s.arrived_ms, default=None)

"""The send side's records: what is in flight, and which write each byte came from.

Rules:
- A Flight is one sent, not yet acknowledged piece of sequence space (the
  kernel's skb on the retransmit queue): a SYN (with or without data), data,
  or a FIN. It leaves the list once an ACK covers its end (tcp_clean_rtx_queue);
  `packets_out` is the length of the list.
- Only a Flight never retransmitted gives an RTT sample (Karn's rule).
- A WriteMark remembers one application write's sequence range, so that the
  segments carrying it can be named after it ("write 1", "request (part)");
  marks are dropped once acknowledged.
- A segment ends a write (and gets PSH) when its last byte is a write's last.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass
class Flight:
    """A sent, unacknowledged piece of sequence space."""

    seq: int
    end: int
    sent_ns: int
    retransmitted: bool
    event_id: int  # the Segment event that carried it
    data: bool = True  # False for a bare SYN, SYN-ACK or FIN
    dropped: bool = False  # its peer dropped it (retransmit.py): the timer will fire


@dataclass(frozen=True)
class LostTail:
    """A lone data segment or FIN the path lost, waiting for its tail-loss probe
    (loss_probe.py); `end` counts the FIN's sequence number."""

    seq: int
    end: int
    flags: tuple[str, ...]
    payload: bytes
    what: str
    event_id: int


@dataclass(frozen=True)
class Resend:
    """A lost lone segment that a timer is sending again (the probe, the RTO): the
    segment, and the width in ticks of the bucket the timer fired from (a timer
    armed as it fires sits on that bucket's grid)."""

    tail: LostTail
    width: int


@dataclass(frozen=True)
class WriteMark:
    """One application write, to name the segments that carry it."""

    start: int
    end: int
    name: str


def segment_name(marks: Iterable[WriteMark], seq: int, end: int) -> str:
    """The writes a segment [seq, end) carries: 'write 1+write 2 (part)', or 'data'."""
    names = []
    for mark in marks:
        if mark.end <= seq or mark.start >= end:
            continue
        whole = mark.start >= seq and mark.end <= end
        names.append(mark.name if whole else f"{mark.name} (part)")
    return "+".join(names) or "data"


def ends_a_write(marks: Iterable[WriteMark], end: int) -> bool:
    """True when sequence number `end` is just past the last byte of some write."""
    return any(mark.end == end for mark in marks)

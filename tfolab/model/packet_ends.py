"""Where a capture shows a sender's GSO packets ended: the GSO-size race's outcome as
the kernel took it (Segment.psh_race; simulation.captured_packet_ends).

Where a train of ACKs lets a sender's packets end is a race on the host's timing
(output._note_tso_race): the round trip tcp_tso_autosize sees, and how spread out the
ACKs arrive, each releasing its own quota. Where the packets end decides more than
the PSH flags: a packet of one segment is the sender's clone, which the receiver's
skb_try_coalesce refuses to grow (skb_cloned(to)), so the next segment starts a skb
of its own and every window after it is a head lower. The capture shows the ends, so
the model can be made to end its packets there and predict the rest from its rules.

Rules (__tcp_transmit_skb, 6.1 and 6.18: "Force a PSH flag on all (GSO) packets to
expedite GRO flush of the skb", and "we do not force the PSH flag for non GSO
packets"):
- a data segment with PSH ends its packet (a write's end and a forced_push mark also
  end one, and only ever at a packet's end);
- one without PSH ends none where its packet has two segments or more so far; a packet
  of one segment shows no PSH either, so there the capture says nothing and the
  model's own decision stands;
- output.push takes a decision only where the model names the race (Segment.psh_race),
  never past the congestion window's quota (tcp_cwnd_test binds the kernel too), and
  never against an end the model's other rules make (a sendmsg skb's end before 6.10,
  the receive window's edge, a Nagle hold, the answer's last byte).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tfolab.model.captured import CapturedRow
from tfolab.model.events import Side

# (connection, sender, the relative sequence number its data ends at)
SegmentEnd = tuple[int, Side, int]


@dataclass(frozen=True)
class CapturedEnds:
    """The data segments a capture holds, and those of them that carry PSH."""

    shown: frozenset[SegmentEnd] = frozenset()
    pushed: frozenset[SegmentEnd] = frozenset()

    @classmethod
    def of(cls, rows: Iterable[CapturedRow]) -> CapturedEnds:
        """The captured rows' data segments (none the path lost: the drop, not the sender,
        decides what a lost one shows)."""
        data = [r for r in rows if r.length and not r.lost]
        return cls(
            shown=frozenset((r.connection, r.sender, r.seq + r.length) for r in data),
            pushed=frozenset(
                (r.connection, r.sender, r.seq + r.length) for r in data if "PSH" in r.flags
            ),
        )

    def ends_packet(self, end: SegmentEnd, segments_so_far: int) -> bool | None:
        """Did the kernel end a packet with the segment that ends at `end`, the
        `segments_so_far`-th of its packet: True, False, or None where the capture cannot
        tell (no such segment, or a packet of one segment, which carries no PSH)."""
        if end not in self.shown:
            return None
        if end in self.pushed:
            return True
        return False if segments_so_far > 1 else None

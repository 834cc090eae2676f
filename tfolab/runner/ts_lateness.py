"""How late netem released each captured segment, measured from the segment's own TSval.

Rules:
- netem holds packets in lo's qdisc and measures nothing; the capture sees each packet
  only after it (capture.py). On a slow or emulated host the qdisc's release can come
  tens of milliseconds after its due time (sent + D): the link the model was asked for
  was not the one the kernel had, a backend error that the comparison must be told, as
  the NFQUEUE delayer tells its own (CapturedSegment.late_ns).
- A segment's TSval is TCP's clock in milliseconds when it was sent: the skb's departure
  time (skb_mstamp_ns, ktime_get_ns) divided to ms, plus the connection's random offset
  (6.1: tcp_skb_timestamp in tcp_established_options and tcp_syn_options; 6.18:
  tcp_skb_timestamp_ts, in ms unless the route has the tcp_usec_ts feature, which the lab's
  namespace never sets). So for one sender on one connection, capture time - TSval =
  D + lateness + the send time's sub-millisecond part - ts_off. Its least value over that
  sender's segments holds the constant part; each segment's excess over it is its
  lateness, less the least one's, plus under 1 ms of truncation. The lateness kept is
  that excess less 1 ms, never below 0: a lower bound (up to 2 ms under, the two
  truncations), which can move a model arrival no later than the link really held it
  (whatever the least one's own lateness was).
- Only what TCP sent at its TSval's time is measured: a frame the same as one captured
  before (the replay scenario's attacker resends a captured SYN byte for byte, TSval and
  all, from a raw socket, long after TCP sent it) keeps late_ns 0, not measured.
- Where the capture already measured a lateness of its own (a lossy run's NFQUEUE
  delayer behind netem records each release), the larger of the two lower bounds is kept.
- Both sides' TSvals wrap at 2**32 ms (49 days): differences are taken modulo 2**32.
- Segments without a TSval (timestamps off) keep late_ns 0: not measured.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from tfolab.runner.capture_decode import CapturedSegment

NS_PER_MS = 1_000_000
TS_GRAIN_NS = NS_PER_MS  # TSval counts whole milliseconds
_WRAP = 2**32


def with_ts_lateness(segments: Sequence[CapturedSegment]) -> list[CapturedSegment]:
    """The segments, each with late_ns measured from its TSval against the least of its
    sender's on its 4-tuple (a lower bound; 0 where it shows none, or no TSval)."""
    first: dict[tuple[str, int, str, int], int] = {}
    gaps: list[int | None] = []
    seen: set[tuple[object, ...]] = set()
    for seg in segments:
        again = (seg.tuple4, seg.flags, seg.seq_abs, seg.ack_abs, seg.length, seg.options.ts_val)
        if seg.options.ts_val is None or again in seen:
            gaps.append(None)
            continue
        seen.add(again)
        gap = _gap_ns(seg, first.setdefault(seg.tuple4, _gap_ns(seg, None)))
        gaps.append(gap)
    least: dict[tuple[str, int, str, int], int] = {}
    for seg, measured in zip(segments, gaps, strict=True):
        if measured is not None:
            least[seg.tuple4] = min(measured, least.get(seg.tuple4, measured))
    out = []
    for seg, measured in zip(segments, gaps, strict=True):
        late = 0 if measured is None else measured - least[seg.tuple4] - TS_GRAIN_NS
        out.append(dataclasses.replace(seg, late_ns=late) if late > seg.late_ns else seg)
    return out


def _gap_ns(seg: CapturedSegment, near: int | None) -> int:
    """capture time - TSval (ns) on TSval's wrapping millisecond clock, taken as the
    value nearest `near` (the sender's first gap) that the wrap allows."""
    assert seg.options.ts_val is not None
    captured_ms, part = divmod(seg.t_ns, NS_PER_MS)
    gap_ms = (captured_ms - seg.options.ts_val) % _WRAP
    if near is not None:
        near_ms = near // NS_PER_MS
        gap_ms = near_ms + (gap_ms - near_ms + _WRAP // 2) % _WRAP - _WRAP // 2
    return gap_ms * NS_PER_MS + part

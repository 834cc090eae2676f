"""Folding a flight of many segments into one arrow, so a big transfer's ladder stays readable.

Rules:
- A flight is a run of FOLD_MIN or more segments of one connection and one
  sender, of one kind (the model's, or the kernel's captured ones), all sent
  within FLIGHT_SPREAD_MS of the first (a tcp_write_xmit burst: the model
  sends them at one instant, the kernel within microseconds): data segments
  each starting where the one before ended, or pure ACKs acknowledging more
  and more (a receiver's quick ACKs, one per segment). Other events between
  them (segments the other way, calls, notes, timers) stay as they are.
- The folded arrow is the run's first segment carrying the whole run: its
  length is the run's bytes, its flags the last segment's (the PSH, if any,
  is there), its arrival the last one's. The other segments are hidden: they
  draw nothing, and a step on one of them shows the folded arrow.
- Its label says what was folded: "10 segments, 14,480 bytes, seq 1-14481",
  "9 ACKs, up to ack=14481" (shorter variants where room is short).
- Pure: events in, events out (the same length, so every index still names
  the same step).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from tfolab.model.events import Event, Segment

FOLD_MIN = 4  # fewer segments read well as separate arrows
FLIGHT_SPREAD_MS = 0.5  # a burst's segments leave within this of its first


@dataclass(frozen=True)
class FlightFolds:
    """The timeline with its flights folded (same length as the input)."""

    events: tuple[Event, ...]
    hidden: frozenset[int] = frozenset()  # segments drawn as part of another's arrow
    counts: dict[int, int] = field(default_factory=dict)  # folded arrow's index -> segments
    folded_into: dict[int, int] = field(default_factory=dict)  # hidden index -> folded arrow's


def fold_flights(events: Sequence[Event]) -> FlightFolds:
    """Fold every flight of FOLD_MIN or more segments (see the module's rules)."""
    folded: list[Event] = list(events)
    hidden: set[int] = set()
    counts: dict[int, int] = {}
    folded_into: dict[int, int] = {}
    for run in _runs(events):
        if len(run) < FOLD_MIN:
            continue
        first = run[0]
        members = [events[i] for i in run]
        folded[first] = _folded([m for m in members if isinstance(m, Segment)])
        counts[first] = len(run)
        for member in run[1:]:
            hidden.add(member)
            folded_into[member] = first
    return FlightFolds(tuple(folded), frozenset(hidden), counts, folded_into)


def fold_label_variants(segment: Segment, segments: int) -> list[str]:
    """A folded arrow's label, longest first."""
    if not segment.length:
        acks = f"{segments} ACKs"
        return [f"{acks}, up to ack={segment.ack}", acks]
    flags = ",".join(segment.flags)
    start, end = segment.seq, segment.seq + segment.length
    return [
        f"{flags} {segments} segments, {segment.length:,} bytes, seq {start}-{end}",
        f"{segments} segments, {segment.length:,} bytes, seq {start}-{end}",
        f"{segments} segments, {segment.length:,} bytes",
        f"{segments} segs, {segment.length:,} B",
    ]


def _runs(events: Sequence[Event]) -> list[list[int]]:
    """Every flight's event indexes, in order; each (connection, sender, kind) has its
    own, so the model's and the kernel's segments (the "both" view) fold apart."""
    runs: list[list[int]] = []
    open_runs: dict[tuple[int, str, str], list[int]] = {}
    for index, event in enumerate(events):
        if not isinstance(event, Segment):
            continue
        key = (event.connection, event.sender, type(event).__name__)
        run = open_runs.get(key)
        if run is not None and _continues(events[run[0]], events[run[-1]], event):
            run.append(index)
            continue
        if run is not None:
            runs.append(run)
        open_runs[key] = [index]
    runs.extend(open_runs.values())
    return sorted(runs)


def _continues(first: Event, last: Event, following: Segment) -> bool:
    assert isinstance(first, Segment) and isinstance(last, Segment)
    if type(following) is not type(first) or following.flags[:1] == ("SYN",):
        return False
    if following.sent_ms - first.sent_ms > FLIGHT_SPREAD_MS:
        return False
    if first.length:  # data: each starts where the one before ended
        return bool(following.length) and following.seq == last.seq + last.length
    # pure ACKs (no FIN, no SYN): acknowledging more and more
    return (
        not following.length
        and following.flags == ("ACK",) == first.flags
        and (following.ack or 0) >= (last.ack or 0)
    )


def _folded(run: list[Segment]) -> Segment:
    first, last = run[0], run[-1]
    return dataclasses.replace(
        first,
        length=sum(s.length for s in run),
        flags=last.flags,
        arrived_ms=last.arrived_ms,
        ack=last.ack,
        window=last.window,
    )

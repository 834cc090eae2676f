"""The applications' own wake-ups, measured: how much longer than the model each call
took after the segment that woke it.

Rules:
- The model's applications take no time (model/apps.py): each call is made the instant
  the segment that woke it arrived. The real ones take a few microseconds, and after a
  second asleep on a loaded host a few milliseconds (docs/TCP-NOTES.md). What follows a
  call moves with it, so the comparison moves the model's arrivals by the lateness
  measured on their causal path, as it does with the delay backend's (tfolab.lab.packets).
- A WakeHop is a model call (read, write or sendto, close) whose causal chain reaches a
  segment through calls alone: that segment woke the application. A call reached
  through a timer has none (nothing woke it); nor has a call reached through its
  iteration's start (its first call, included): the start is measured (the client's
  sample) and the comparison aligns each iteration on it, so what came before the start
  is already counted there, never again by a call after it (a repeat Fast Open
  connect()'s write after the last iteration's close).
- A hop's lateness is the first call the application stamped of that kind, on that
  connection and side, at or after the waking segment's captured arrival and not taken
  by an earlier hop (calls in time order: a round's two writes take a stamp each):
  (stamp - arrival) - the model's (call - arrival), less what the calls between them on
  the same hop already counted, so that a path's lateness sums to its last call's.
- A stamp made after the next segment that arrived on that side is not counted: the
  application may have waited for that segment, and a wait of TCP's stays the model's to
  answer for (a missed wait is never explained away as a slow application).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import msgspec

from tfolab.model import AppCall, Segment, Simulation
from tfolab.model.captured import CallName, CapturedCall
from tfolab.model.events import Side

# the model's calls that an application makes when a segment wakes it, by what the
# applications stamp (the client's sendto is its write)
_STAMPED: dict[str, CallName] = {
    "read": "read",
    "write": "write",
    "sendto": "write",
    "close": "close",
}


@dataclass(frozen=True)
class WakeHop:
    """A model call that a segment's arrival woke the application to make."""

    call_id: int
    wake_id: int  # the Segment whose arrival woke it
    connection: int  # the model's connection, numbered as the compared rows are
    side: Side
    call: CallName
    gap_ms: float  # the model's: the call's time - the waking segment's arrival
    between: tuple[int, ...]  # the hop's calls after the waking segment and before this one
    model_connection: int = 0  # the simulation's own number for the connection


@dataclass(frozen=True)
class KernelArrival:
    """A captured segment's arrival, as the lateness needs it."""

    connection: int
    sender: Side
    arrived_ms: float


def wake_hops(sim: Simulation, number: Mapping[int, int]) -> tuple[WakeHop, ...]:
    """Every call of the simulation that a segment woke its application to make, in time
    order; `number`: the compared rows' connection numbers (a connection without one is
    not compared)."""
    by_id = {e.id: e for e in sim.events}
    starts = {p.path[0] for p in sim.predictions if p.path}
    hops = []
    for event in sim.events:
        if not isinstance(event, AppCall) or event.call not in _STAMPED:
            continue
        if event.connection not in number or event.id in starts:
            continue
        between: list[int] = []
        cause = by_id.get(event.caused_by) if event.caused_by is not None else None
        while isinstance(cause, AppCall) and cause.id not in starts:
            between.append(cause.id)
            cause = by_id.get(cause.caused_by) if cause.caused_by is not None else None
        if not isinstance(cause, Segment) or cause.lost:
            continue
        hops.append(
            WakeHop(
                event.id,
                cause.id,
                number[event.connection],
                event.side,
                _STAMPED[event.call],
                round(event.time_ms - cause.arrived_ms, 6),
                tuple(reversed(between)),
                event.connection,
            )
        )
    return tuple(hops)


def numbered_calls(
    calls: Iterable[CapturedCall], number: Mapping[int, int]
) -> tuple[CapturedCall, ...]:
    """The calls on compared connections, numbered as the captured rows are."""
    return tuple(
        msgspec.structs.replace(c, connection=number[c.connection])
        for c in calls
        if c.connection in number
    )


@dataclass(frozen=True)
class SlowWake:
    """A woken application whose first call came after the next segment reached its
    side: the kernel handled that segment first, which the model's instant
    applications cannot show; the delay is its stamp's time after the waking segment."""

    hop: WakeHop
    delay_ms: float


def _first_stamp(
    hop: WakeHop, calls: Sequence[CapturedCall], woke_at: float, used: set[int]
) -> int | None:
    return next(
        (
            k
            for k, c in enumerate(calls)
            if k not in used
            and c.connection == hop.connection
            and c.side == hop.side
            and c.call == hop.call
            and c.t_ms >= woke_at
        ),
        None,
    )


def _next_arrival(hop: WakeHop, arrivals: Sequence[KernelArrival], woke_at: float) -> float:
    return min(
        (
            a.arrived_ms
            for a in arrivals
            if a.connection == hop.connection and a.sender != hop.side and a.arrived_ms > woke_at
        ),
        default=math.inf,
    )


def slow_wakes(
    hops: Sequence[WakeHop],
    calls: Sequence[CapturedCall],
    wake_arrivals: Mapping[int, float],
    arrivals: Sequence[KernelArrival],
) -> list[SlowWake]:
    """The hops whose application, woken, made its first call only after the next
    segment arrived on its side (what app_lateness leaves out): each with its delay.
    Only a turn's first stamped call (connect() returning is not stamped: the write
    after it is the first)."""
    stamped = {h.call_id for h in hops}
    return [
        SlowWake(hop, round(stamp - woke_at - hop.gap_ms, 4))
        for hop, woke_at, stamp in _told(hops, calls, wake_arrivals)
        if not stamped.intersection(hop.between)  # the turn's first stamped call
        and stamp >= _next_arrival(hop, arrivals, woke_at)
    ]


def _told(
    hops: Sequence[WakeHop], calls: Sequence[CapturedCall], wake_arrivals: Mapping[int, float]
) -> Iterator[tuple[WakeHop, float, float]]:
    """(hop, its waking segment's captured arrival, the stamp that tells its call) for
    each hop that has both, in the hops' order: each stamp tells one call."""
    used: set[int] = set()
    for hop in hops:
        woke_at = wake_arrivals.get(hop.wake_id)
        if woke_at is None:
            continue
        told = _first_stamp(hop, calls, woke_at, used)
        if told is None:
            continue
        used.add(told)
        yield hop, woke_at, calls[told].t_ms


def app_lateness(
    hops: Sequence[WakeHop],
    calls: Sequence[CapturedCall],
    wake_arrivals: Mapping[int, float],
    arrivals: Sequence[KernelArrival],
) -> dict[int, float]:
    """Each hop's measured lateness (ms) by its call's event id; a hop without a stamp it
    may be told by is absent. `wake_arrivals`: the captured arrival of each model segment
    the kernel sent alike, by event id; `arrivals`: every captured segment."""
    late: dict[int, float] = {}
    for hop, woke_at, stamp in _told(hops, calls, wake_arrivals):
        if stamp >= _next_arrival(hop, arrivals, woke_at):
            continue
        total = stamp - woke_at - hop.gap_ms
        late[hop.call_id] = round(total - sum(late.get(b, 0.0) for b in hop.between), 4)
    return late

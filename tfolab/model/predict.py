"""Predictions from the timeline: the critical path of every measured iteration.

Rules:
- An iteration's headline runs from its start event to its end event (chosen
  by the client script). Its predicted duration is the difference of their
  times in the simulated timeline; nothing is looked up or hard-coded.
- The critical path is found by following `caused_by` back from the end event
  to the start. The tolerance is built from that path:
  one timer tick for every timer that fired on it (the jiffies phase is
  unknowable, and a timer fires up to one tick after its nominal delay), or
  the timer wheel's granularity for a long timer armed off the wheel's grid
  (Timer.spread_ticks: 8 ticks for 1 s at HZ 250, whose bucket the jiffies
  counter's unknowable value decides),
  + the number of segments on it x the backend's per-packet delay error,
  + the host overhead of one measured interval.
- Every segment has a band of its own, built the same way from its own
  causal chain back to its iteration's start (`segment_bands`): what its path
  can add, never another segment's.
- The delayed segments behind each segment are named too (`segment_paths`):
  where the delay backend measured how late it released each of them, the
  comparison moves the prediction by that (the backend's own error,
  measured): later by those on its own chain, earlier by those only on its
  iteration's start's. The band keeps its width.
- The explanation names the path: "4D: SYN, SYN-ACK, request, response", or
  "4D + delayed ACK (40-44 ms at HZ=250): write 1, [server delayed-ACK timer
  44.0 ms], ACK, write 2, echo".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import NamedTuple

from tfolab.model.events import AppCall, Event, Segment, Timer

# how a fired timer on a critical path is named in its steps
TIMER_NAMES = {
    "delack": "delayed-ACK timer",
    "rto": "retransmission timer",
    "syn": "SYN timer",
    "synack": "SYN-ACK timer",
    "tlp": "tail-loss probe timer",
}


@dataclass
class Headline:
    """The events one measured iteration runs between; the client script fills them in."""

    start_id: int | None = None
    end_id: int | None = None


@dataclass(frozen=True)
class Accuracy:
    """How exact the real run's delay and host are; the runner passes the backend's figures."""

    per_packet_delay_error_ms: float = 0.2  # the delay backend's error per delayed packet
    host_overhead_ms: float = 0.5  # stack + scheduling overhead per measured interval
    # A round trip beyond 2D as the run measured it on its own handshakes (connect()
    # against the model's 2D; simulation.with_measured_round_trip), 0: not measured.
    # Where larger than the backend's two packets' error, the senders' srtt may carry it.
    measured_round_trip_excess_ms: float = 0.0


@dataclass(frozen=True)
class IterationPrediction:
    i: int  # 1-based
    predicted_ms: float
    tolerance_ms: float
    explanation: str
    packets_on_path: int = 0
    timers_on_path: int = 0
    path: tuple[int, ...] = ()  # event ids from start to end
    # what the path is made of, in words: each segment's and each fired timer's
    steps: tuple[str, ...] = ()
    # the fired timers on the path, by name ("delack", "rto", "syn", "synack", "tlp"), in
    # path order
    timer_names: tuple[str, ...] = ()

    @property
    def low_ms(self) -> float:
        return max(0.0, self.predicted_ms - self.tolerance_ms)

    @property
    def high_ms(self) -> float:
        return self.predicted_ms + self.tolerance_ms

    def contains(self, measured_ms: float) -> bool:
        return self.low_ms <= measured_ms <= self.high_ms

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        del data["steps"], data["timer_names"]  # the explanation says them
        data["path"] = list(self.path)
        data["low_ms"] = round(self.low_ms, 6)
        data["high_ms"] = round(self.high_ms, 6)
        return data


def critical_path(by_id: dict[int, Event], start_id: int, end_id: int) -> list[Event]:
    start = by_id[start_id]
    chain: list[Event] = []
    current: Event | None = by_id[end_id]
    while current is not None:
        chain.append(current)
        if current.id == start_id or current.caused_by is None:
            break
        parent = by_id[current.caused_by]
        if parent.time_ms < start.time_ms:
            break
        current = parent
    chain.reverse()
    return chain


def predict(
    events: tuple[Event, ...],
    headlines: dict[int, Headline],
    iterations: int,
    *,
    hz: int,
    accuracy: Accuracy,
) -> tuple[IterationPrediction, ...]:
    by_id = {e.id: e for e in events}
    tick_ms = 1000.0 / hz
    ato_ms = (max(hz // 25, 1)) * 1000.0 / hz
    out = []
    for i in range(1, iterations + 1):
        head = headlines.get(i)
        if head is None or head.start_id is None or head.end_id is None:
            raise RuntimeError(f"iteration {i} has no headline in the simulated timeline")
        path = critical_path(by_id, head.start_id, head.end_id)
        predicted = by_id[head.end_id].time_ms - by_id[head.start_id].time_ms
        # a segment the path lost takes no D: its timer's wait stands for it
        segments = [e for e in path if isinstance(e, Segment) and not e.lost]
        fired = [e for e in path if isinstance(e, Timer) and e.action == "fired"]
        tolerance = (
            sum(_band_ticks(timer) for timer in fired) * tick_ms
            + len(segments) * accuracy.per_packet_delay_error_ms
            + accuracy.host_overhead_ms
        )
        steps = _steps(path, by_id)
        out.append(
            IterationPrediction(
                i=i,
                predicted_ms=round(predicted, 6),
                tolerance_ms=round(tolerance, 6),
                explanation=_explain(steps, len(segments), fired, ato_ms, tick_ms, hz),
                packets_on_path=len(segments),
                timers_on_path=len(fired),
                timer_names=tuple(timer.name for timer in fired),
                path=tuple(e.id for e in path),
                steps=steps,
            )
        )
    return tuple(out)


def segment_bands(
    events: tuple[Event, ...],
    predictions: tuple[IterationPrediction, ...],
    *,
    hz: int,
    accuracy: Accuracy,
) -> dict[int, float]:
    """Each segment's arrival band (ms): ticks, packets and host overhead on its own path.

    The path runs from the segment back along `caused_by` to its iteration's
    start (the headline's first event; the scenario's start for iteration 0).
    Each fired timer on it adds a tick (the jiffies phase), each segment the
    backend's per-packet error (the segment's own one included), and the
    host overhead is added once. A fired timer further back adds its ticks too
    where the start is not downstream of it: the start does not move with it; and
    for a segment the start does not lead to, so do the timers and the delayed
    segments on the start's own path that are not on the segment's: the segment
    does not move with them (in all, the timers and segments on either path after
    where the two meet).
    """
    by_id = {e.id: e for e in events}
    starts = {p.i: by_id[p.path[0]].time_ms for p in predictions if p.path}
    shared = {p.i: _ancestors(by_id[p.path[0]], by_id) for p in predictions if p.path}
    tick_ms = 1000.0 / hz
    bands: dict[int, float] = {}
    for event in events:
        if not isinstance(event, Segment):
            continue
        start = starts.get(event.iteration, 0.0)
        segments = timers = 0
        own = _ancestors(event, by_id)
        start_path = shared.get(event.iteration, set())
        if start_path and not start_path <= own:
            # a segment the start does not lead to (a SYN lost before the connection the
            # iteration times, a write-write-read round's handshake): the start's own
            # timers and delayed segments move the start against it
            timers += sum(
                _band_ticks(e)
                for i in start_path - own
                if isinstance(e := by_id[i], Timer) and e.action == "fired"
            )
            segments += sum(
                1 for i in start_path - own if isinstance(e := by_id[i], Segment) and not e.lost
            )
        current: Event | None = event
        while current is not None:
            if current.time_ms >= start:
                if isinstance(current, Segment) and not current.lost:
                    segments += 1
                elif isinstance(current, Timer) and current.action == "fired":
                    timers += _band_ticks(current)
            elif (
                isinstance(current, Timer)
                and current.action == "fired"
                and current.id not in shared.get(event.iteration, set())
            ):
                # a timer before the start that the start does not wait for (a SYN sent
                # again while the SYN-ACK was on its way): its bucket moves this segment
                # against the start
                timers += _band_ticks(current)
            current = by_id[current.caused_by] if current.caused_by is not None else None
        bands[event.id] = round(
            timers * tick_ms
            + segments * accuracy.per_packet_delay_error_ms
            + accuracy.host_overhead_ms,
            6,
        )
    return bands


class DelayedPath(NamedTuple):
    """The delayed segments and the application calls whose measured lateness (the delay
    backend's, the applications' wake-ups) moves a segment's arrival against its
    iteration's measured start, by event id: `on` its own causal chain and not the
    start's (itself included: they make it later), `start_only` the start's and not its
    own (they make the start later: a segment sent before it, a handshake's SYN before a
    write-write-read round, arrives earlier against it)."""

    on: tuple[int, ...]
    start_only: tuple[int, ...] = ()


def segment_paths(
    events: tuple[Event, ...], predictions: tuple[IterationPrediction, ...]
) -> dict[int, DelayedPath]:
    """Each segment's DelayedPath: its causal chain's delayed segments against its
    iteration's start event's (the headline's first; none for the setup). Computed where
    a capture is compared (packet_rows.model_rows), not with every simulation."""
    chains: dict[int, frozenset[int]] = {}
    for event in events:  # in time order: each cause before what it caused
        parent = (
            chains.get(event.caused_by, frozenset()) if event.caused_by is not None else frozenset()
        )
        delayed = (isinstance(event, Segment) and not event.lost) or isinstance(event, AppCall)
        chains[event.id] = parent | {event.id} if delayed else parent
    start_chain = {p.i: chains.get(p.path[0], frozenset()) for p in predictions if p.path}
    paths: dict[int, DelayedPath] = {}
    for event in events:
        if not isinstance(event, Segment):
            continue
        own, start = chains[event.id], start_chain.get(event.iteration, frozenset())
        paths[event.id] = DelayedPath(tuple(own - start), tuple(start - own))
    return paths


def path_segments(path: tuple[int, ...], by_id: dict[int, Event]) -> tuple[int, ...]:
    """The delayed segments of an iteration's critical path (IterationPrediction.path),
    the ones its tolerance counts."""
    return tuple(i for i in path if isinstance(e := by_id[i], Segment) and not e.lost)


def _ancestors(event: Event, by_id: dict[int, Event]) -> set[int]:
    """The ids on `event`'s causal path, itself included."""
    found: set[int] = set()
    current: Event | None = event
    while current is not None:
        found.add(current.id)
        current = by_id[current.caused_by] if current.caused_by is not None else None
    return found


def _band_ticks(timer: Timer) -> int:
    """What a fired timer adds to a band, in ticks: the jiffies phase (one tick), and
    where it was armed off the timer wheel's grid, the rest of the wheel's granularity
    at its level either way (the real bucket depends on the jiffies counter's value,
    which the model cannot know): spread_ticks in all."""
    return timer.spread_ticks


def _steps(path: list[Event], by_id: dict[int, Event]) -> tuple[str, ...]:
    """Each segment on the path by what it carries, each fired timer with its wait."""
    steps = []
    for event in path:
        if isinstance(event, Segment):
            steps.append(f"{event.what} (lost)" if event.lost else event.what)
        elif isinstance(event, Timer) and event.action == "fired":
            armed = by_id.get(event.caused_by) if event.caused_by is not None else None
            wait = event.time_ms - armed.time_ms if armed is not None else 0.0
            kind = TIMER_NAMES.get(event.name, f"{event.name} timer")
            steps.append(f"[{event.side} {kind} {wait:.1f} ms]")
    return tuple(steps)


def _explain(
    steps: tuple[str, ...],
    hops: int,
    fired: list[Timer],
    ato_ms: float,
    tick_ms: float,
    hz: int,
) -> str:
    head = f"{hops}D"
    delacks = [t for t in fired if t.name == "delack"]
    if delacks:
        band = f"{ato_ms:g}-{ato_ms + tick_ms:g} ms at HZ={hz}"
        head += " + delayed ACK" if len(delacks) == 1 else f" + {len(delacks)} delayed ACKs"
        head += f" ({band})"
    probes = [t for t in fired if t.name == "tlp"]
    if probes:
        head += " + loss probe" if len(probes) == 1 else f" + {len(probes)} loss probes"
    timeouts = len(fired) - len(delacks) - len(probes)
    if timeouts:
        head += " + retransmission timeout" if timeouts == 1 else f" + {timeouts} timeouts"
    if not steps:
        return f"{head}: no packet on the path"
    return f"{head}: " + ", ".join(steps)

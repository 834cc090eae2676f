"""The kernel's own ladder: captured segments drawn like the model's, and where the two part.

Rules:
- Pure: a LabResult in, what to draw out (LadderContent); no I/O, no styles.
- A captured row becomes a tfolab.model.events.Segment (what = "captured"), so
  the one layout (ladder_layout.py) and the one widget draw it. It arrives at
  its measured time put on the model's clock through its iteration's start on
  each clock (packets.model_starts against Measurement.start_ms), and left D
  before that: each captured arrow sits where it was measured within its
  iteration.
- A captured segment's iteration is that of the model's segment it is matched
  with; an unmatched one belongs to the latest iteration started (on the
  capture's clock) before it arrived.
- Disagreements come segment by segment from packets.pairs, the very
  alignment behind packet_diff, so the ladder and the JSON say the same.
- Connections are numbered as packets.captured_rows numbers them (SYN order);
  a captured segment of a connection whose SYN the capture did not see is
  drawn, as connection 0, but not compared.
- Three views: "model", "captured" and "both" (the two merged in time order,
  the captured arrows in the role "captured"). A captured arrow's label says
  where it parts from the model ("✗ ..."); in "both" one that agrees is only
  "✓ kernel", beside the model's arrow that carries the full label.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from tfolab.lab import packets
from tfolab.lab.packets import Row
from tfolab.lab.session import LabResult, ScenarioResult
from tfolab.model.events import CookieInfo, Event, Segment, Side
from tfolab.runner.protocol import CapturedRow

VIEWS = ("model", "captured", "both")
CAPTURED_ROLE = "captured"
_COOKIE = re.compile(r"^TFO cookie (request|[0-9a-fA-F]+)")


@dataclass(frozen=True)
class KernelSegment(Segment):
    """A captured segment drawn on the ladder; `drawn_label` replaces its arrow's label."""

    drawn_label: str = ""

    def label(self) -> str:
        return self.drawn_label or super().label()


@dataclass(frozen=True)
class CapturedStep:
    """What the capture says about one drawn captured segment."""

    row: CapturedRow  # as captured (a cookie with its bytes)
    connection: int  # numbered as the model numbers them; 0: its SYN was not captured
    iteration: int
    into_ms: float | None  # its arrival from its iteration's start, on the capture's clock
    model_index: int | None  # the model's segment it was matched with (index in sim.events)
    sentence: str = ""  # how it disagrees with the model ("" when it agrees)


@dataclass(frozen=True)
class Comparison:
    """A scenario's capture beside its model, segment by segment."""

    segments: tuple[KernelSegment, ...]  # the captured ones, on the model's clock, in time order
    steps: tuple[CapturedStep, ...]  # one per segment
    model_sentences: dict[int, str]  # index in sim.events -> its disagreement
    sentences: tuple[str, ...]  # every disagreement, in packet_diff's order


@dataclass(frozen=True)
class LadderContent:
    """What the ladder draws in one view, and what the step panel says of each step."""

    view: str
    title: str
    events: tuple[Event, ...] = ()
    roles: dict[int, str] = field(default_factory=dict)  # index -> an arrow's role
    path: frozenset[int] = frozenset()
    markers: dict[int, str] = field(default_factory=dict)
    sentences: dict[int, str] = field(default_factory=dict)  # index -> its disagreement
    captured: dict[int, CapturedStep] = field(default_factory=dict)  # index -> capture facts
    model_at: dict[int, int] = field(default_factory=dict)  # model event index -> index here
    absent: str = ""  # why there is no capture to draw ("" when there is one)
    unplaced: tuple[str, ...] = ()  # disagreements on no drawn segment

    @property
    def empty_text(self) -> str:
        """What the ladder says instead of arrows, when it has none."""
        if self.events:
            return ""
        if self.absent:
            return f"Nothing to draw: {self.absent}."
        return "No events: the scenario did nothing."


# --------------------------------------------------------------- why no capture


def capture_absent(result: LabResult | None) -> str:
    """Why `result` has no captured packets to show or save ("" when it has)."""
    if result is None or not result.measured:
        return "no real run of these settings yet (press r to run it and capture its packets)"
    if result.capture_off:
        return f"packets were not captured: {result.capture_off}"
    if not result.scenarios or result.scenarios[0].captured is None:
        return "the run sent back no capture for this scenario"
    if not result.scenarios[0].captured:
        return "the capture is empty: no TCP segment arrived on lo"
    return ""


def pcap_file_name(lab: str, scenario: str, when: datetime) -> str:
    """tfolab-<lab>-<scenario>-<YYYYmmdd-HHMMSS>.pcap"""
    return f"tfolab-{lab}-{scenario}-{when:%Y%m%d-%H%M%S}.pcap"


def packets_summary(result: LabResult) -> str:
    """One line on the capture, for the banner after a run."""
    absent = capture_absent(result)
    if absent:
        return absent[0].upper() + absent[1:]
    disagreements = sum(len(s.packet_diff) for s in result.scenarios)
    count = sum(len(s.captured or ()) for s in result.scenarios)
    if disagreements:
        plural = "s" if disagreements != 1 else ""
        return f"packets: {disagreements} disagreement{plural} with the model (c shows them)"
    return f"packets: all {count} as the model predicted (c shows them)"


# --------------------------------------------------------------- the comparison


def compare(scenario: ScenarioResult, one_way_delay_ms: float) -> Comparison:
    """The capture of `scenario` as drawable segments, matched against the model's."""
    sim = scenario.simulation
    captured = sorted(scenario.captured or (), key=lambda c: c.t_ms)
    model = packets.model_rows(sim)
    kernel = packets.captured_rows(captured)
    model_start = packets.model_starts(sim)
    kernel_start = {0: 0.0} | {
        m.i: m.start_ms for m in scenario.measurements if m.start_ms is not None
    }
    pairs = packets.pairs(
        model, kernel, model_start, kernel_start, same_instant=not sim.one_way_delay_ms
    )
    event_of = _model_events(sim.events, model)
    model_sentences: dict[int, str] = {}
    matched: dict[int, Row] = {}  # id(kernel row) -> model row
    said: dict[int, str] = {}  # id(kernel row) -> sentence
    for pair in pairs:
        ours, theirs, sentence = pair.model, pair.kernel, pair.sentence
        if ours is not None and theirs is not None:
            matched[id(theirs)] = ours
        if theirs is not None and sentence:
            said[id(theirs)] = sentence
        if ours is not None and sentence and id(ours) in event_of:
            model_sentences.setdefault(event_of[id(ours)], sentence)
    numbered = _numbered(captured, kernel)
    base_id = max((e.id for e in sim.events), default=0) + 1
    segments: list[KernelSegment] = []
    steps: list[CapturedStep] = []
    for k, (row, kernel_row) in enumerate(numbered):
        ours = matched.get(id(kernel_row)) if kernel_row is not None else None
        if ours is not None:
            iteration = ours.iteration
        else:
            started = [i for i, t in kernel_start.items() if t <= row.t_ms]
            iteration = max(started, default=0)
        if iteration in kernel_start and iteration in model_start:
            into: float | None = row.t_ms - kernel_start[iteration]
            arrived = model_start[iteration] + row.t_ms - kernel_start[iteration]
        else:
            into = None
            arrived = model_start.get(0, 0.0) + row.t_ms
        step = CapturedStep(
            row=row,
            connection=kernel_row.connection if kernel_row is not None else 0,
            iteration=iteration,
            into_ms=into,
            model_index=event_of.get(id(ours)) if ours is not None else None,
            sentence=said.get(id(kernel_row), "") if kernel_row is not None else "",
        )
        steps.append(step)
        segments.append(_segment(base_id + k, step, arrived, one_way_delay_ms))
    return Comparison(
        tuple(segments),
        tuple(steps),
        model_sentences,
        tuple(pair.sentence for pair in pairs if pair.sentence),
    )


def _numbered(
    captured: Sequence[CapturedRow], kernel: Sequence[Row]
) -> list[tuple[CapturedRow, Row | None]]:
    """Each captured row (time order) with its compared Row; None where it was not compared.

    packets.captured_rows keeps, in time order, the rows of connections whose
    SYN was captured: a subsequence of `captured`, found by walking both.
    """
    out: list[tuple[CapturedRow, Row | None]] = []
    j = 0
    for row in captured:
        if j < len(kernel) and _same(row, kernel[j]):
            out.append((row, kernel[j]))
            j += 1
        else:
            out.append((row, None))
    return out


def _same(row: CapturedRow, kernel: Row) -> bool:
    return (
        row.t_ms == kernel.arrived_ms
        and row.sender == kernel.sender
        and tuple(row.flags) == kernel.flags
        and (row.seq, row.ack, row.length) == (kernel.seq, kernel.ack, kernel.length)
        and packets.comparable_options(row.options) == kernel.options
    )


def _model_events(events: Sequence[Event], model: Sequence[Row]) -> dict[int, int]:
    """id(model row) -> the index in `events` of the segment it states.

    packets.model_rows states the segments of the measured connections in
    arrival order, with optional race ACKs (no event of their own) in between.
    """
    segments = [(i, e) for i, e in enumerate(events) if isinstance(e, Segment)]
    measured = {e.connection for _, e in segments if e.iteration >= 1}
    chosen = sorted(
        ((i, e) for i, e in segments if e.connection in measured), key=lambda p: p[1].arrived_ms
    )
    certain = [row for row in model if not row.optional]
    if len(certain) != len(chosen):
        return {}
    found: dict[int, int] = {}
    for row, (index, segment) in zip(certain, chosen, strict=True):
        if (row.sender, row.flags, row.seq, row.ack, row.length) != (
            segment.sender,
            segment.flags,
            segment.seq,
            segment.ack,
            segment.length,
        ):
            return {}
        found[id(row)] = index
    return found


def _segment(seg_id: int, step: CapturedStep, arrived_ms: float, delay_ms: float) -> KernelSegment:
    row = step.row
    sender: Side = "client" if row.sender == "client" else "server"
    where = f"connection {step.connection}" if step.connection else "an earlier connection"
    into = (
        f", {step.into_ms:.2f} ms into iteration {step.iteration}"
        if step.into_ms is not None and step.iteration
        else ""
    )
    segment = KernelSegment(
        id=seg_id,
        iteration=step.iteration,
        connection=step.connection,
        sent_ms=arrived_ms - delay_ms,
        arrived_ms=arrived_ms,
        sender=sender,
        flags=tuple(row.flags),
        seq=row.seq,
        ack=row.ack,
        length=row.length,
        options=tuple(row.options),
        cookie=_cookie(row.options),
        what=CAPTURED_ROLE,
        explanation=(
            f"The kernel's segment on {where}, captured on lo: it arrived {row.t_ms:.2f} ms "
            f"after the scenario's first measured call{into}."
        ),
        cause="",
        caused_by=None,
    )
    if step.sentence:
        return dataclasses.replace(segment, drawn_label=f"✗ {segment.label()}")
    return segment


def _cookie(options: Sequence[str]) -> CookieInfo | None:
    for option in options:
        found = _COOKIE.match(option)
        if found:
            kind = 254 if "254" in option[found.end() :] else 34
            if found.group(1) == "request":
                return CookieInfo(kind, 0)
            return CookieInfo(kind, len(found.group(1)) // 2, found.group(1))
    return None


def captured_words(row: CapturedRow) -> str:
    """A captured segment in full: flags, seq, ack, len, options (cookie bytes included)."""
    return packets.segment_words(row.flags, row.seq, row.ack, row.length, row.options)


# --------------------------------------------------------------- the three views


def ladder_content(result: LabResult, view: str) -> LadderContent:
    """What the ladder shows of `result`'s first scenario in `view` (one of VIEWS)."""
    scenario = result.scenarios[0]
    events = tuple(scenario.simulation.events)
    path = critical_path(scenario)
    markers = measured_markers(scenario)
    absent = capture_absent(result)
    comparison = None if absent else compare(scenario, result.delay_ms)
    packet_diff = tuple(sentence for s in result.scenarios for sentence in s.packet_diff)
    if view == "model" or comparison is None:
        sentences = dict(comparison.model_sentences) if comparison else {}
        if view == "model":
            title = "Ladder · model" if result.measured else "Ladder"
        else:
            title = f"Ladder · {'model + ' if view == 'both' else ''}captured (none)"
        drawn = events if view != "captured" else ()
        return LadderContent(
            view,
            title,
            drawn,
            model_at={i: i for i in range(len(drawn))},
            path=frozenset(path) if drawn else frozenset(),
            markers=markers if drawn else {},
            sentences=sentences if drawn else {},
            absent=absent,
            unplaced=_unplaced(packet_diff, sentences.values()) if drawn else packet_diff,
        )
    if view == "captured":
        captured = dict(enumerate(comparison.steps))
        sentences = {k: step.sentence for k, step in captured.items() if step.sentence}
        return LadderContent(
            view,
            "Ladder · captured (the kernel's packets)",
            comparison.segments,
            path=frozenset(k for k, s in captured.items() if s.model_index in path),
            sentences=sentences,
            captured=captured,
            unplaced=_unplaced(packet_diff, sentences.values()),
        )
    return _both(scenario, comparison, path, markers, packet_diff)


def _both(
    scenario: ScenarioResult,
    comparison: Comparison,
    path: set[int],
    markers: dict[int, str],
    packet_diff: tuple[str, ...],
) -> LadderContent:
    """The model's events and the captured segments merged in time order."""
    model = list(scenario.simulation.events)
    keyed = [((e.time_ms, 0, i), ("model", i)) for i, e in enumerate(model)]
    keyed += [((s.time_ms, 1, k), ("captured", k)) for k, s in enumerate(comparison.segments)]
    keyed.sort(key=lambda item: item[0])
    events: list[Event] = []
    at_model: dict[int, int] = {}
    captured: dict[int, CapturedStep] = {}
    for index, (_, (source, k)) in enumerate(keyed):
        if source == "model":
            events.append(model[k])
            at_model[k] = index
        else:
            segment, step = comparison.segments[k], comparison.steps[k]
            if not step.sentence and step.model_index is not None:
                segment = dataclasses.replace(segment, drawn_label="✓ kernel")
            elif not segment.drawn_label:
                segment = dataclasses.replace(segment, drawn_label=f"kernel {segment.label()}")
            else:
                segment = dataclasses.replace(
                    segment, drawn_label=segment.drawn_label.replace("✗ ", "✗ kernel ", 1)
                )
            events.append(segment)
            captured[index] = step
    sentences = {at_model[i]: s for i, s in comparison.model_sentences.items()}
    sentences |= {index: step.sentence for index, step in captured.items() if step.sentence}
    return LadderContent(
        "both",
        "Ladder · model + captured",
        tuple(events),
        roles=dict.fromkeys(captured, CAPTURED_ROLE),
        path=frozenset(at_model[i] for i in path)
        | frozenset(k for k, s in captured.items() if s.model_index in path),
        markers={at_model[i]: text for i, text in markers.items()},
        sentences=sentences,
        captured=captured,
        model_at=at_model,
        unplaced=_unplaced(packet_diff, sentences.values()),
    )


def same_moment(old: LadderContent, index: int, new: LadderContent) -> int:
    """The step of `new` showing what step `index` of `old` showed.

    The same captured segment if `new` draws it, else the model's segment (it,
    or the one it was matched with), else that segment's captured match, else
    the last event at or before its time.
    """
    if not new.events or not 0 <= index < len(old.events):
        return 0
    step = old.captured.get(index)
    if step is not None:
        same = [i for i, other in new.captured.items() if other == step]
        if same:
            return same[0]
        model_index = step.model_index
    else:
        model_index = next((m for m, i in old.model_at.items() if i == index), None)
    if model_index is not None:
        if model_index in new.model_at:
            return new.model_at[model_index]
        matched = [i for i, other in new.captured.items() if other.model_index == model_index]
        if matched:
            return matched[0]
    moment = old.events[index].time_ms
    earlier = [i for i, event in enumerate(new.events) if event.time_ms <= moment]
    return earlier[-1] if earlier else 0


def _unplaced(packet_diff: Sequence[str], placed: Iterable[str]) -> tuple[str, ...]:
    """The sentences of packet_diff that no drawn segment carries."""
    shown = set(placed)
    return tuple(sentence for sentence in packet_diff if sentence not in shown)


def critical_path(scenario: ScenarioResult) -> set[int]:
    """Indexes of the events on any iteration's critical path (the headline's causes)."""
    ids = {event_id for p in scenario.simulation.predictions for event_id in p.path}
    return {i for i, event in enumerate(scenario.simulation.events) if event.id in ids}


def measured_markers(scenario: ScenarioResult) -> dict[int, str]:
    """A "measured" note after each iteration's headline end (its path's last event)."""
    index_of = {event.id: i for i, event in enumerate(scenario.simulation.events)}
    ends = {p.i: p.path[-1] for p in scenario.simulation.predictions if p.path}
    markers: dict[int, str] = {}
    for m in scenario.measurements:
        if m.measured_ms is not None and ends.get(m.i) in index_of:
            markers[index_of[ends[m.i]]] = f"▲ measured {m.measured_ms:.1f} ms"
    return markers

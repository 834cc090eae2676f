"""The kernel's own ladder: captured segments drawn like the model's, and where the two part.

Rules:
- Pure: a LabResult in, what to draw out (LadderContent); no I/O, no styles.
- A captured row becomes a KernelSegment (view/kernel_segment.py), so the one
  layout (ladder_layout.py) and the one widget draw it. It arrives at its
  measured time put on the model's clock through its iteration's start on
  each clock (packet_rows.model_starts against Measurement.start_ms), and left
  D before that: each captured arrow sits where it was measured within its
  iteration.
- Everything about matching comes from the scenario's PacketComparison
  (tfolab.lab.packets.compare, the alignment behind packet_diff): which model
  segment a captured one stands for (by event id and captured index), its
  connection number and its disagreement. Nothing is paired again here.
- A captured segment's iteration is that of the model's segment it is matched
  with; an unmatched one belongs to the latest iteration started (on the
  capture's clock) before it arrived. A segment of a connection whose SYN the
  capture did not see is drawn, as connection 0, but not compared.
- Three views: "model", "captured" and "both" (the two merged in time order,
  the captured arrows in the role "captured"). A captured arrow's label says
  where it parts from the model ("✗ ..."); in "both" one that agrees is only
  "✓ kernel", beside the model's arrow that carries the full label.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from tfolab.lab.disagreements import Disagreement
from tfolab.lab.packet_rows import Row, model_starts, segment_words
from tfolab.lab.results import LabResult, ScenarioResult
from tfolab.model.captured import CapturedRow
from tfolab.model.events import CookieInfo, Event
from tfolab.model.options import fastopen_of
from tfolab.view.kernel_segment import KernelSegment
from tfolab.view.run_summary import NOT_RUN, Capture, CaptureStatus, capture_status

VIEWS = ("model", "captured", "both")
CAPTURED_ROLE = "captured"


@dataclass(frozen=True)
class CapturedStep:
    """What the capture says about one drawn captured segment."""

    row: CapturedRow  # as captured (a cookie with its bytes)
    connection: int  # numbered as the model numbers them; 0: its SYN was not captured
    iteration: int
    into_ms: float | None  # its arrival from its iteration's start, on the capture's clock
    model_index: int | None  # the model's segment it was matched with (index in sim.events)
    disagreement: Disagreement | None = None  # how it parts from the model (None: it agrees)

    @property
    def sentence(self) -> str:
        return self.disagreement.sentence() if self.disagreement else ""


@dataclass(frozen=True)
class Comparison:
    """A scenario's capture beside its model, segment by segment, ready to draw."""

    segments: tuple[KernelSegment, ...]  # the captured ones, on the model's clock, in time order
    steps: tuple[CapturedStep, ...]  # one per segment
    model_issues: dict[int, Disagreement]  # index in sim.events -> its disagreement
    disagreements: tuple[Disagreement, ...]  # every one, in packet_diff's order

    @property
    def sentences(self) -> tuple[str, ...]:
        return tuple(d.sentence() for d in self.disagreements)


@dataclass(frozen=True)
class LadderContent:
    """What the ladder draws in one view, and what the step panel says of each step."""

    view: str
    title: str
    events: tuple[Event, ...] = ()
    roles: dict[int, str] = field(default_factory=dict)  # index -> an arrow's role
    path: frozenset[int] = frozenset()
    markers: dict[int, str] = field(default_factory=dict)
    issues: dict[int, Disagreement] = field(default_factory=dict)  # index -> its disagreement
    captured: dict[int, CapturedStep] = field(default_factory=dict)  # index -> capture facts
    model_at: dict[int, int] = field(default_factory=dict)  # model event index -> index here
    capture: CaptureStatus = NOT_RUN  # where the packets stand
    unplaced: tuple[Disagreement, ...] = ()  # disagreements on no drawn segment

    @property
    def sentences(self) -> dict[int, str]:
        """index -> the sentence of its disagreement."""
        return {i: d.sentence() for i, d in self.issues.items()}


# --------------------------------------------------------------- a pcap's name


def pcap_file_name(lab: str, scenario: str, when: datetime) -> str:
    """tfolab-<lab>-<scenario>-<YYYYmmdd-HHMMSS>.pcap"""
    return f"tfolab-{lab}-{scenario}-{when:%Y%m%d-%H%M%S}.pcap"


# --------------------------------------------------------------- the comparison


def compare(scenario: ScenarioResult, one_way_delay_ms: float) -> Comparison:
    """The capture of `scenario` as drawable segments, each with what its comparison said."""
    sim = scenario.simulation
    captured = list(scenario.captured or ())
    result = scenario.comparison
    pairs = result.pairs if result is not None else ()
    index_of = {event.id: i for i, event in enumerate(sim.events)}
    kernel: dict[int, Row] = {}  # captured index -> its compared row
    matched: dict[int, Row] = {}  # captured index -> the model row it stands against
    said: dict[int, Disagreement] = {}  # captured index -> its disagreement
    model_issues: dict[int, Disagreement] = {}
    for pair in pairs:
        theirs, ours, disagreement = pair.kernel, pair.model, pair.disagreement
        if theirs is not None and theirs.captured_index is not None:
            kernel[theirs.captured_index] = theirs
            if ours is not None:
                matched[theirs.captured_index] = ours
            if disagreement is not None:
                said[theirs.captured_index] = disagreement
        if ours is not None and ours.event_id in index_of and disagreement is not None:
            model_issues.setdefault(index_of[ours.event_id], disagreement)
    model_start = model_starts(sim)
    kernel_start = {0: 0.0} | {
        m.i: m.start_ms for m in scenario.measurements if m.start_ms is not None
    }
    base_id = max((e.id for e in sim.events), default=0) + 1
    segments: list[KernelSegment] = []
    steps: list[CapturedStep] = []
    for k, index in enumerate(sorted(range(len(captured)), key=lambda n: captured[n].t_ms)):
        row = captured[index]
        ours = matched.get(index)
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
        compared = kernel.get(index)
        step = CapturedStep(
            row=row,
            connection=compared.connection if compared is not None else 0,
            iteration=iteration,
            into_ms=into,
            model_index=index_of.get(ours.event_id) if ours and ours.event_id else None,
            disagreement=said.get(index),
        )
        steps.append(step)
        segments.append(_segment(base_id + k, step, arrived, one_way_delay_ms))
    disagreements = result.disagreements if result is not None else ()
    return Comparison(tuple(segments), tuple(steps), model_issues, disagreements)


def _segment(seg_id: int, step: CapturedStep, arrived_ms: float, delay_ms: float) -> KernelSegment:
    row = step.row
    where = f"connection {step.connection}" if step.connection else "an earlier connection"
    into = (
        f", {step.into_ms:.2f} ms into iteration {step.iteration}"
        if step.into_ms is not None and step.iteration
        else ""
    )
    tfo = fastopen_of(row.options)
    # a lost row's time is when its delay ended: it never arrived (the `drop` setting)
    sent_ms = arrived_ms - delay_ms
    return KernelSegment(
        id=seg_id,
        iteration=step.iteration,
        connection=step.connection,
        sent_ms=sent_ms,
        arrived_ms=arrived_ms,
        lost=row.lost,
        sender=row.sender,
        flags=tuple(row.flags),
        seq=row.seq,
        ack=row.ack,
        length=row.length,
        options=tuple(row.options),
        cookie=(CookieInfo(tfo.option_kind, tfo.cookie_length, tfo.cookie_hex) if tfo else None),
        what=CAPTURED_ROLE,
        explanation=(
            f"The kernel's segment on {where}, lost on the way (the delayer dropped it) "
            f"{row.t_ms:.2f} ms after the scenario's first measured call{into}."
            if row.lost
            else f"The kernel's segment on {where}, captured on lo: it arrived "
            f"{row.t_ms:.2f} ms after the scenario's first measured call{into}."
        ),
        cause="",
        caused_by=None,
        mark="✗ " if step.disagreement else "",
    )


def captured_words(row: CapturedRow) -> str:
    """A captured segment in full: flags, seq, ack, len, options (cookie bytes included)."""
    words = segment_words(row.flags, row.seq, row.ack, row.length, row.options)
    return f"{words} (lost)" if row.lost else words


# --------------------------------------------------------------- the three views


def ladder_content(result: LabResult, view: str) -> LadderContent:
    """What the ladder shows of `result`'s first scenario in `view` (one of VIEWS)."""
    scenario = result.scenarios[0]
    events = tuple(scenario.simulation.events)
    path = critical_path(scenario)
    markers = measured_markers(scenario)
    capture = capture_status(result)
    captured_any = capture.state is Capture.CAPTURED
    comparison = compare(scenario, result.delay_ms) if captured_any else None
    every = tuple(d for s in result.scenarios for d in s.disagreements)
    if view == "model" or comparison is None:
        issues = dict(comparison.model_issues) if comparison else {}
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
            issues=issues if drawn else {},
            capture=capture,
            unplaced=_unplaced(every, issues.values()) if drawn else every,
        )
    if view == "captured":
        captured = dict(enumerate(comparison.steps))
        issues = {k: step.disagreement for k, step in captured.items() if step.disagreement}
        return LadderContent(
            view,
            "Ladder · captured (the kernel's packets)",
            comparison.segments,
            path=frozenset(k for k, s in captured.items() if s.model_index in path),
            issues=issues,
            captured=captured,
            capture=capture,
            unplaced=_unplaced(every, issues.values()),
        )
    return _both(scenario, comparison, path, markers, every, capture)


def _both(
    scenario: ScenarioResult,
    comparison: Comparison,
    path: set[int],
    markers: dict[int, str],
    every: tuple[Disagreement, ...],
    capture: CaptureStatus,
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
            continue
        segment, step = comparison.segments[k], comparison.steps[k]
        if step.disagreement is None and step.model_index is not None:
            segment = dataclasses.replace(segment, as_model=True)
        else:
            segment = dataclasses.replace(segment, mark=f"{segment.mark}kernel ")
        events.append(segment)
        captured[index] = step
    issues = {at_model[i]: d for i, d in comparison.model_issues.items()}
    issues |= {index: step.disagreement for index, step in captured.items() if step.disagreement}
    return LadderContent(
        "both",
        "Ladder · model + captured",
        tuple(events),
        roles=dict.fromkeys(captured, CAPTURED_ROLE),
        path=frozenset(at_model[i] for i in path)
        | frozenset(k for k, s in captured.items() if s.model_index in path),
        markers={at_model[i]: text for i, text in markers.items()},
        issues=issues,
        captured=captured,
        model_at=at_model,
        capture=capture,
        unplaced=_unplaced(every, issues.values()),
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


def _unplaced(
    every: Sequence[Disagreement], placed: Iterable[Disagreement]
) -> tuple[Disagreement, ...]:
    """The disagreements no drawn segment carries."""
    shown = {id(d) for d in placed}
    return tuple(d for d in every if id(d) not in shown)


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

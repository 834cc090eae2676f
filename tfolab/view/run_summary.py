"""A measured run summed up once, for both front ends: what missed, the capture, the counters.

Rules:
- Pure: `summarize(LabResult)` gives a RunSummary (typed facts); the wording
  functions here are the only wording of a run's verdict, its misses, the
  capture's status and a run in progress. The CLI prints them as text, the UI
  styles the same words with Rich; a front end adds only its own key hints.
- Nothing here reads a sentence back: packets and counters that disagree are
  counted from their typed results.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from tfolab.lab.progress import (
    InLine,
    IterationMeasured,
    LabReady,
    Measuring,
    Progress,
    RunNote,
    ScenarioRunning,
)
from tfolab.lab.results import LabResult, ScenarioResult
from tfolab.model.simulation import PREDICTED_COUNTERS


@dataclass(frozen=True)
class Miss:
    """One iteration measured outside its band."""

    scenario: str
    i: int
    measured_ms: float
    predicted_ms: float
    tolerance_ms: float
    backend_late_ms: float = 0.0  # Measurement.backend_late_ms
    apps_late_ms: float = 0.0  # Measurement.apps_late_ms

    @property
    def expected_ms(self) -> float:
        return self.predicted_ms + self.backend_late_ms + self.apps_late_ms

    @property
    def off_by_ms(self) -> float:
        return max(0.0, abs(self.measured_ms - self.expected_ms) - self.tolerance_ms)

    @property
    def side(self) -> str:
        return "above" if self.measured_ms > self.expected_ms else "below"


class Capture(enum.Enum):
    """Where the packets of the (first) scenario stand."""

    NOT_RUN = "not run"  # no real run of these settings yet
    OFF = "off"  # the run could not capture (the reason is in `CaptureStatus.why`)
    NONE_SENT = "none sent"  # the run sent back no capture for this scenario
    EMPTY = "empty"  # captured, but no TCP segment arrived on lo
    CAPTURED = "captured"


@dataclass(frozen=True)
class CaptureStatus:
    state: Capture
    why: str = ""  # OFF: the runner's reason
    segments: int = 0  # captured, over every scenario
    disagreements: int = 0  # packet disagreements, over every scenario


NOT_RUN = CaptureStatus(Capture.NOT_RUN)


@dataclass(frozen=True)
class CounterRow:
    """A TcpExt counter of one scenario: measured, and the model's where it predicts it."""

    scenario: str
    name: str
    measured: int
    predicted: int | None  # None: not a counter the model predicts

    @property
    def agrees(self) -> bool:
        return self.predicted is None or self.measured == self.predicted


@dataclass(frozen=True)
class RunSummary:
    lab: str
    backend: str
    delay_ms: float
    measured: int  # iterations measured
    misses: tuple[Miss, ...]
    capture: CaptureStatus
    counters: tuple[CounterRow, ...]
    packet_failures: tuple[tuple[str, str], ...]  # (scenario, sentence)
    counter_failures: tuple[tuple[str, str], ...]

    @property
    def worst(self) -> Miss | None:
        return max(self.misses, key=lambda m: m.off_by_ms, default=None)

    @property
    def agrees(self) -> bool:
        """Every time in band, every packet and predicted counter as the model said."""
        return not (self.misses or self.packet_failures or self.counter_failures)


def capture_status(result: LabResult | None) -> CaptureStatus:
    """Where the capture of `result` stands (its first scenario decides what can be drawn)."""
    if result is None or not result.measured:
        return NOT_RUN
    if result.capture_off:
        return CaptureStatus(Capture.OFF, result.capture_off)
    if not result.scenarios or result.scenarios[0].captured is None:
        return CaptureStatus(Capture.NONE_SENT)
    segments = sum(len(s.captured or ()) for s in result.scenarios)
    disagreements = sum(len(s.disagreements) for s in result.scenarios)
    if not result.scenarios[0].captured:
        return CaptureStatus(Capture.EMPTY, segments=segments, disagreements=disagreements)
    return CaptureStatus(Capture.CAPTURED, segments=segments, disagreements=disagreements)


def counter_rows(scenario: ScenarioResult) -> tuple[CounterRow, ...]:
    """The counters that moved or that the model predicts, each beside the model's figure."""
    predicted = scenario.simulation.counters
    names = sorted({k for k, v in scenario.counters.items() if v} | set(predicted))
    return tuple(
        CounterRow(
            scenario.planned.name,
            name,
            scenario.counters.get(name, 0),
            predicted.get(name, 0) if name in PREDICTED_COUNTERS else None,
        )
        for name in names
    )


def summarize(result: LabResult) -> RunSummary:
    measured = [m for s in result.scenarios for m in s.measurements if m.measured_ms is not None]
    misses = tuple(
        Miss(
            s.planned.name,
            m.i,
            m.measured_ms,
            m.predicted_ms,
            m.tolerance_ms,
            m.backend_late_ms,
            m.apps_late_ms,
        )
        for s in result.scenarios
        for m in s.measurements
        if m.measured_ms is not None and m.ok is False
    )
    return RunSummary(
        lab=result.lab,
        backend=result.backend,
        delay_ms=result.delay_ms,
        measured=len(measured),
        misses=misses,
        capture=capture_status(result),
        counters=tuple(row for s in result.scenarios for row in counter_rows(s)),
        packet_failures=tuple(result.packet_failures),
        counter_failures=tuple(result.counter_failures),
    )


# ------------------------------------------------------------------ the words


def delay_words(delay_ms: float) -> str:
    if delay_ms == 0:
        return "one-way delay D = 0 ms (RTT 0, loopback)"
    return f"one-way delay D = {delay_ms:g} ms (RTT = {2 * delay_ms:g} ms)"


def band_words(summary: RunSummary) -> str:
    """'all in the predicted band' or '2 outside the predicted band'."""
    if not summary.misses:
        return "all in the predicted band"
    return f"{len(summary.misses)} outside the predicted band"


def miss_words(miss: Miss) -> str:
    """'#2 measured 27.0 ms, 5.0 ms above its band (20.0 ± 2.0 ms)'."""
    late = ""
    if abs(miss.backend_late_ms) >= 0.05:
        late = f", with the {miss.backend_late_ms:.1f} ms the delay backend was measured late"
    if abs(miss.apps_late_ms) >= 0.05:
        late += (
            f", with the {miss.apps_late_ms:.1f} ms the applications took beyond the model "
            "to wake and call"
        )
    return (
        f"#{miss.i} measured {miss.measured_ms:.1f} ms, {miss.off_by_ms:.1f} ms {miss.side} "
        f"its band ({miss.expected_ms:.1f} ± {miss.tolerance_ms:.1f} ms{late})"
    )


def verdict_words(summary: RunSummary) -> str:
    """The run's verdict in one sentence (the CLI's conclusion, the UI's banner)."""
    if not summary.misses and summary.packet_failures:
        return (
            f"All {summary.measured} measurements fell inside their predicted bands, but "
            f"{len(summary.packet_failures)} packet(s) differ from the model's ladder."
        )
    if not summary.misses:
        return (
            f"All {summary.measured} measurements fell inside their predicted bands: "
            f"the kernel agrees with the model ({summary.backend}, "
            f"{delay_words(summary.delay_ms)})."
        )
    worst = summary.worst
    assert worst is not None
    return (
        f"{len(summary.misses)} of {summary.measured} measurements fell outside their bands; "
        f"worst: {worst.scenario} #{worst.i} measured {worst.measured_ms:.1f} ms, "
        f"{worst.off_by_ms:.1f} ms {worst.side} its band."
    )


def capture_words(status: CaptureStatus) -> str:
    """Where the packets stand, in one clause ('packets: all 14 as the model predicted')."""
    match status.state:
        case Capture.NOT_RUN:
            return "no real run of these settings yet"
        case Capture.OFF:
            return f"packets were not captured: {status.why}"
        case Capture.NONE_SENT:
            return "the run sent back no capture for this scenario"
        case Capture.EMPTY:
            return "the capture is empty: no TCP segment arrived on lo"
    if status.disagreements:
        plural = "s" if status.disagreements != 1 else ""
        return f"packets: {status.disagreements} disagreement{plural} with the model"
    return f"packets: all {status.segments} as the model predicted"


def slot_wait_words(ahead: int) -> str:
    """'waiting for a measurement slot: 3 ahead'."""
    if ahead <= 0:
        return "waiting for a measurement slot: next in line"
    return f"waiting for a measurement slot: {ahead} ahead"


def progress_words(progress: Progress) -> str | None:
    """A run in progress in one line (the CLI's stderr, the UI's status); None: not shown."""
    match progress:
        case LabReady():
            line = (
                f"lab network ready in {progress.setup_ms} ms: backend {progress.backend}, "
                f"namespace via {progress.namespace}"
            )
            if progress.backend == "none":
                line += "  ** NO DELAY EMULATION: plain loopback **"
            return line
        case InLine():
            return slot_wait_words(progress.ahead)
        case Measuring():
            if progress.waited_ms <= 0:
                return None  # nothing waited: nothing worth a line
            return f"measurement slot taken after {progress.waited_ms / 1000:.1f} s in line"
        case ScenarioRunning():
            return f"running {progress.name} ..."
        case IterationMeasured():
            return f"{progress.scenario} #{progress.i}: {progress.measured_ms:.1f} ms"
        case RunNote():
            return progress.text
    return None

"""The real run's panel: progress, measured beside predicted, bars, counters.

Rules:
- It only displays: the screen's worker feeds it the run's progress
  (tfolab.lab.progress) and the final LabResult; it never starts or stops a
  run. Its words are tfolab.view.run_summary's, styled.
- Every iteration gets a row: predicted ± tolerance, measured, verdict; the
  bars share one scale so the eye compares them; counters show the measured
  TcpExt delta beside the model's predicted one.
- Packets: every disagreement between the captured segments and the model's
  (packet_diff), or that they all agree, or plainly why nothing was captured.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Label, ProgressBar, Static

from tfolab.lab.progress import InLine, IterationMeasured, LabReady, Measuring, Progress
from tfolab.lab.results import LabResult, Measurement
from tfolab.view.run_summary import (
    Capture,
    CounterRow,
    band_words,
    capture_status,
    capture_words,
    counter_rows,
    progress_words,
    summarize,
)

BAR_WIDTH = 14


def verdict(measurement: Measurement) -> Text:
    if measurement.ok is None:
        return Text("—", style="dim")
    if measurement.ok:
        return Text("✓", style="bold green")
    return Text(f"✗{measurement.off_by_ms:+.1f}", style="bold red")


def bars(measurements: list[Measurement], width: int = BAR_WIDTH) -> Text:
    """Two bars per iteration: predicted (░) and measured (█), on one scale."""
    values = [m.predicted_ms + m.tolerance_ms for m in measurements]
    values += [m.measured_ms for m in measurements if m.measured_ms is not None]
    top = max(values, default=1.0) or 1.0
    text = Text()
    for m in measurements:
        predicted = round(m.predicted_ms / top * width)
        text.append(f"{m.i:>2} ", style="bold")
        text.append("░" * max(predicted, 1), style="cyan")
        text.append(f" {m.predicted_ms:.1f}\n", style="dim")
        if m.measured_ms is not None:
            measured = round(m.measured_ms / top * width)
            style = "green" if m.ok else "red"
            text.append("   " + "█" * max(measured, 1), style=style)
            text.append(f" {m.measured_ms:.1f}\n")
    text.append("   ░ model  █ measured, ms", style="dim")
    return text


def counters_text(rows: tuple[CounterRow, ...]) -> Text:
    """The counters that moved or that the model predicts to move, measured beside the
    model's figure (run_summary.counter_rows), for the side panel's narrow column."""
    shown = [row for row in rows if row.measured or row.predicted]
    if not shown:
        return Text("no TcpExt counter moved", style="dim")
    text = Text()
    for row in shown:
        text.append(f"{row.name.removeprefix('TCP')[:17]:<17} ", style="bold")
        text.append(f"{row.measured:>3}", style="green" if row.agrees else "yellow")
        model = "-" if row.predicted is None else row.predicted
        text.append(f" (model {model})\n", style="dim")
    return text


def packets_text(result: LabResult) -> Text:
    """The capture against the model: its disagreements, or why there is no capture."""
    status = capture_status(result)
    if status.state is not Capture.CAPTURED:
        words = capture_words(status)
        return Text(f"✗ {words[0].upper()}{words[1:]}.", style="yellow")
    scenario = result.scenarios[0]
    count = len(scenario.captured or ())
    if not scenario.packet_diff:
        return Text(f"✓ all {count} captured segments as the model predicted", style="green")
    text = Text()
    plural = "s" if len(scenario.packet_diff) != 1 else ""
    text.append(f"{len(scenario.packet_diff)} disagreement{plural}", style="bold red")
    text.append(f" in {count} captured segments (c: see them on the ladder)\n", style="dim")
    for sentence in scenario.packet_diff:
        text.append(f"✗ {sentence}\n")
    text.rstrip()
    return text


class ResultsPanel(Vertical):
    """Hidden until the first real run; then progress, table, bars, counters.

    Sized for the 30-column side panel: short column titles, short verdicts.
    """

    _line_total: int | None = None  # the measurement-slot line's length when this run joined it
    _steps: float = 1

    def compose(self) -> ComposeResult:
        yield Label("Real run", classes="field-label")
        yield Static("", id="run-status")
        yield ProgressBar(total=1, show_eta=False, id="run-progress")
        table: DataTable[str | Text] = DataTable(
            id="measured", cursor_type="row", zebra_stripes=True
        )
        table.add_columns("#", "model ms", "measured", "ok")
        yield table
        yield Static("", id="bars")
        yield Label("Packets (kernel vs model)", classes="field-label")
        yield Static("", id="packets")
        yield Label("Counters (TcpExt)", classes="field-label")
        yield Static("", id="counters")

    def start(self, scenario: str, delay_ms: float, iterations: int) -> None:
        self.display = True
        self.query_one("#run-status", Static).update(
            f"running {scenario} at {delay_ms:g} ms one way…"
        )
        progress = self.query_one("#run-progress", ProgressBar)
        progress.update(total=iterations + 1, progress=0)
        progress.display = True
        self._line_total = None
        self.query_one("#measured", DataTable).clear()
        self.query_one("#bars", Static).update("")
        self.query_one("#packets", Static).update("")
        self.query_one("#counters", Static).update("")

    def progress(self, progress: Progress) -> None:
        status = self.query_one("#run-status", Static)
        bar = self.query_one("#run-progress", ProgressBar)
        words = progress_words(progress)
        if isinstance(progress, InLine):
            # The bar shows the line moving: from where this run joined it to its turn.
            if self._line_total is None:
                self._line_total = progress.ahead + 1
                self._steps = bar.total or 1
                bar.update(total=self._line_total, progress=0)
            bar.update(progress=self._line_total - 1 - progress.ahead)
        elif isinstance(progress, Measuring) and self._line_total is not None:
            bar.update(total=self._steps, progress=1)
            self._line_total = None
        elif isinstance(progress, LabReady | IterationMeasured):
            bar.advance(1)
        if words is not None:
            status.update(words)

    def show_result(self, result: LabResult) -> None:
        self.display = True
        scenario = result.scenarios[0]
        table = self.query_one("#measured", DataTable)
        table.clear()
        for m in scenario.measurements:
            measured = f"{m.measured_ms:.1f}" if m.measured_ms is not None else "—"
            table.add_row(
                str(m.i), f"{m.predicted_ms:.1f}±{m.tolerance_ms:g}", measured, verdict(m)
            )
        summary = summarize(result)
        self.query_one("#run-status", Static).update(
            f"{scenario.planned.name} at {result.delay_ms:g} ms via {result.backend}: "
            f"{band_words(summary)}"
        )
        self.query_one("#run-progress", ProgressBar).display = False
        self.query_one("#bars", Static).update(bars(scenario.measurements))
        self.query_one("#packets", Static).update(packets_text(result))
        self.query_one("#counters", Static).update(counters_text(counter_rows(scenario)))
        self.scroll_visible(animate=False)

    def show_failure(self, reason: str) -> None:
        self.display = True
        self.query_one("#run-progress", ProgressBar).display = False
        self.query_one("#run-status", Static).update(Text(reason, style="bold red"))

"""The bench's two plots as textual-plotext widgets: gain vs RTT, and one row's
per-request latency distribution.

Rules: they draw exactly what the CLI draws (view/bench_report's draw_gain and
draw_latency, on the widget's own plotext figure); `show` replaces what is
shown and redraws. Empty until a bench result arrives.
"""

from __future__ import annotations

from textual_plotext import PlotextPlot

from tfolab.lab.bench import BenchResult, BenchRow
from tfolab.view.bench_report import draw_gain, draw_latency


class GainPlot(PlotextPlot):
    """Gain (plain/TFO - 1) against the RTT: measured, predicted, nginx."""

    def show(self, result: BenchResult) -> None:
        self.plt.clear_figure()
        draw_gain(self.plt, result)
        self.refresh()


class LatencyPlot(PlotextPlot):
    """The per-request latencies of one (delay, server), plain beside TFO."""

    def show(self, row: BenchRow) -> None:
        self.plt.clear_figure()
        draw_latency(self.plt, row)
        self.refresh()

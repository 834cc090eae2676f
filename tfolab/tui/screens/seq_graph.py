"""The time-sequence graph modal: one key (t) away from the ladder.

Rules: it draws exactly what `--plot` draws (view/seq_plot's draw, on each
widget's own plotext figure): the scenario's busiest direction, the model's
graph and, after a real run, the kernel's below it on the same axes.
Read-only; the lab screen opens it only once the predictions are committed
(the graph shows the model's answer).
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static
from textual_plotext import PlotextPlot

from tfolab.view.seq_graph import GraphRow, SeqGraph, limits
from tfolab.view.seq_plot import draw


class SeqPlot(PlotextPlot):
    """One time-sequence graph, on the axes it shares with the other."""

    def __init__(self, graph: SeqGraph, x_max: float, y_max: float) -> None:
        super().__init__(classes="seq-plot")
        self.graph, self.x_max, self.y_max = graph, x_max, y_max

    def on_mount(self) -> None:
        draw(self.plt, self.graph, self.x_max, self.y_max)


class SeqGraphScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,t,q", "dismiss", "Close")]

    def __init__(self, row: GraphRow) -> None:
        super().__init__()
        self.row = row

    def compose(self) -> ComposeResult:
        graphs = [self.row.model] if self.row.kernel is None else [self.row.model, self.row.kernel]
        x_max, y_max = limits(graphs)
        with Vertical(id="seq-dialog"):
            yield Static(f"{self.row.heading}   (t / Esc closes)", id="seq-title")
            for graph in graphs:
                yield SeqPlot(graph, x_max, y_max)

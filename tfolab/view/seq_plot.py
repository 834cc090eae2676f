"""The time-sequence graph in the terminal: plotext figures drawn into a string.

Rules: presentation only, no I/O. The model's graph and the kernel's are drawn
one above the other on the same axes (the larger of the two ranges), so a
student reads them as one picture: bars for segments, a step line for the
peer's ACKs, another for its window's right edge. Markers tell the series
apart without colours. `draw` takes any plotext figure (the module, or a
textual-plotext widget's `plt`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import plotext as plt

from tfolab.view.seq_graph import SeqGraph, Step

MARKERS = {"segment": "█", "ack": "•", "window": "·"}


class PlotTarget(Protocol):
    def plot(self, *args: Any, **kwargs: Any) -> Any: ...
    def title(self, *args: Any, **kwargs: Any) -> Any: ...
    def xlabel(self, *args: Any, **kwargs: Any) -> Any: ...
    def ylabel(self, *args: Any, **kwargs: Any) -> Any: ...
    def xlim(self, *args: Any, **kwargs: Any) -> Any: ...
    def ylim(self, *args: Any, **kwargs: Any) -> Any: ...
    def xticks(self, *args: Any, **kwargs: Any) -> Any: ...
    def yticks(self, *args: Any, **kwargs: Any) -> Any: ...


def step_points(steps: Sequence[Step], until_ms: float) -> tuple[list[float], list[float]]:
    """A step line's corners: each value holds until the next one, the last until `until_ms`."""
    xs: list[float] = []
    ys: list[float] = []
    for step, after in zip(steps, [*steps[1:], None], strict=True):
        end = after.t_ms if after is not None else max(until_ms, step.t_ms)
        xs += [step.t_ms, end]
        ys += [float(step.value), float(step.value)]
    return xs, ys


WINDOW_IN_VIEW = 3  # the window's edge is drawn in range while within 3x the data's top


def limits(graphs: Sequence[SeqGraph]) -> tuple[float, float]:
    """The shared x and y ranges: the latest time, and the data's top (the highest byte
    sent or acknowledged), or the window's edge where that is not far above it (else
    the edge leaves the picture: a window far larger than the data)."""
    last = max((g.last_ms for g in graphs), default=0.0)
    data_top = max((g.data_top for g in graphs), default=0)
    edge = max((g.highest for g in graphs), default=0)
    top = edge if edge <= WINDOW_IN_VIEW * data_top else data_top
    return max(last, 1e-3) * 1.05, max(top, 1) * 1.05


def ticks(limit: float, count: int = 5) -> list[float]:
    return [limit * k / count for k in range(count + 1)]


def draw(p: PlotTarget, graph: SeqGraph, x_max: float, y_max: float) -> None:
    """One graph on a plotext figure, on the given axes."""
    for k, bar in enumerate(graph.bars):
        label = "segments" if k == 0 else None
        p.plot([bar.t_ms, bar.t_ms], [bar.start, bar.end], marker=MARKERS["segment"], label=label)
    if graph.acks:
        xs, ys = step_points(graph.acks, x_max)
        p.plot(xs, ys, marker=MARKERS["ack"], label="peer's ACK")
    edge_in_view = any(step.value <= y_max for step in graph.window_edges)
    if edge_in_view:
        xs, ys = step_points(graph.window_edges, x_max)
        p.plot(xs, ys, marker=MARKERS["window"], label="ACK + window")
    elif graph.window_edges:  # a series wholly out of range breaks plotext's legend
        top = max(step.value for step in graph.window_edges)
        p.plot([0.0], [0.0], marker=" ", label=f"ACK + window: above, up to {top:,}")
    p.xlim(0, x_max)
    p.ylim(0, y_max)
    p.xticks(ticks(x_max), [f"{t:.3g}" for t in ticks(x_max)])
    p.yticks(ticks(y_max), [f"{v:,.0f}" for v in ticks(y_max)])
    p.title(graph.title())
    p.xlabel("ms from the connection's first segment")
    p.ylabel("sequence number")


def plot_text(
    model: SeqGraph,
    kernel: SeqGraph | None,
    *,
    width: int = 100,
    height: int = 20,
    color: bool = False,
) -> str:
    """The model's graph, and the kernel's below it on the same axes, as one string."""
    graphs = [model] if kernel is None else [model, kernel]
    x_max, y_max = limits(graphs)
    out = []
    for graph in graphs:
        plt.clear_figure()
        plt.plotsize(width, height)
        draw(plt, graph, x_max, y_max)
        out.append(plt.build())
    plt.clear_figure()
    text = "\n".join(out)
    return text if color else plt.uncolorize(text)

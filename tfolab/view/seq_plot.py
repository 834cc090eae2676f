"""The time-sequence graph in the terminal: plotext figures drawn into a string.

Rules: presentation only, no I/O. The model's graph and the kernel's are drawn
one above the other on the same axes (the larger of the two ranges), so a
student reads them as one picture: bars for segments, a step line for the
peer's ACKs, another for its window's right edge. Markers tell the series
apart without colours. `draw` takes any plotext figure (the module, or a
textual-plotext widget's `plt`).
"""

from __future__ import annotations

import plotext as plt

from tfolab.view.plot_target import PlotTarget
from tfolab.view.seq_graph import SeqGraph, limits, step_points, ticks

MARKERS = {"segment": "█", "ack": "•", "window": "·"}


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

"""The time-sequence graph as an SVG picture, to hand in or put in a report.

Rules: presentation only, no I/O: `svg_document` returns the text. One row
per scenario, the model's graph on the left and the kernel's on the right,
on the same axes (seq_graph.limits) so the two read as one comparison. Bars
are segments, the green step line the peer's ACKs, the orange one its
window's right edge. Every text is escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from tfolab.view.seq_graph import GraphRow, SeqGraph, limits, step_points

PANEL_W, PANEL_H = 520, 340
LEFT, RIGHT, TOP, BOTTOM = 78, 16, 46, 44  # margins inside a panel
HEADING_H = 30
TICKS = 5
COLORS = {"segment": "#1f5fbf", "ack": "#2e8b57", "window": "#d2691e", "axis": "#444"}


def svg_document(rows: Sequence[GraphRow]) -> str:
    panels = max((2 if row.kernel is not None else 1 for row in rows), default=1)
    width = panels * PANEL_W
    height = len(rows) * (PANEL_H + HEADING_H)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    for k, row in enumerate(rows):
        top = k * (PANEL_H + HEADING_H)
        parts.append(_text(8, top + 20, row.heading, size=14, weight="bold"))
        graphs = [row.model] if row.kernel is None else [row.model, row.kernel]
        x_max, y_max = limits(graphs)
        for column, graph in enumerate(graphs):
            parts += _panel(graph, column * PANEL_W, top + HEADING_H, x_max, y_max)
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _panel(graph: SeqGraph, x0: float, y0: float, x_max: float, y_max: float) -> list[str]:
    plot_w = PANEL_W - LEFT - RIGHT
    plot_h = PANEL_H - TOP - BOTTOM

    def x(t_ms: float) -> float:
        return round(x0 + LEFT + t_ms / x_max * plot_w, 2)

    def y(seq: float) -> float:
        return round(y0 + TOP + plot_h - seq / y_max * plot_h, 2)

    out = [_text(x0 + LEFT, y0 + 18, graph.title(), size=12)]
    left, bottom = x0 + LEFT, y0 + TOP + plot_h
    out.append(
        f'<path d="M{left},{y0 + TOP} V{bottom} H{left + plot_w}" fill="none" '
        f'stroke="{COLORS["axis"]}"/>'
    )
    for k in range(TICKS + 1):
        t = x_max * k / TICKS
        out.append(_line(x(t), bottom, x(t), bottom + 4, COLORS["axis"]))
        out.append(_text(x(t), bottom + 16, f"{t:.3g}", anchor="middle"))
        seq = y_max * k / TICKS
        out.append(_line(left - 4, y(seq), left, y(seq), COLORS["axis"]))
        out.append(_text(left - 6, y(seq) + 4, f"{seq:,.0f}", anchor="end"))
    out.append(_text(left + plot_w / 2, bottom + 34, "ms from the connection's first segment",
                     anchor="middle"))  # fmt: skip
    out.append(
        f'<text x="{x0 + 14}" y="{y0 + TOP + plot_h / 2}" text-anchor="middle" '
        f'transform="rotate(-90 {x0 + 14} {y0 + TOP + plot_h / 2})">sequence number</text>'
    )
    clip = f"plot-{round(x0)}-{round(y0)}"
    out.append(
        f'<clipPath id="{clip}"><rect x="{left}" y="{y0 + TOP}" width="{plot_w}" '
        f'height="{plot_h}"/></clipPath><g clip-path="url(#{clip})">'
    )
    for bar in graph.bars:
        out.append(_line(x(bar.t_ms), y(bar.start), x(bar.t_ms), y(bar.end), COLORS["segment"], 2))
    for steps, color in ((graph.acks, COLORS["ack"]), (graph.window_edges, COLORS["window"])):
        if steps:
            xs, ys = step_points(steps, x_max)
            points = " ".join(f"{x(a)},{y(b)}" for a, b in zip(xs, ys, strict=True))
            out.append(f'<polyline points="{points}" fill="none" stroke="{color}"/>')
    out.append("</g>")
    legend_y = y0 + TOP - 8
    for k, (name, color) in enumerate(
        (("segments", COLORS["segment"]), ("peer's ACK", COLORS["ack"]),
         ("ACK + window", COLORS["window"]))
    ):  # fmt: skip
        lx = x0 + LEFT + k * 120
        out.append(_line(lx, legend_y - 4, lx + 16, legend_y - 4, color, 3))
        out.append(_text(lx + 20, legend_y, name))
    return out


def _line(x1: float, y1: float, x2: float, y2: float, color: str, width: float = 1) -> str:
    return (
        f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="{color}" stroke-width="{width}"/>'
    )


def _text(
    x: float, y: float, text: str, *, size: int = 12, anchor: str = "start", weight: str = "normal"
) -> str:
    return (
        f'<text x="{x}" y="{y}" font-size="{size}" text-anchor="{anchor}" '
        f'font-weight="{weight}">{escape(text)}</text>'
    )

"""The ladder of a simulated timeline as plain ASCII text, for terminals and students.

Rules:
- Pure: a Simulation in, a string out; no I/O, no colours, ASCII only.
- The ladder itself is drawn by the one layout the UI draws too
  (tfolab.view.ladder_layout): same rows, same scale, same labels, with its
  box-drawing characters turned into ASCII; `fold` folds flights
  (tfolab.view.flight_fold), the steps under it still list every segment.
- Under it (unless explanations=False) the steps in order, each with its
  time, side and the model's explanation, in the words of the UI's step
  panel (tfolab.view.steps).
- Every line fits in `width` columns (at least 60).
- Last: each iteration's prediction (predicted +- tolerance, the band, the
  explanation) and the predicted TcpExt counter deltas.
"""

from __future__ import annotations

import textwrap

from tfolab.model import Simulation
from tfolab.model.events import AppCall, Event, Note
from tfolab.view.ladder_layout import layout
from tfolab.view.steps import headline, when, who

MIN_WIDTH = 60
# The layout's glyphs, one ASCII character each so columns stay put.
_ASCII = str.maketrans(
    {"─": "-", "│": "|", "╭": ".", "╮": ".", "╰": "'", "╯": "'", "▶": ">", "◀": "<",
     "╌": "-", "┊": ":", "⋮": ":", "≈": "~", "•": "*", "·": ".", "◷": "@", "…": "~",
     "→": ">", "┼": "+", "▲": "^", "✓": "v", "✗": "x", "✕": "X"}
)  # fmt: skip


def ascii_only(text: str) -> str:
    return "".join(c if c.isascii() else "?" for c in text.translate(_ASCII))


def render_ladder(
    sim: Simulation, *, width: int = 100, explanations: bool = True, fold: bool = False
) -> str:
    width = max(width, MIN_WIDTH)
    drawn = layout(sim.events, width, sim.one_way_delay_ms, fold=fold)
    lines = [*_wrap(_title(sim), width), drawn.header(), drawn.scale_text()]
    lines += ["".join(char for char, _, _ in row) for row in drawn.rows]
    if explanations:
        lines += ["", "Steps:"]
        for number, event in enumerate(sim.events, start=1):
            lines += _step_lines(number, event, width)
    lines.append("")
    lines += _predictions(sim, width)
    return "\n".join(ascii_only(line).rstrip() for line in lines) + "\n"


def _title(sim: Simulation) -> str:
    d = sim.one_way_delay_ms
    plural = "s" if sim.iterations != 1 else ""
    return (
        f"tfolab model: D = {d:g} ms one way (RTT {2 * d:g} ms), HZ {sim.hz}, "
        f"{sim.iterations} iteration{plural}"
    )


def _step_lines(number: int, event: Event, width: int) -> list[str]:
    head = f"{number:>4}. {event.time_ms:9.3f} ms  {when(event)}, {who(event)}: "
    what = event.text if isinstance(event, Note) else headline(event)
    lines = textwrap.wrap(head + what, width=width - 1, subsequent_indent=" " * 8)
    if isinstance(event, Note):
        return lines
    text = event.explanation
    if event.cause and not isinstance(event, AppCall) and event.cause not in text:
        text += f" [{event.cause}]"
    indent = " " * 8
    return lines + textwrap.wrap(
        text, width=width - 1, initial_indent=indent, subsequent_indent=indent,
        break_on_hyphens=False,
    )  # fmt: skip


def _wrap(text: str, width: int, indent: str = "") -> list[str]:
    return textwrap.wrap(text, width=width - 1, subsequent_indent=indent) or [""]


def _predictions(sim: Simulation, width: int) -> list[str]:
    acc = sim.accuracy
    lines = _wrap(
        "Predicted headline per iteration (tolerance = timer ticks on the path + "
        f"packets x {acc.per_packet_delay_error_ms:g} ms + {acc.host_overhead_ms:g} ms host):",
        width,
    )
    lines.append(f"{'it':>4}  {'predicted':>12}  {'+-':>7}  {'band (ms)':<17}  why")
    for p in sim.predictions:
        band = f"{p.low_ms:.3f}-{p.high_ms:.3f}"
        head = f"{p.i:>4}  {p.predicted_ms:>9.3f} ms  {p.tolerance_ms:>7.3f}  {band:<17}  "
        room = width - 1 - len(head)
        if room < 30:  # narrow terminal: the explanation goes under the numbers
            lines.append(head.rstrip())
            lines += textwrap.wrap(
                p.explanation, width=width - 1, initial_indent=" " * 6, subsequent_indent=" " * 8
            )
            continue
        why = textwrap.wrap(p.explanation, width=room) or [""]
        lines.append(head + why[0])
        lines += [" " * len(head) + more for more in why[1:]]
    lines.append("")
    if sim.counters:
        counts = ", ".join(f"{name} +{value}" for name, value in sim.counters.items())
    else:
        counts = "none (no Fast Open activity, no delayed-ACK timer sent an ACK)"
    lines += _wrap(f"Predicted TcpExt deltas: {counts}", width, "  ")
    return lines

"""An ASCII ladder diagram of a simulated timeline, for terminals and students.

Rules:
- Pure: a Simulation in, a string out; no I/O, no colours, ASCII only.
- Time flows down, one line per event: the time (ms), the iteration, then the
  ladder between the client's and the server's lines. Segments are arrows
  (--->, <---) labelled with flags, seq/ack, length and the TFO option; the
  arrival time is printed beside the receiving side. Application calls,
  timers and notes sit against their own side's line.
- Under every event (unless explanations=False) an indented explanation.
- Every line fits in `width` columns (at least 60); long labels are cut with
  "..", explanations are wrapped.
- After the ladder: each iteration's prediction (predicted +- tolerance, the
  band, the explanation) and the predicted TcpExt counter deltas.
"""

from __future__ import annotations

import textwrap

from tfolab.model import AppCall, Note, Segment, Simulation, Timer
from tfolab.model.events import Event

MIN_WIDTH = 60
_TIME_W = 9
_ITER_W = 4
_ARR_W = 9


def render_ladder(sim: Simulation, *, width: int = 100, explanations: bool = True) -> str:
    width = max(width, MIN_WIDTH)
    lane = width - _TIME_W - _ITER_W - 2 * _ARR_W - 2
    lines = _header(sim, width, lane)
    seen: set[int] = set()
    for event in sim.events:
        if event.iteration not in seen:
            seen.add(event.iteration)
            lines.append(_iteration_banner(sim, event, width))
        lines.append(_event_line(event, lane))
        if explanations:
            lines += _explanation_lines(event, width)
    lines.append("")
    lines += _predictions(sim, width)
    return "\n".join(line.rstrip() for line in lines) + "\n"


def _header(sim: Simulation, width: int, lane: int) -> list[str]:
    d = sim.one_way_delay_ms
    title = (
        f"tfolab model: D = {d:g} ms one way (RTT {2 * d:g} ms), HZ {sim.hz}, "
        f"{sim.iterations} iteration{'s' if sim.iterations != 1 else ''}"
    )
    inner = "client" + " " * max(lane - len("client") - len("server"), 1) + "server"
    head = " " * (_TIME_W + _ITER_W + _ARR_W) + " " + inner
    rule = (
        "time ms".rjust(_TIME_W - 1)
        + " "
        + "it".ljust(_ITER_W)
        + " " * _ARR_W
        + "|"
        + " " * lane
        + "|"
    )
    return [*_wrap(title, width), "", head, rule]


def _iteration_banner(sim: Simulation, event: Event, width: int) -> str:
    if event.iteration == 0:
        text = "setup / warm-up (not measured)"
    else:
        text = f"iteration {event.iteration}"
        if sim.config.fresh_connection_each_iteration:
            text += f" (connection {event.connection})"
    return f"{'':{_TIME_W}}{'':{_ITER_W}}-- {text} ".ljust(width - 1, "-")


def _prefix(event: Event) -> str:
    return f"{event.time_ms:{_TIME_W - 1}.3f} " + f"i{event.iteration}".ljust(_ITER_W)


def _cut(text: str, room: int) -> str:
    if len(text) <= room:
        return text
    return text[: max(room - 2, 0)] + ".."


def _event_line(event: Event, lane: int) -> str:
    prefix = _prefix(event)
    if isinstance(event, Segment):
        return prefix + _arrow(event, lane)
    text = _side_text(event)
    right = isinstance(event, AppCall | Timer) and event.side == "server"
    if isinstance(event, Note):
        right = event.side == "server"
    body = _cut(text, lane - 1)
    inner = body.rjust(lane) if right else body.ljust(lane)
    return prefix + " " * _ARR_W + "|" + inner + "|"


def _arrow(seg: Segment, lane: int) -> str:
    label = seg.label()
    if seg.cookie is not None and seg.cookie.option_kind == 254:
        label += "(exp)"
    label = _cut(label, lane - 8)
    arrival = f"@{seg.arrived_ms:.3f}"
    if seg.sender == "client":
        body = ("--" + label + " ").ljust(lane - 1, "-") + ">"
        return " " * _ARR_W + "|" + body + "| " + arrival
    body = "<" + (" " + label + "--").rjust(lane - 1, "-")
    return arrival.rjust(_ARR_W - 1) + " |" + body + "|"


def _side_text(event: Event) -> str:
    if isinstance(event, AppCall):
        detail = f"({event.detail})" if event.detail else "()"
        call = f"{event.call}{detail}"
        return f"* {call}" if event.side == "client" else f"{call} *"
    if isinstance(event, Timer):
        if event.action == "armed":
            text = f"[delack armed, fires @{event.deadline_ms:.3f}]"
        else:
            text = f"[delack {event.action}]"
        return f" {text}" if event.side == "client" else f"{text} "
    assert isinstance(event, Note)
    return f" ~ {event.text}" if event.side != "server" else f"~ {event.text} "


def _explanation_lines(event: Event, width: int) -> list[str]:
    if isinstance(event, Note):
        if len(event.text) + 6 <= width - _TIME_W - _ITER_W - _ARR_W:
            return []
        text = event.text
    else:
        text = event.explanation
        if event.cause and not isinstance(event, AppCall) and event.cause not in text:
            text += f" [{event.cause}]"
    indent = " " * (_TIME_W + _ITER_W + _ARR_W + 1) + "  "
    return textwrap.wrap(
        text,
        width=width - 1,
        initial_indent=indent,
        subsequent_indent=indent + "  ",
        break_on_hyphens=False,
    )


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
        counts = "none (no Fast Open activity)"
    lines += _wrap(f"Predicted TcpExt deltas: {counts}", width, "  ")
    return lines

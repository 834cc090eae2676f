"""The ladder diagram as a grid of characters: pure layout, no Textual.

A simulation's events become *marks* (a segment has two: sent and arrived),
each mark gets a row, and time flows down to a stated scale ("1 row = 2 ms").
A gap longer than MAX_GAP_ROWS is drawn as a visible break instead
(the 40 ms delayed-ACK timer), so the scale is honest everywhere else.

Rules:
- Pure: events in, rows of (char, role, owner) cells out. The widget decides
  colours from the role and from the owner (the index of the event in
  `sim.events`) against the current step; nothing here knows about styles.
- Events are the model's own classes (tfolab.model.events), told apart with
  isinstance; a Note on "both" sides spans the arrow area.
- Every character is one cell wide; labels that do not fit are cut with "…".
- An arrow's role is its sender's ("client" or "server") unless `arrow_roles`
  names another for its owner (the kernel's captured segments drawn over the
  model's are "captured").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from tfolab.model.events import AppCall, Event, Segment, Timer

GUTTER = 7  # " 120.0 " time column
MIN_ANNOTATION = 9
MAX_ANNOTATION = 16
MAX_GAP_ROWS = 12  # a gap longer than this (at the scale) becomes a break
BREAK_ROWS = 3
SCALES_MS = (0.1, 0.2, 0.25, 0.5, 1, 2, 2.5, 5, 10, 20, 25, 50, 100, 200, 250, 500)
NO_OWNER = -1

# Roles the widget styles: "axis", "gutter", "client" (arrow client->server),
# "server" (arrow server->client), "app", "timer", "note", "break",
# "iteration", "measured", and any role `arrow_roles` gives an arrow ("captured").
Cell = tuple[str, str, int]  # (char, role, owner)

_BOX = {
    frozenset("LR"): "─",
    frozenset("UD"): "│",
    frozenset("RD"): "╭",
    frozenset("LD"): "╮",
    frozenset("UR"): "╰",
    frozenset("UL"): "╯",
}


def choose_scale(one_way_delay_ms: float) -> float:
    """Milliseconds per row: a one-way trip takes about five rows."""
    if one_way_delay_ms <= 0:
        return 1.0
    for scale in SCALES_MS:
        if one_way_delay_ms / scale <= 5:
            return float(scale)
    return float(SCALES_MS[-1])


_NOTE_PREFIX = re.compile(r"^(client|server):?\s+")
_SEQ = re.compile(r" seq=\d+")


def fit_label(label: str, room: int) -> str:
    """The label, without its seq= part if that makes it fit, else cut with "…"."""
    if len(label) <= room:
        return label
    shorter = _SEQ.sub("", label, count=1)
    if len(shorter) <= room:
        return shorter
    return shorter[: max(room - 1, 0)] + "…"


def format_ms(value: float) -> str:
    return f"{value:.1f}"


@dataclass(frozen=True)
class Mark:
    time_ms: float
    order: tuple[float, int, float]
    owner: int
    kind: str  # "send", "arrive", "app", "timer", "note", "measured"
    side: str
    iteration: int
    text: str = ""


@dataclass
class Geometry:
    width: int
    annotation: int = field(init=False)
    client_x: int = field(init=False)
    server_x: int = field(init=False)

    def __post_init__(self) -> None:
        spare = self.width - GUTTER - 2 - 28
        self.annotation = max(MIN_ANNOTATION, min(MAX_ANNOTATION, spare // 2))
        self.client_x = GUTTER + self.annotation
        self.server_x = max(self.client_x + 8, self.width - self.annotation - 1)


@dataclass
class LadderLayout:
    """The drawn ladder: rows of cells, and where each event sits."""

    rows: list[list[Cell]]
    scale_ms: float
    geometry: Geometry
    event_rows: dict[int, tuple[int, int]]  # event index -> (first row, last row)
    breaks: int

    @property
    def height(self) -> int:
        return len(self.rows)

    def header(self) -> str:
        """One line: the column titles above the axes."""
        line = [" "] * self.geometry.width
        _put(line, 0, "  ms")
        client = "client"
        _put(line, self.geometry.client_x - len(client) // 2, client)
        server = "server"
        _put(line, self.geometry.server_x - len(server) // 2, server)
        return "".join(line)

    def scale_text(self) -> str:
        text = f"1 row = {self.scale_ms:g} ms"
        if self.breaks:
            text += " · ┊ gaps over " + f"{self.scale_ms * MAX_GAP_ROWS:g} ms compressed"
        return text


def _put(line: list[str], x: int, text: str) -> None:
    for offset, char in enumerate(text):
        if 0 <= x + offset < len(line):
            line[x + offset] = char


def build_marks(events: Sequence[Event], markers: dict[int, str] | None = None) -> list[Mark]:
    """Marks in drawing order; `markers` adds a text row after an event (by index)."""
    marks: list[Mark] = []
    for index, event in enumerate(events):
        iteration = event.iteration
        if isinstance(event, Segment):
            sent, arrived = event.sent_ms, event.arrived_ms
            marks.append(
                Mark(sent, (sent, 1, index), index, "send", event.sender, iteration, event.label())
            )
            order = (arrived, 0, index) if arrived > sent else (arrived, 1, index + 0.5)
            marks.append(Mark(arrived, order, index, "arrive", event.receiver, iteration))
            continue
        at = (event.time_ms, 1, index)
        if isinstance(event, AppCall):
            text = f"{event.call}()" + (f" {event.detail}" if event.detail else "")
            marks.append(Mark(event.time_ms, at, index, "app", event.side, iteration, text))
        elif isinstance(event, Timer):
            text = f"◷ {event.name} {event.action}"
            marks.append(Mark(event.time_ms, at, index, "timer", event.side, iteration, text))
        else:
            text = "• " + _NOTE_PREFIX.sub("", event.text)
            marks.append(Mark(event.time_ms, at, index, "note", event.side, iteration, text))
    marks.sort(key=lambda mark: mark.order)
    last_mark = {mark.owner: mark for mark in marks}
    for owner, text in (markers or {}).items():
        anchor = last_mark.get(owner)
        if anchor is not None:
            order = (*anchor.order[:2], anchor.order[2] + 0.25)
            marks.append(
                Mark(anchor.time_ms, order, NO_OWNER, "measured", "client", anchor.iteration, text)
            )
    marks.sort(key=lambda mark: mark.order)
    return marks


def layout(
    events: Sequence[Event],
    width: int,
    one_way_delay_ms: float,
    markers: dict[int, str] | None = None,
    arrow_roles: Mapping[int, str] | None = None,
) -> LadderLayout:
    """Place every event on rows and draw axes, arrows and annotations.

    `arrow_roles` gives some arrows (by event index) a role other than their sender's.
    """
    geometry = Geometry(max(width, GUTTER + 2 * MIN_ANNOTATION + 12))
    scale = choose_scale(one_way_delay_ms)
    marks = build_marks(events, markers)
    mark_rows: list[int] = []
    row_kinds: dict[int, tuple[str, str]] = {}  # row -> ("iteration"|"break", text)
    row = -1
    anchor_row, anchor_time = 0, 0.0
    previous_time: float | None = None
    newest_iteration = -1
    breaks = 0
    for mark in marks:
        if mark.iteration > newest_iteration:
            # Iterations overlap (a FIN of one beside the SYN of the next): a rule
            # marks where each one starts.
            row += 1
            title = "setup / warm-up" if mark.iteration == 0 else f"iteration {mark.iteration}"
            row_kinds[row] = ("iteration", title)
            newest_iteration = mark.iteration
        if previous_time is None:
            row += 1
            anchor_row, anchor_time = row, mark.time_ms
        else:
            gap_rows = (mark.time_ms - previous_time) / scale
            if gap_rows > MAX_GAP_ROWS:
                breaks += 1
                row_kinds[row + 2] = ("break", f"{format_ms(mark.time_ms - previous_time)} ms")
                row += BREAK_ROWS + 1
                anchor_row, anchor_time = row, mark.time_ms
            else:
                target = anchor_row + round((mark.time_ms - anchor_time) / scale)
                row = max(row + 1, target)
        mark_rows.append(row)
        previous_time = mark.time_ms
    height = row + 2
    grid = _Grid(height, geometry)
    grid.axes(row_kinds)
    event_rows: dict[int, tuple[int, int]] = {}
    sends: dict[int, tuple[Mark, int]] = {}
    texts: list[tuple[Mark, int]] = []
    labels: list[Callable[[], None]] = []
    # Lines first, words last: arrows never cut through a label or a note.
    for mark, mark_row in zip(marks, mark_rows, strict=True):
        if mark.owner != NO_OWNER:
            first, last = event_rows.get(mark.owner, (mark_row, mark_row))
            event_rows[mark.owner] = (min(first, mark_row), max(last, mark_row))
            grid.time(mark_row, mark.time_ms, mark.owner)
        if mark.kind == "send":
            sends[mark.owner] = (mark, mark_row)
        elif mark.kind == "arrive":
            send, send_row = sends[mark.owner]
            role = (arrow_roles or {}).get(mark.owner)
            labels.append(grid.arrow(send, send_row, mark_row, role))
        else:
            texts.append((mark, mark_row))
    for draw_label in labels:
        draw_label()
    for mark, mark_row in texts:
        if mark.kind == "measured":
            text = fit_label(mark.text, geometry.server_x - geometry.client_x - 2)
            grid.text(
                mark_row, geometry.client_x + 1, text, "measured", NO_OWNER, limit=geometry.server_x
            )
        else:
            grid.annotate(mark, mark_row)
    grid.iteration_titles(row_kinds)
    return LadderLayout(grid.rows, scale, geometry, event_rows, breaks)


class _Grid:
    def __init__(self, height: int, geometry: Geometry) -> None:
        self.geometry = geometry
        self.rows: list[list[Cell]] = [
            [(" ", "gutter", NO_OWNER)] * geometry.width for _ in range(height)
        ]

    def set(self, row: int, x: int, char: str, role: str, owner: int) -> None:
        if 0 <= row < len(self.rows) and 0 <= x < self.geometry.width:
            self.rows[row][x] = (char, role, owner)

    def text(self, row: int, x: int, text: str, role: str, owner: int, *, limit: int) -> None:
        room = limit - x
        if room <= 0:
            return
        if len(text) > room:
            text = text[: max(room - 1, 0)] + "…"
        for offset, char in enumerate(text):
            self.set(row, x + offset, char, role, owner)

    def axes(self, row_kinds: dict[int, tuple[str, str]]) -> None:
        g = self.geometry
        breaks = [r for r, (kind, _) in row_kinds.items() if kind == "break"]
        breaking = {r + d for r in breaks for d in (-1, 0, 1)}
        for row in range(len(self.rows)):
            char = "┊" if row in breaking else "│"
            self.set(row, g.client_x, char, "axis", NO_OWNER)
            self.set(row, g.server_x, char, "axis", NO_OWNER)
        for row, (kind, text) in row_kinds.items():
            if kind == "iteration":
                for x in range(1, g.width - 1):
                    if x not in (g.client_x, g.server_x):
                        self.set(row, x, "╌", "iteration", NO_OWNER)
            else:
                self.text(row, 1, "  ⋮", "break", NO_OWNER, limit=GUTTER)
                middle = (g.client_x + g.server_x) // 2
                label = f"≈ {text} later"
                self.text(row, middle - len(label) // 2, label, "break", NO_OWNER, limit=g.server_x)

    def iteration_titles(self, row_kinds: dict[int, tuple[str, str]]) -> None:
        g = self.geometry
        for row, (kind, text) in row_kinds.items():
            if kind == "iteration":
                self.text(row, g.client_x + 3, f" {text} ", "iteration", NO_OWNER, limit=g.server_x)

    def time(self, row: int, time_ms: float, owner: int) -> None:
        self.text(row, 0, f"{time_ms:6.1f}", "gutter", owner, limit=GUTTER - 1)

    def annotate(self, mark: Mark, row: int) -> None:
        g = self.geometry
        if mark.side == "both":
            self.text(row, g.client_x + 2, mark.text, mark.kind, mark.owner, limit=g.server_x - 1)
        elif mark.side == "client":
            width = min(len(mark.text), g.annotation - 1)
            self.text(
                row, g.client_x - 1 - width, mark.text, mark.kind, mark.owner, limit=g.client_x - 1
            )
        else:
            self.text(row, g.server_x + 2, mark.text, mark.kind, mark.owner, limit=g.width)

    def arrow(
        self, send: Mark, first: int, last: int, role: str | None = None
    ) -> Callable[[], None]:
        """A stepped slant from the sender's axis (row first) to the receiver's (row last).

        Returns the drawing of its label, for the caller to do after every line.
        """
        g = self.geometry
        role = role or ("client" if send.side == "client" else "server")
        left, right = g.client_x + 1, g.server_x - 1
        span = right - left + 1
        rows = last - first + 1
        # bounds[j]: how many cells of the span rows 0..j-1 have covered.
        bounds = [round(j * span / rows) for j in range(rows + 1)]
        cells: dict[tuple[int, int], set[str]] = {}

        def column(offset: int) -> int:
            return left + offset if send.side == "client" else right - offset

        forward, backward = ("R", "L") if send.side == "client" else ("L", "R")
        x_offset = 0
        for j in range(rows):
            row = first + j
            end = max(bounds[j + 1] - 1, x_offset)
            if j == rows - 1:
                end = span - 1
            for offset in range(x_offset, end + 1):
                links = cells.setdefault((row, offset), set())
                if offset > x_offset or j == 0:
                    links.add(backward)
                if offset < end or j == rows - 1:
                    links.add(forward)
            if j < rows - 1:
                cells[(row, end)].add("D")
                cells.setdefault((row + 1, end), set()).add("U")
            x_offset = end
        for (row, offset), links in cells.items():
            char = _BOX.get(frozenset(links - {"L", "R"} if {"U", "D"} <= links else links))
            if char is None:
                char = "─" if links <= {"L", "R"} else "│"
            self.set(row, column(offset), char, role, send.owner)
        head = "▶" if send.side == "client" else "◀"
        self.set(last, column(span - 1), head, role, send.owner)
        return lambda: self._label(send, first, bounds, span, role)

    def _label(self, send: Mark, row: int, bounds: list[int], span: int, role: str) -> None:
        """The label rides on the send row, beside the arrow's first run if it fits."""
        g = self.geometry
        run = max(bounds[1], 1)
        text = f" {send.text} "
        beside = span - run - 1
        if len(text) <= beside:
            x = g.client_x + 1 + run if send.side == "client" else g.server_x - run - len(text)
        else:
            # Too long to sit beside the arrow: the label covers the first run.
            text = fit_label(send.text, span)
            x = g.client_x + 1 if send.side == "client" else g.server_x - len(text)
        for offset, char in enumerate(text):
            self.set(row, x + offset, char, role, send.owner)

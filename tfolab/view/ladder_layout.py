"""The ladder diagram as a grid of characters: pure layout, no Textual.

A simulation's events become *marks* (a segment has two: sent and arrived),
and time flows down to one stated scale ("1 row = 2 ms").

Rules:
- The scale holds for every arrow: an arrow covers exactly
  round(flight / scale) rows. Simultaneous events share their time's row;
  nothing stretches them. Rows are added only where no segment is in flight
  (a rule between iterations that had no room), and a gap longer than
  MAX_GAP_ROWS with nothing in flight is drawn as a visible break (the 40 ms
  delayed-ACK timer).
- Lanes: arrows that would run over one another (sent together, the same
  way) move down a row or more *as a whole*, so their length, and with it
  the scale, stays; they never share a stroke.
- Side texts (application calls, timers, notes) live in the columns beside
  the axes, wrapped (tfolab.view.ladder_labels), stacked below one another
  when they fall on the same row; arrows never enter those columns. The
  gutter states a time only on the row that event starts on by its time (or
  its lane); a text pushed down by others has none (the step panel has it).
- The measured marker goes on one line between the axes, near its moment,
  on blank cells, before the labels.
- Labels are placed last, on an arrow's own rows, beside its stroke and only
  on blank cells, so no label covers a stroke or another label; a label
  that finds no room drops fields (ladder_labels.label_variants), and only
  as the last resort covers its own arrow's first run.
- With `fold`, a flight of many segments is one arrow (tfolab.view.flight_fold);
  a folded-away segment's rows are its flight's.
- Pure: events in, rows of (char, role, owner) cells out. The widget decides
  colours from the role and from the owner (the index of the event); an
  arrow's role is its sender's ("client" or "server") unless `arrow_roles`
  names another for its owner (the kernel's captured segments: "captured").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from tfolab.model.events import AppCall, Event, Segment, Timer
from tfolab.view.flight_fold import FlightFolds, fold_flights, fold_label_variants
from tfolab.view.kernel_segment import KernelSegment
from tfolab.view.ladder_labels import (
    cut,
    label_variants,
    note_text,
    option_variants,
    side_lines,
)

__all__ = ["NO_OWNER", "LadderLayout", "choose_scale", "layout"]

GUTTER = 7  # " 120.0 " time column
MIN_ANNOTATION = 9
MAX_ANNOTATION = 24
MIN_SPAN = 36  # columns between the axes the annotations leave, where the width allows
MAX_GAP_ROWS = 12  # a gap longer than this (at the scale) becomes a break
BREAK_ROWS = 3
MAX_LANES = 6
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
        spare = self.width - GUTTER - 2 - MIN_SPAN
        self.annotation = max(MIN_ANNOTATION, min(MAX_ANNOTATION, spare // 2))
        self.client_x = GUTTER + self.annotation
        self.server_x = max(self.client_x + 8, self.width - self.annotation - 1)

    @property
    def text_width(self) -> int:
        """Columns a side text may use (one blank beside the axis)."""
        return self.annotation - 1


@dataclass
class LadderLayout:
    """The drawn ladder: rows of cells, and where each event sits."""

    rows: list[list[Cell]]
    scale_ms: float
    geometry: Geometry
    event_rows: dict[int, tuple[int, int]]  # event index -> (first row, last row), labels too
    breaks: int
    arrow_rows: dict[int, tuple[int, int]] = field(default_factory=dict)  # the strokes alone
    # a segment folded into a flight's arrow -> that arrow's event index (flight_fold)
    folded_into: dict[int, int] = field(default_factory=dict)

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
        flights = len(set(self.folded_into.values()))
        if flights:
            text += f" · {flights} flight{'s' if flights != 1 else ''} folded"
        return text

    def text(self) -> list[str]:
        return ["".join(char for char, _, _ in row) for row in self.rows]


def _put(line: list[str], x: int, text: str) -> None:
    for offset, char in enumerate(text):
        if 0 <= x + offset < len(line):
            line[x + offset] = char


def build_marks(
    events: Sequence[Event],
    markers: dict[int, str] | None = None,
    hidden: frozenset[int] = frozenset(),
) -> list[Mark]:
    """Marks in drawing order; `markers` adds a text after an event (by index); the
    `hidden` events (folded into another's arrow) have none."""
    marks: list[Mark] = []
    for index, event in enumerate(events):
        if index in hidden:
            continue
        iteration = event.iteration
        if isinstance(event, Segment):
            sent, arrived = event.sent_ms, event.arrived_ms
            marks.append(Mark(sent, (sent, 1, index), index, "send", event.sender, iteration))
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
            side = "server" if event.side == "both" else event.side
            marks.append(
                Mark(event.time_ms, at, index, "note", side, iteration, note_text(event.text))
            )
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


@dataclass
class _Timing:
    """Each mark's row and the iteration rules (the time axis, before breaks)."""

    rows: list[int]
    rules: dict[int, str]  # row -> iteration title


def _time_rows(marks: Sequence[Mark], scale: float) -> _Timing:
    rows: list[int] = []
    rules: dict[int, str] = {}
    in_flight: set[int] = set()
    anchor_row, anchor_time = 1, 0.0
    last_row, previous = 0, None
    newest = -1
    for mark in marks:
        if previous is None:
            anchor_time = mark.time_ms
            row = 1
        else:
            row = anchor_row + round((mark.time_ms - anchor_time) / scale)
        if mark.iteration > newest:
            newest = mark.iteration
            title = "setup / warm-up" if mark.iteration == 0 else f"iteration {mark.iteration}"
            if previous is not None and not in_flight and row < last_row + 2:
                # Room for the rule: nothing is in flight, so no arrow stretches.
                row = last_row + 2
                anchor_row, anchor_time = row, mark.time_ms
            rules[max(row - 1, 0)] = title
        if mark.kind == "send":
            in_flight.add(mark.owner)
        elif mark.kind == "arrive":
            in_flight.discard(mark.owner)
        rows.append(row)
        last_row = max(last_row, row)
        previous = mark.time_ms
    return _Timing(rows, rules)


def layout(
    events: Sequence[Event],
    width: int,
    one_way_delay_ms: float,
    markers: dict[int, str] | None = None,
    arrow_roles: Mapping[int, str] | None = None,
    *,
    fold: bool = False,
) -> LadderLayout:
    """Place every event on rows and draw axes, arrows, side texts and labels."""
    geometry = Geometry(max(width, GUTTER + 2 * MIN_ANNOTATION + 12))
    scale = choose_scale(one_way_delay_ms)
    folds = fold_flights(events) if fold else FlightFolds(tuple(events))
    events = folds.events
    marks = build_marks(events, markers, folds.hidden)
    timing = _time_rows(marks, scale)
    grid = _Grid(geometry, folds.counts)
    event_rows: dict[int, tuple[int, int]] = {}

    def seen(owner: int, first: int, last: int) -> None:
        if owner == NO_OWNER:
            return
        old = event_rows.get(owner, (first, last))
        event_rows[owner] = (min(old[0], first), max(old[1], last))

    sends: dict[int, tuple[Mark, int]] = {}
    arrows: list[_Arrow] = []
    texts: list[tuple[Mark, int]] = []
    for mark, row in zip(marks, timing.rows, strict=True):
        if mark.kind == "send":
            sends[mark.owner] = (mark, row)
        elif mark.kind == "arrive":
            send, send_row = sends[mark.owner]
            event = events[mark.owner]
            assert isinstance(event, Segment)
            role = (arrow_roles or {}).get(mark.owner) or send.side
            # Its length is its own flight at the scale, whatever the rounding of its ends;
            # a lost one is drawn as the flight it began, cut off halfway (place_arrow).
            flight_ms = one_way_delay_ms if event.lost else event.arrived_ms - event.sent_ms
            rows = round(flight_ms / scale)
            arrows.append(grid.place_arrow(event, send, send_row, send_row + rows, role))
        else:
            texts.append((mark, row))
    for arrow in arrows:
        grid.time(arrow.first, arrow.send.time_ms, arrow.send.owner)
        seen(arrow.send.owner, arrow.first, arrow.last)
    measured = [(mark, row) for mark, row in texts if mark.kind == "measured"]
    for mark, row in texts:
        if mark.kind == "measured":
            continue
        first, last = grid.side_text(mark, row)
        if first == row:
            # A text pushed down by others at the same moment gets no time of its
            # own: the gutter only states times on their own rows.
            grid.time(first, mark.time_ms, mark.owner)
        seen(mark.owner, first, last)
    for mark, row in measured:
        # The measured time, before any label: one line between the axes near its
        # moment (on blank cells), else beside the client's axis.
        near = sorted(range(max(row - 3, 0), row + 10), key=lambda r: (abs(r - row), r))
        spot = grid.free_stretch(mark.text, near)
        if spot is not None:
            grid.write(spot[0], spot[1], mark.text, "measured", NO_OWNER)
            grid.labels.update((spot[0], spot[1] + k) for k in range(len(mark.text)))
        else:
            grid.side_text(mark, row)
    for arrow in arrows:
        used = grid.label(arrow)
        seen(arrow.send.owner, min(used), max(used))
    for row, title in timing.rules.items():
        grid.rule(row, title)
    moved, breaks = grid.compress(scale)
    for row, text in breaks.items():
        grid.break_row(row, text)
    grid.axes(set(breaks))
    event_rows = {owner: (moved[a], moved[b]) for owner, (a, b) in event_rows.items()}
    arrow_rows = {a.send.owner: (moved[a.first], moved[a.last]) for a in arrows}
    for member, flight in folds.folded_into.items():
        if flight in event_rows:
            event_rows[member] = event_rows[flight]
        if flight in arrow_rows:
            arrow_rows[member] = arrow_rows[flight]
    return LadderLayout(
        grid.rows, scale, geometry, event_rows, len(breaks), arrow_rows, folds.folded_into
    )


LOST_MARK = "✕"  # where a lost segment's arrow stops (the `drop` setting)


def _halfway(runs: list[tuple[int, int, int]], side: str) -> list[tuple[int, int, int]]:
    """A slant's runs cut off halfway across: the arrow of a segment the path lost."""
    cells = sum(b - a + 1 for _, a, b in runs)
    left = max(cells // 2, 1)
    kept = []
    for row, a, b in runs:
        width = b - a + 1
        if width >= left:
            kept.append((row, a, a + left - 1) if side == "client" else (row, b - left + 1, b))
            break
        kept.append((row, a, b))
        left -= width
    return kept


@dataclass
class _Arrow:
    event: Segment
    send: Mark
    first: int
    last: int
    role: str
    runs: list[tuple[int, int, int]]  # (row, x0, x1) of each horizontal run


class _Grid:
    def __init__(self, geometry: Geometry, fold_counts: Mapping[int, int] | None = None) -> None:
        self.geometry = geometry
        self.fold_counts = fold_counts or {}  # a folded flight's arrow -> its segments
        self.rows: list[list[Cell]] = []
        # stroke cells -> the side their arrow left from: arrows the same way must not
        # share strokes (they would merge); arrows the other way cross, as in any ladder.
        self.strokes: dict[tuple[int, int], str] = {}
        self.heads: set[tuple[int, int]] = set()  # arrowheads: never drawn over
        self.labels: set[tuple[int, int]] = set()  # label cells: never drawn over
        self.side_rows: dict[str, set[int]] = {"client": set(), "server": set()}
        self.stated: dict[int, float] = {}  # row -> the time its gutter states (to 0.1 ms)

    def _ensure(self, row: int) -> None:
        while len(self.rows) <= row + 1:
            self.rows.append([(" ", "gutter", NO_OWNER)] * self.geometry.width)

    def set(self, row: int, x: int, char: str, role: str, owner: int) -> None:
        if row >= 0 and 0 <= x < self.geometry.width:
            self._ensure(row)
            self.rows[row][x] = (char, role, owner)

    def blank(self, row: int, x: int) -> bool:
        if row < 0 or not 0 <= x < self.geometry.width:
            return False
        self._ensure(row)
        char, _, owner = self.rows[row][x]
        return char == " " and owner == NO_OWNER

    def write(self, row: int, x: int, text: str, role: str, owner: int) -> None:
        for offset, char in enumerate(text):
            self.set(row, x + offset, char, role, owner)

    # --- the time axis ---------------------------------------------------------

    def axes(self, breaks: Iterable[int]) -> None:
        g = self.geometry
        breaking = {r + d for r in breaks for d in (-1, 0, 1)}
        for row in range(len(self.rows)):
            char = "┊" if row in breaking else "│"
            for x in (g.client_x, g.server_x):
                if self.rows[row][x][0] == " ":
                    self.set(row, x, char, "axis", NO_OWNER)

    def time(self, row: int, time_ms: float, owner: int) -> None:
        self._ensure(row)
        if row in self.side_rows["client"] and not self.blank(row, GUTTER):
            pass  # a side text's row: the time still goes in the gutter
        if all(self.blank(row, x) for x in range(GUTTER - 1)):
            self.write(row, 0, f"{time_ms:6.1f}"[: GUTTER - 1], "gutter", owner)
            self.stated[row] = round(time_ms, 1)

    def break_row(self, row: int, text: str) -> None:
        g = self.geometry
        self.write(row, 1, "  ⋮", "break", NO_OWNER)
        label = f"≈ {text} later"
        middle = (g.client_x + g.server_x) // 2
        self.write(row, max(middle - len(label) // 2, g.client_x + 1), label, "break", NO_OWNER)

    def rule(self, row: int, title: str) -> None:
        """Where an iteration starts: a full rule on an empty row, else a side note.

        Iterations overlap (the FIN of one beside the SYN of the next): a line
        across arrows would mislead, so there the title goes beside the
        client's axis instead, like any side text.
        """
        g = self.geometry
        self._ensure(row)
        if not all(self.blank(row, x) for x in range(g.width)):
            self.side_text(
                Mark(0.0, (0.0, 0, 0), NO_OWNER, "iteration", "client", 0, f"╌ {title}"), row
            )
            return
        for x in range(1, g.width - 1):
            if x not in (g.client_x, g.server_x):
                self.set(row, x, "╌", "iteration", NO_OWNER)
        text = f" {title} "
        x = g.client_x + 3 if g.client_x + 3 + len(text) < g.server_x else 1
        self.write(row, x, text, "iteration", NO_OWNER)

    def compress(self, scale: float) -> tuple[dict[int, int], dict[int, str]]:
        """Every run of more than MAX_GAP_ROWS empty rows becomes a break of BREAK_ROWS rows.

        Returns where each old row went, and the breaks (row -> "43.2 ms").
        Empty means nothing at all is drawn there: no arrow is in flight.
        """
        self._ensure(0)
        empty = [all(char == " " for char, _, _ in row) for row in self.rows]
        times = self.stated
        moved: dict[int, int] = {}
        kept: list[list[Cell]] = []
        breaks: dict[int, str] = {}
        number = 0
        while number < len(self.rows):
            end = number
            while end < len(self.rows) and empty[end]:
                end += 1
            if end - number > MAX_GAP_ROWS and end < len(self.rows):
                before = [t for r, t in times.items() if r < number]
                after = [t for r, t in times.items() if r >= end]
                gap = (min(after) - max(before)) if before and after else (end - number) * scale
                for old in range(number, end):
                    moved[old] = len(kept) + 1
                breaks[len(kept) + 1] = f"{format_ms(gap)} ms"
                kept += [self._blank_row() for _ in range(BREAK_ROWS)]
                number = end
                continue
            moved[number] = len(kept)
            kept.append(self.rows[number])
            number += 1
        self.rows = kept
        return moved, breaks

    def _blank_row(self) -> list[Cell]:
        return [(" ", "gutter", NO_OWNER)] * self.geometry.width

    # --- side texts ------------------------------------------------------------

    def side_text(self, mark: Mark, row: int) -> tuple[int, int]:
        """Wrap and stack a side text at the first free rows from `row`; its rows."""
        g = self.geometry
        side = mark.side if mark.side in ("client", "server") else "server"
        lines = side_lines(mark.text, g.text_width, is_note=mark.kind == "note")
        taken = self.side_rows[side]
        start = row
        while any(r in taken for r in range(start, start + len(lines))):
            start += 1
        role = mark.kind
        for offset, line in enumerate(lines):
            r = start + offset
            taken.add(r)
            line = cut(line, g.text_width)
            x = g.client_x - 1 - len(line) if side == "client" else g.server_x + 2
            self.write(r, x, line, role, mark.owner)
        return start, start + len(lines) - 1

    # --- arrows ------------------------------------------------------------------

    def _runs(self, side: str, first: int, last: int) -> list[tuple[int, int, int]]:
        """The horizontal runs (row, x0, x1) of a stepped slant from first to last row."""
        g = self.geometry
        left, right = g.client_x + 1, g.server_x - 1
        span = right - left + 1
        rows = last - first + 1
        bounds = [round(j * span / rows) for j in range(rows + 1)]
        runs = []
        x_offset = 0
        for j in range(rows):
            end = span - 1 if j == rows - 1 else max(bounds[j + 1] - 1, x_offset)
            a, b = (
                (left + x_offset, left + end)
                if side == "client"
                else (
                    right - end,
                    right - x_offset,
                )
            )
            runs.append((first + j, a, b))
            x_offset = end
        return runs

    def place_arrow(self, event: Segment, send: Mark, first: int, last: int, role: str) -> _Arrow:
        """The arrow in the first lane (0..MAX_LANES rows down) where it shares no stroke.

        Crossing an arrow that goes the other way is fine (that is a ladder);
        sharing more than a cell with one that goes the same way (they would
        merge), or touching an arrowhead, is not.
        """
        best: tuple[int, float] | None = None
        # A captured arrow that agrees with the model's (the "both" view) is the
        # same flight: it is drawn over the model's, in its own style, no lane.
        same = role != event.sender and isinstance(event, KernelSegment) and event.as_model
        lanes = 0 if same else MAX_LANES
        lane = 0
        while lane <= lanes or (
            not same and best is not None and best[1] >= 100 and lane <= 4 * MAX_LANES
        ):
            # Beyond MAX_LANES only to keep an arrowhead visible (bursts at a tiny delay).
            runs = self._runs(send.side, first + lane, last + lane)
            cells = [(row, x) for row, a, b in runs for x in range(a, b + 1)]
            row, a, b = runs[-1]
            head = (row, b if send.side == "client" else a)
            shared = sum(1 for cell in cells if self.strokes.get(cell) == send.side)
            touches = any(cell in self.heads for cell in cells) or head in self.strokes
            cost = shared + (100 if touches else 0)
            if cost <= 1:
                best = (lane, cost)
                break
            if best is None or cost < best[1]:
                best = (lane, cost)
            lane += 1
        lane = best[0] if best else 0
        runs = self._runs(send.side, first + lane, last + lane)
        if event.lost:
            runs = _halfway(runs, send.side)
        arrow = _Arrow(event, send, first + lane, runs[-1][0], role, runs)
        self._draw(arrow, register=not same)
        return arrow

    def _draw(self, arrow: _Arrow, *, register: bool = True) -> None:
        side, owner = arrow.send.side, arrow.send.owner
        forward = "R" if side == "client" else "L"
        backward = "L" if side == "client" else "R"
        cells: dict[tuple[int, int], set[str]] = {}
        runs = arrow.runs
        for j, (row, a, b) in enumerate(runs):
            start, end = (a, b) if side == "client" else (b, a)
            step = 1 if side == "client" else -1
            for x in range(start, end + step, step):
                links = cells.setdefault((row, x), set())
                if x != start or j == 0:
                    links.add(backward)
                if x != end or j == len(runs) - 1:
                    links.add(forward)
            if j < len(runs) - 1:
                cells[(row, end)].add("D")
                cells.setdefault((row + 1, end), set()).add("U")
        for (row, x), links in cells.items():
            if (row, x) in self.heads:
                continue  # another arrow's head stays visible
            char = _BOX.get(frozenset(links - {"L", "R"} if {"U", "D"} <= links else links))
            if char is None:
                char = "─" if links <= {"L", "R"} else "│"
            old = self.rows[row][x] if row < len(self.rows) else (" ", "gutter", NO_OWNER)
            if old[2] != NO_OWNER and old[2] != owner and old[0] != char:
                char = "┼"  # two arrows cross here
            self.set(row, x, char, arrow.role, owner)
            if register:
                self.strokes.setdefault((row, x), side)
        row, a, b = runs[-1]
        head = b if side == "client" else a
        mark = LOST_MARK if arrow.event.lost else "▶" if side == "client" else "◀"
        self.set(row, head, mark, arrow.role, owner)
        self.heads.add((row, head))

    # --- labels ------------------------------------------------------------------

    def _spot(self, arrow: _Arrow, text: str, rows: Sequence[int]) -> tuple[int, int] | None:
        """Where `text` fits on blank cells beside the arrow's run, on one of `rows`."""
        g = self.geometry
        left, right = g.client_x + 1, g.server_x - 1
        runs = {row: (a, b) for row, a, b in arrow.runs}
        ahead_first = arrow.send.side == "client"
        for row in rows:
            a, b = runs[row]
            after = (b + 2, right)  # to the right of the run
            before = (left, a - 2)  # to the left of it
            for lo, hi in (after, before) if ahead_first else (before, after):
                if hi - lo + 1 < len(text):
                    continue
                x = lo if (lo, hi) == after else hi - len(text) + 1
                cells = range(
                    x - 1 if x > left else x, x + len(text) + (1 if x + len(text) <= right else 0)
                )
                if all(self.blank(row, c) for c in cells):
                    return row, x
        return None

    def _write_label(self, spot: tuple[int, int], text: str, role: str, owner: int) -> None:
        row, x = spot
        self.write(row, x, text, role, owner)
        self.labels.update((row, x + offset) for offset in range(len(text)))

    def free_stretch(self, text: str, rows: Sequence[int]) -> tuple[int, int] | None:
        return self._anywhere(text, rows)

    def _anywhere(self, text: str, rows: Sequence[int]) -> tuple[int, int] | None:
        """The first blank stretch between the axes (with a blank each side) on `rows`."""
        g = self.geometry
        left, right = g.client_x + 1, g.server_x - 1
        for row in rows:
            if row < 0:
                continue
            for x in range(left, right - len(text) + 2):
                cells = range(max(x - 1, left), min(x + len(text) + 1, right + 1))
                if all(self.blank(row, c) for c in cells):
                    return row, x
        return None

    def _variants(self, arrow: _Arrow) -> list[str]:
        count = self.fold_counts.get(arrow.send.owner)
        if count is None:
            return label_variants(arrow.event)
        return fold_label_variants(arrow.event, count)

    def label(self, arrow: _Arrow) -> list[int]:
        """Write the arrow's label (and a SYN's options); the rows they took."""
        owner, role = arrow.send.owner, arrow.role
        rows = [row for row, _, _ in arrow.runs]
        placed_row = None
        for variant in self._variants(arrow):
            spot = self._spot(arrow, variant, rows)
            if spot is not None:
                self._write_label(spot, variant, role, owner)
                placed_row = spot[0]
                break
        if placed_row is None:
            # Next: any blank stretch between the axes, on its rows or the row beside them.
            near = [arrow.first - 1, *rows, arrow.last + 1]
            for variant in self._variants(arrow):
                spot = self._anywhere(variant, near)
                if spot is not None:
                    self._write_label(spot, variant, role, owner)
                    placed_row = spot[0]
                    break
        if placed_row is None:
            # The last resort: over strokes (never another label or an arrowhead), on
            # the arrow's own rows, fields dropped, then cut; else no label (the step
            # panel says it all).
            g = self.geometry
            left, right = g.client_x + 2, g.server_x - 2
            span = right - left + 1
            variants = [v for v in self._variants(arrow) if len(v) <= span] or [
                cut(self._variants(arrow)[-1], span)
            ]
            if isinstance(arrow.event, KernelSegment) and arrow.event.as_model:
                return [arrow.first]  # only "as the model": the step panel says it
            taken = self.labels | self.heads
            for text in variants:
                for row in rows:
                    for x in range(left, right - len(text) + 2):
                        cells = {(row, x + offset) for offset in range(-1, len(text) + 1)}
                        if not cells & taken:
                            self._write_label((row, x), text, role, owner)
                            placed_row = row
                            break
                    if placed_row is not None:
                        break
                if placed_row is not None:
                    break
            if placed_row is None:
                return [arrow.first]
        later = [row for row in rows if row > placed_row]
        for variant in option_variants(arrow.event):
            spot = self._spot(arrow, variant, later)
            if spot is not None:
                self._write_label(spot, variant, role, owner)
                return [placed_row, spot[0]]
        return [placed_row]

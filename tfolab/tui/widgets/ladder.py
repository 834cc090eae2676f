"""The ladder widget: draws a LadderLayout and highlights the current step.

Rules:
- Layout is pure (ladder_layout.py); this widget only turns cells into styled
  strips. Colours come from component classes in tfolab.tcss, so the theme
  owns them.
- Row 0 is a pinned header (client and server above their axes); the rest
  scrolls. The current step's rows are kept in view.
- Events after the current step are drawn faded: stepping reveals the story.
- A click on a row selects the event drawn there (StepClicked), so the mouse
  works as well as the keys.
- It draws whatever view the screen hands it (tfolab.view.captured's
  LadderContent: the model's ladder, the captured one, or both): captured
  arrows over the model's have the role "captured", and the segments that
  disagree with the model carry the "disagree" style. With nothing to draw it
  says why instead.
"""

from __future__ import annotations

import textwrap
from typing import ClassVar

from rich.segment import Segment as RichSegment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size, Spacing
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tfolab.view.captured import CAPTURED_ROLE, LadderContent
from tfolab.view.ladder_layout import NO_OWNER, LadderLayout, layout
from tfolab.view.run_summary import Capture, capture_words

ROLES = (
    "axis",
    "gutter",
    "client",
    "server",
    "app",
    "timer",
    "note",
    "break",
    "iteration",
    "measured",
    CAPTURED_ROLE,
)
ARROWS = ("client", "server", CAPTURED_ROLE)


def empty_text(content: LadderContent) -> str:
    """What the ladder says instead of arrows, when a view has none (with the UI's key)."""
    if content.capture.state is Capture.NOT_RUN:
        return (
            "Nothing to draw: no real run of these settings yet (press r to run it and "
            "capture its packets)."
        )
    if content.capture.state is not Capture.CAPTURED:
        return f"Nothing to draw: {capture_words(content.capture)}."
    return "No events: the scenario did nothing."


class LadderView(ScrollView, can_focus=True, inherit_bindings=False):
    """Client and server columns, time flowing down, one arrow per segment."""

    # Only vertical scrolling here: left, right and home belong to the steps.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "scroll_up", "Scroll up", show=False),
        Binding("down,j", "scroll_down", "Scroll down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
    ]

    COMPONENT_CLASSES = {f"ladder--{role}" for role in ROLES} | {
        "ladder--header",
        "ladder--current",
        "ladder--future",
        "ladder--path",
        "ladder--disagree",
        "ladder--message",
    }

    step: reactive[int] = reactive(0)
    # a flight of many segments as one arrow (tfolab.view.flight_fold); f toggles it
    fold_flights: bool = True

    class StepClicked(Message):
        """The user clicked an event in the ladder."""

        def __init__(self, step: int) -> None:
            super().__init__()
            self.step = step

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._content = LadderContent("model", "Ladder")
        self._delay_ms = 10.0
        self._styles: dict[tuple[str, bool, str, bool], Style] = {}
        self._layout: LadderLayout | None = None
        self._message: list[str] = []
        self._built_width = 0

    @property
    def ladder_layout(self) -> LadderLayout | None:
        return self._layout

    @property
    def message(self) -> str:
        """What the ladder says instead of arrows ("" when it draws some)."""
        return " ".join(self._message)

    def show(self, content: LadderContent, one_way_delay_ms: float) -> None:
        """Draw one view of a scenario (after a re-simulation, a real run or a view change)."""
        self._content = content
        self._delay_ms = one_way_delay_ms
        self._rebuild()

    def toggle_fold(self) -> None:
        """Flights folded into one arrow each, or every segment on its own."""
        self.fold_flights = not self.fold_flights
        self._rebuild()

    def _content_width(self) -> int:
        return max(self.scrollable_content_region.width, 40)

    def _rebuild(self) -> None:
        width = self._content_width()
        self._built_width = width
        content = self._content
        self.border_title = content.title
        if not content.events:
            self._layout = None
            self._message = textwrap.wrap(empty_text(content), max(width - 2, 20))
            self.virtual_size = Size(width, len(self._message) + 1)
            self.border_subtitle = ""
            self.refresh()
            return
        self._message = []
        self._layout = layout(
            content.events,
            width,
            self._delay_ms,
            content.markers,
            content.roles,
            fold=self.fold_flights,
        )
        self.virtual_size = Size(width, self._layout.height + 1)
        self.border_subtitle = self._layout.scale_text()
        self.refresh()
        self.call_after_refresh(self._scroll_to_step)

    def on_resize(self, _event: events.Resize) -> None:
        if self._content_width() != self._built_width:
            self._rebuild()

    def watch_step(self, _old: int, _new: int) -> None:
        self.refresh()
        self._scroll_to_step()

    def _scroll_to_step(self) -> None:
        if self._layout is None or self.step not in self._layout.event_rows:
            return
        first, last = self._layout.event_rows[self.step]
        # +1: row 0 of the widget is the pinned header.
        region = Region(0, first + 1, 1, last - first + 1)
        self.scroll_to_region(region, animate=False, spacing=Spacing(2, 0, 2, 0), immediate=True)

    def on_click(self, event: events.Click) -> None:
        if self._layout is None or event.y < 1:
            return
        row = int(self.scroll_offset.y) + event.y - 1
        if not 0 <= row < self._layout.height:
            return
        owners = [owner for _, _, owner in self._layout.rows[row] if owner != NO_OWNER]
        if owners:
            self.post_message(self.StepClicked(max(set(owners), key=owners.count)))

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        if self._layout is None:
            if 1 <= y <= len(self._message):
                style = self.get_component_rich_style("ladder--message")
                text = " " + self._message[y - 1]
                return Strip([RichSegment(text, style)]).crop_extend(0, width, None)
            return Strip.blank(width)
        if y == 0:
            style = self.get_component_rich_style("ladder--header")
            return Strip([RichSegment(self._layout.header(), style)]).crop_extend(0, width, None)
        row = int(self.scroll_offset.y) + y - 1
        if not 0 <= row < self._layout.height:
            return Strip.blank(width)
        return self._row_strip(row).crop_extend(int(self.scroll_offset.x), width, None)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles.clear()

    def _style(self, role: str, on_path: bool, state: str, disagree: bool = False) -> Style:
        """The style of a cell, from the component classes, computed once per combination."""
        key = (role, on_path, state, disagree)
        style = self._styles.get(key)
        if style is None:
            style = self.get_component_rich_style(f"ladder--{role}") if role in ROLES else Style()
            if on_path:
                style += self.get_component_rich_style("ladder--path")
            if disagree:
                style += self.get_component_rich_style("ladder--disagree")
            if state:
                style += self.get_component_rich_style(f"ladder--{state}")
            self._styles[key] = style
        return style

    def _row_strip(self, row: int) -> Strip:
        segments: list[RichSegment] = []
        run_text: list[str] = []
        run_key: tuple[str, bool, str, bool] | None = None
        step = self.step
        # a step on a folded-away segment lights its flight's arrow
        current = self._layout.folded_into.get(step, step) if self._layout else step
        rows = self._layout.rows[row] if self._layout else []
        path, marked = self._content.path, self._content.sentences
        for char, role, owner in rows:
            if owner == NO_OWNER:
                key = (role, False, "", False)
            else:
                on_path = owner in path and role in (*ARROWS, "timer")
                state = "current" if owner == current else "future" if owner > step else ""
                key = (role, on_path, state, owner in marked and role in ARROWS)
            if key != run_key and run_text and run_key is not None:
                segments.append(RichSegment("".join(run_text), self._style(*run_key)))
                run_text = []
            run_key = key
            run_text.append(char)
        if run_text and run_key is not None:
            segments.append(RichSegment("".join(run_text), self._style(*run_key)))
        return Strip(segments)

"""The guide modal: the lab's Markdown guide, one key (g) away from the ladder.

Rules: read-only; the text is the lab's guide file, as the start screen shows it.
"""

from __future__ import annotations

from typing import ClassVar, Protocol

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown, Static


class HasGuide(Protocol):
    """A lab, or the bench: a title and a Markdown guide."""

    @property
    def title(self) -> str: ...

    def guide_text(self) -> str: ...


class GuideScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,g,q", "dismiss", "Close"),
        Binding("j,down", "scroll(1)", "Down", show=False),
        Binding("k,up", "scroll(-1)", "Up", show=False),
    ]

    def __init__(self, lab: HasGuide) -> None:
        super().__init__()
        self.lab = lab

    def compose(self) -> ComposeResult:
        with Vertical(id="guide-dialog"):
            yield Static(f"{self.lab.title} — guide   (g / Esc closes)", id="guide-title")
            with VerticalScroll(id="guide-scroll"):
                yield Markdown(self.lab.guide_text(), id="guide-text")

    def on_mount(self) -> None:
        self.query_one("#guide-scroll").focus()

    def action_scroll(self, lines: int) -> None:
        self.query_one("#guide-scroll", VerticalScroll).scroll_relative(y=lines, animate=False)

"""The guide modal: the lab's Markdown guide, one key (g) away from the ladder.

Rules: read-only; the text is the lab's guide file, as the start screen shows it.
The answers to its questions stay hidden (tfolab.view.guide) until `a`
reveals them; in demo mode they show from the start.
"""

from __future__ import annotations

from typing import ClassVar, Protocol

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown, Static

from tfolab.view.guide import guide_markdown


class HasGuide(Protocol):
    """A lab, or the bench: a title and a Markdown guide."""

    @property
    def title(self) -> str: ...

    def guide_text(self) -> str: ...


class GuideScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,g,q", "dismiss", "Close"),
        Binding("a", "reveal", "Answers"),
        Binding("j,down", "scroll(1)", "Down", show=False),
        Binding("k,up", "scroll(-1)", "Up", show=False),
    ]

    def __init__(self, lab: HasGuide, *, reveal: bool = False) -> None:
        super().__init__()
        self.lab = lab
        self.revealed = reveal

    def compose(self) -> ComposeResult:
        with Vertical(id="guide-dialog"):
            yield Static(self._title(), id="guide-title")
            with VerticalScroll(id="guide-scroll"):
                yield Markdown(self._text(), id="guide-text")

    def _title(self) -> str:
        answers = "a hides the answers" if self.revealed else "a reveals the answers"
        return f"{self.lab.title} — guide   (g / Esc closes · {answers})"

    def _text(self) -> str:
        return guide_markdown(self.lab.guide_text(), reveal=self.revealed)

    def action_reveal(self) -> None:
        self.revealed = not self.revealed
        self.query_one("#guide-title", Static).update(self._title())
        self.query_one("#guide-text", Markdown).update(self._text())

    def on_mount(self) -> None:
        self.query_one("#guide-scroll").focus()

    def action_scroll(self, lines: int) -> None:
        self.query_one("#guide-scroll", VerticalScroll).scroll_relative(y=lines, animate=False)

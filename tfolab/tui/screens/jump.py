"""The jump modal: type an iteration's number, the ladder goes to its first step.

Rules: it only asks and checks (a whole number in the range offered); the lab
screen does the jump (tfolab.view.focus.iteration_starts). Esc cancels.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class JumpScreen(ModalScreen[int | None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, iterations: list[int]) -> None:
        super().__init__()
        self.iterations = sorted(iterations)

    def compose(self) -> ComposeResult:
        first, last = self.iterations[0], self.iterations[-1]
        setup = " (0: setup / warm-up)" if first == 0 else ""
        with Vertical(id="jump-dialog"):
            yield Static(f"Jump to iteration {max(first, 1)}-{last}{setup}", id="jump-title")
            yield Input(id="jump-input", type="integer", placeholder=str(max(first, 1)))
            yield Static("", id="jump-error", classes="field-error")

    def on_mount(self) -> None:
        self.query_one("#jump-input").focus()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if text.isdigit() and int(text) in self.iterations:
            self.dismiss(int(text))
            return
        self.query_one("#jump-error", Static).update(
            f"give one of {', '.join(str(i) for i in self.iterations)}"
        )

    def action_cancel(self) -> None:
        self.dismiss(None)

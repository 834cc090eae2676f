"""The help modal: every key of every screen, in one table.

Rules: the table is built from KEYS below; a new binding gets a line here too
(tests/tui checks that every screen binding is listed).
"""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS: tuple[tuple[str, str, str], ...] = (
    ("Anywhere", "?", "this help"),
    ("Anywhere", "ctrl+p", "command palette: open any lab or scenario"),
    ("Anywhere", "q / ctrl+q", "quit"),
    ("Anywhere", "b", "the bench: requests with and without Fast Open, per delay"),
    ("Start", "↑ ↓ / Enter", "choose a scenario, open it (Enter on a lab: its first scenario)"),
    ("Start", "g / l", "move to the guide / back to the labs"),
    ("Lab", "Enter", "predict first: commit your predictions (then the ladder shows)"),
    ("Lab", "n / →", "next step"),
    ("Lab", "p / ←", "previous step"),
    ("Lab", "space", "play / pause"),
    ("Lab", "home / 0", "restart from the first step"),
    ("Lab", "+ / -", "play faster / slower"),
    ("Lab", "r", "run the scenario for real (measured beside predicted)"),
    ("Lab", "c", "ladder: model → kernel's captured packets → both"),
    ("Lab", "h", "headline path only (no warm-up, close-down, side notes) / all"),
    ("Lab", "i", "jump to iteration N (type it, Enter)"),
    ("Lab", "w", "save the last run's packets as a pcap (here)"),
    ("Lab", "g", "the lab's guide (in it, a reveals the answers)"),
    ("Lab", "t", "time-sequence graph: the model's, and the kernel's after a run"),
    ("Lab", "f", "ladder: a flight of many segments as one arrow (default) / every segment"),
    ("Lab", "s", "hide / show the side panel (folded on narrow terminals)"),
    ("Lab", "tab", "move between ladder, delay, preset, scenario, switches"),
    ("Lab", "click", "a row of the ladder selects that step"),
    ("Lab", "esc", "leave a field; then back to the labs"),
    ("Bench", "r", "run the bench with the settings on the left"),
    ("Bench", "l", "latency distribution: the next delay and server"),
    ("Bench", "g", "the bench's guide"),
    ("Bench", "esc", "leave a field; then back"),
)


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,question_mark,q", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        table = Table(box=None, expand=True, show_header=True, header_style="bold")
        table.add_column("where", style="dim", no_wrap=True)
        table.add_column("key", style="bold cyan", no_wrap=True)
        table.add_column("does")
        for where, key, does in KEYS:
            table.add_row(where, key, does)
        with Vertical(id="help-dialog"):
            yield Static("Keys   (? / Esc closes)", id="help-title")
            with VerticalScroll(id="help-scroll"):
                yield Static(table)
            yield Static(
                "Time flows down the ladder; an arrow is a segment, from the row it "
                "left to the row it arrived. The highlighted step is explained below "
                "the ladder. D is the one-way delay (RTT = 2D).",
                id="help-note",
            )

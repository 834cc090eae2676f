"""A served session in a classroom: the student's name, asked once, and their saved runs.

Rules:
- Only where `tfolab serve --results DIR` collects results (TFOLAB_RESULTS_DIR
  in this session's environment): the name is asked once, at start, and every
  real run is saved there with it (tfolab.lab.results_dir). Elsewhere nothing
  here is shown and nothing is written.
- The name is cleaned (tfolab.lab.names: no control or bidi characters, at
  most NAME_MAX characters) and saved with the session's identity
  (tfolab.lab.identity).
- A save that fails says so in a notification; the run itself stands.
- A served session yields the CPU to measuring runs: it runs in the one
  scheduler autogroup at nice 19 that `tfolab serve` leads for all its
  sessions (tfolab.core.autogroup); a run it starts waits there and moves to
  a group of its own, at nice 0, only once it holds a measurement slot
  (tfolab/runner), so thirty UIs redrawing and twenty-nine runs waiting do
  not delay a measurement's wake-ups. While it measures, that run also keeps
  them all off one CPU (tfolab.runner.served_class), so its lab always finds one idle.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from tfolab.lab.identity import session_identity
from tfolab.lab.names import NAME_MAX, clean_name
from tfolab.lab.results_dir import results_dir_from_env, save_result

if TYPE_CHECKING:
    from tfolab.lab.results import LabResult


class SessionNameScreen(ModalScreen[str]):
    """Asks the student's name for the class results; dismisses with it."""

    BINDINGS: ClassVar[list[BindingType]] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="session-name-box"):
            yield Label("Your name for the class results", classes="field-label")
            yield Static(
                "Your teacher collects every real run you make, saved with this name.",
                id="session-name-help",
            )
            yield Input(placeholder="e.g. Ada L.", id="session-name", max_length=NAME_MAX)
            yield Static("", id="session-name-error")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted, "#session-name")
    def _submitted(self, event: Input.Submitted) -> None:
        name = clean_name(event.value)
        if not name:
            self.query_one("#session-name-error", Static).update("Type a name, then Enter.")
            return
        self.dismiss(name)


class Classroom:
    """Where this session saves its runs, and under which name (None until typed)."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory if directory is not None else results_dir_from_env()
        self.session: str | None = None

    @property
    def collecting(self) -> bool:
        return self.directory is not None

    def save_run(self, result: LabResult) -> Path | None:
        """The run's `run --json` object and the session's name, as one file; None if not kept."""
        if self.directory is None:
            return None
        payload = {
            "session": clean_name(self.session or ""),
            "identity": session_identity(),
            "run": result.to_json(),
        }
        return save_result(self.directory, "run", payload)

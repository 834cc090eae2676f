"""The Textual app: bindings, screens, the stylesheet and `run_app()`.

Rules: thin. Screens live in screens/, widgets in widgets/, styles in
tfolab.tcss. The app holds what every screen shares: the labs, the kernel HZ
the model uses, whether real runs are possible here, the delay backend, and
the students' committed predictions (tfolab.tui.predicting; demo mode asks
none). Only what the start screen needs is imported before the first frame;
a lab's screen is imported when a lab opens.
"""

from __future__ import annotations

import os
import sys
from typing import ClassVar

from textual.app import App
from textual.binding import Binding, BindingType

from tfolab.core import kernel
from tfolab.core.errors import UserError
from tfolab.lab.attempts import RESULTS_DIR_ENV
from tfolab.lab.catalog import Lab, load_labs
from tfolab.lab.environment import RealRunStatus, quick_check
from tfolab.tui.classroom import Classroom, SessionNameScreen
from tfolab.tui.commands import LabCommands
from tfolab.tui.predicting import Predictions
from tfolab.tui.screens.help import HelpScreen
from tfolab.tui.screens.start import StartScreen


class TfolabApp(App[None]):
    """An interactive TCP lab: predict with the model, then measure the kernel."""

    CSS_PATH = "tfolab.tcss"
    TITLE = "tfolab"
    COMMANDS = App.COMMANDS | {LabCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark", "help", "Help"),
        Binding("b", "bench", "Bench"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(
        self,
        labs: list[Lab] | None = None,
        *,
        hz: int | None = None,
        real_runs: RealRunStatus | None = None,
        backend: str = "auto",
        open_lab: str | None = None,
        open_scenario: str | None = None,
        demo: bool = False,
    ) -> None:
        super().__init__()
        # Predict first, unless a teacher demonstrates (tfolab --demo).
        self.predictions = Predictions(demo=demo)
        self.student = ""
        self.results_folder = os.environ.get(RESULTS_DIR_ENV, "")
        self.labs = labs if labs is not None else load_labs()
        self.hz = hz or kernel.kernel_hz()[0]
        self.real_runs = real_runs or quick_check()
        self.backend = backend
        self._open = (open_lab, open_scenario)
        self.classroom = Classroom()  # served with --results: the name, and where runs go

    def on_mount(self) -> None:
        self.push_screen(StartScreen(self.labs))
        lab, scenario = self._open
        if lab is not None:
            self.open_lab(lab, scenario)
        if self.classroom.collecting:
            self.push_screen(SessionNameScreen(), self._named)

    def _named(self, name: str | None) -> None:
        self.classroom.session = name
        self.student = name or ""  # the predict form's name, filled in once
        self.sub_title = f"session: {name}"

    def open_lab(self, lab_name: str, scenario: str | None = None) -> None:
        """Open a lab screen (or switch the open one to another scenario)."""
        # Imported here, not at the top: the first frame (the start screen) comes
        # sooner without the lab screen's imports (the pcap and capture paths).
        from tfolab.tui.screens.lab import LabScreen

        lab = next(lab for lab in self.labs if lab.name == lab_name)
        if isinstance(self.screen, LabScreen) and self.screen.lab.name == lab_name:
            if scenario is not None:
                self.screen.select_scenario(scenario)
            return
        if isinstance(self.screen, LabScreen):
            self.pop_screen()
        self.push_screen(LabScreen(lab, scenario))

    def action_bench(self) -> None:
        """The bench screen (`tfolab bench` in the UI), once on the stack."""
        from tfolab.tui.screens.bench import BenchScreen

        if not isinstance(self.screen, BenchScreen):
            self.push_screen(BenchScreen())

    def _fatal_error(self) -> None:
        # Textual's handler for a bug in the app: close without printing its traceback;
        # run_app() raises the error again for the one line and the crash file (exit 3).
        self._close_messages_no_wait()

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())


def run_app(*, demo: bool = False) -> int:
    """`tfolab` without a command: the UI. Exit code 2 if the labs cannot be read.

    An exception Textual caught in the app is raised again here, so the CLI's
    internal-error handler (tfolab.cli.crash) reports it as for any command.
    """
    try:
        app = TfolabApp(demo=demo)
    except UserError as err:
        print(f"tfolab: {err.one_line()}", file=sys.stderr)
        return 2
    app.run()
    error = getattr(app, "_exception", None)  # what Textual caught: a bug of ours
    if isinstance(error, Exception):
        raise error  # tfolab.cli.main reports it: one line, a crash file, exit 3
    return 0

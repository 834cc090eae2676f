"""The lab screen: ladder, current step, parameters and the real run.

Rules:
- State lives in reactives (`step`, `playing`, `speed`, `result`), and the
  widgets follow them in `watch_` methods; handlers only change state.
- Every parameter change plans and re-simulates at once (lab.plan.plan,
  lab.prediction.predict); invalid parameters never get this far (the panel
  shows the error inline). The plan is kept (`lab_plan`): a real run of the
  same parameters runs that plan, never plans again.
- A real run is a Textual worker that awaits session.run in the app's event
  loop; its lab-level progress (tfolab.lab.progress) comes back as RunProgress
  messages. A UserError becomes the banner (reason and fix), never a crash. No
  socket or subprocess code here, and nothing of the runner: tfolab.lab owns
  all of that.
- The ladder shows one of three views (`ladder_view`: model, captured, both;
  `c` cycles them). What each draws comes from tfolab.view.captured; the
  steps are the drawn events in time order, so stepping and play work the same
  in every view. A view change keeps the step at the same moment.
- Predict first (tfolab.tui.predicting): until the student commits predictions
  for the scenario (PredictForm, where the ladder will be), the ladder, the
  step panel and real runs stay hidden; then the GradePanel grades them
  against the model, and after a real run against the measurement, and the
  attempt is saved. Demo mode skips all of that.
- `h` shows the headline path only (tfolab.view.focus), in any of the three
  views; `i` asks for an iteration and goes to its first step. On a terminal
  narrower than SIDE_PANEL_MIN_WIDTH the side panel starts folded (`s`).
- The last measured result is kept (`last_run`) so `w` saves its capture as a
  pcap in the current folder (in a browser, as a download) even after the
  parameters changed; without a capture the banner says why.
- Served with --results, every real run is also saved for the class
  (tfolab.tui.classroom).
"""

from __future__ import annotations

import io
import tempfile
from datetime import datetime
from pathlib import Path
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.events import Resize
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Header, Static

from tfolab.core.errors import UserError
from tfolab.lab import pcap, session
from tfolab.lab.catalog import Lab
from tfolab.lab.plan import LabPlan, plan
from tfolab.lab.prediction import predict
from tfolab.lab.progress import Progress
from tfolab.lab.results import LabResult
from tfolab.lab.run_plan import for_real
from tfolab.model.events import Event as ModelEvent
from tfolab.tui.context import tfolab_app
from tfolab.tui.screens.jump import JumpScreen
from tfolab.tui.widgets.ladder import LadderView
from tfolab.tui.widgets.params import LabParams, ParamsPanel
from tfolab.tui.widgets.predict import GradePanel, PredictForm, intro_text
from tfolab.tui.widgets.results import ResultsPanel
from tfolab.tui.widgets.step_panel import StepPanel
from tfolab.view.captured import VIEWS, LadderContent, ladder_content, pcap_file_name, same_moment
from tfolab.view.focus import headline_only, iteration_starts
from tfolab.view.run_summary import (
    Capture,
    band_words,
    capture_status,
    capture_words,
    summarize,
)

SPEEDS = (0.5, 1.0, 2.0, 4.0, 8.0)  # steps per second while playing
DEFAULT_DELAY_MS = 10.0
SIDE_PANEL_MIN_WIDTH = 100  # narrower terminals start with the side panel folded
PROGRESS_EVERY_S = 1.0  # at most one progress repaint per second during a real run


class LabScreen(Screen[None]):
    """One lab, one scenario at a time: step through the ladder, run it for real."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n,right", "next_step", "Next"),
        Binding("p,left", "previous_step", "Prev"),
        Binding("space", "play", "Play/pause"),
        Binding("home,0", "restart", "Restart", show=False),
        Binding("plus,equals_sign", "faster", "Faster", show=False),
        Binding("minus", "slower", "Slower", show=False),
        Binding("r", "run", "Run for real"),
        Binding("c", "cycle_view", "Model/captured", show=False),
        Binding("h", "headline_only", "Headline path"),
        Binding("i", "jump", "Iteration"),
        Binding("w", "save_pcap", "Save pcap", show=False),
        Binding("g", "guide", "Guide"),
        Binding("t", "seq_graph", "Seq graph", show=False),
        Binding("f", "fold_flights", "Fold flights", show=False),
        Binding("s", "toggle_side", "Panel", show=False),
        Binding("escape", "back", "Back"),
    ]

    step: reactive[int] = reactive(0, init=False)
    playing: reactive[bool] = reactive(False, init=False)
    speed: reactive[float] = reactive(2.0, init=False)
    result: reactive[LabResult | None] = reactive(None, init=False, always_update=True)
    running: reactive[bool] = reactive(False, init=False)
    ladder_view: reactive[str] = reactive("model", init=False)
    headline: reactive[bool] = reactive(False, init=False)

    class RunProgress(Message):
        """One step of a real run in progress, from the real-run worker."""

        def __init__(self, progress: Progress) -> None:
            super().__init__()
            self.progress = progress

    def __init__(self, lab: Lab, scenario: str | None = None, delay_ms: float = DEFAULT_DELAY_MS):
        super().__init__()
        self.lab = lab
        self.params = LabParams(
            scenario or lab.scenarios[0].name,
            delay_ms,
            lab.scenario(scenario or lab.scenarios[0].name).iterations,
        )
        self._play_timer: Timer | None = None
        self._progress_timer: Timer | None = None
        self._pending_progress: list[Progress] = []
        self.lab_plan: LabPlan | None = None  # the plan of the current parameters
        self.content = LadderContent("model", "Ladder")
        self.last_run: LabResult | None = None
        self._side_chosen = False  # s was pressed: the side panel stays as the user left it

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="banner")
        with Horizontal(id="lab-body"):
            with Vertical(id="lab-main"):
                app = tfolab_app(self)
                yield PredictForm(student=app.student, folder=app.results_folder, id="predict")
                yield LadderView(id="ladder")
                yield StepPanel(id="step")
            with VerticalScroll(id="lab-side"):
                yield GradePanel(id="grades")
                yield ParamsPanel(
                    self.lab, self.params.scenario, self.params.one_way_delay_ms, id="params"
                )
                yield ResultsPanel(id="results")
        yield Footer()

    def on_mount(self) -> None:
        self.title = self.lab.title
        self.query_one(ResultsPanel).display = False
        self.query_one(GradePanel).display = False
        self._show_environment()
        self.simulate()
        if self.predicting:
            self.query_one(PredictForm).focus_first()
        else:
            self.query_one(LadderView).focus()

    @property
    def predicting(self) -> bool:
        """Must the student predict before the ladder of the current parameters shows?"""
        p = self.params
        return tfolab_app(self).predictions.needed(self.lab, p.scenario, p.settings, p.iterations)

    # --- state -> widgets ------------------------------------------------------

    @property
    def events(self) -> tuple[ModelEvent, ...]:
        """The steps of the ladder's current view, in time order."""
        return self.content.events

    def simulate(self) -> None:
        """Re-run the model for the current parameters (fast: no I/O)."""
        p = self.params
        try:
            lab_plan = plan(
                self.lab, p.scenario, p.iterations, p.settings, delay_ms=p.one_way_delay_ms
            )
            result = predict(lab_plan, hz=tfolab_app(self).hz)
        except UserError as err:
            self.lab_plan = None
            self._banner(f"Cannot simulate: {err.reason}. {err.fix}", "error")
            return
        self.lab_plan = lab_plan
        self.result = result

    def watch_result(self, result: LabResult | None) -> None:
        if result is None:
            return
        self.sub_title = f"{self.params.scenario} · D = {result.delay_ms:g} ms one way"
        self._show_ladder()
        self.step = min(self.step, max(len(self.events) - 1, 0))
        self._show_step()
        if result.measured:
            self._show_run(result)

    def watch_headline(self, _headline: bool) -> None:
        self.watch_ladder_view(self.ladder_view)

    def watch_ladder_view(self, _view: str) -> None:
        before = self.content
        self._show_ladder()
        self.step = same_moment(before, self.step, self.content)
        self._show_step()

    def _show_ladder(self) -> None:
        if self.result is None or not self.result.scenarios:
            return
        predicting = self.predicting
        form = self.query_one(PredictForm)
        ladder, step = self.query_one(LadderView), self.query_one(StepPanel)
        if predicting:
            self._ask(form)
        form.display = predicting
        ladder.display = step.display = not predicting
        self._show_grades()
        content = ladder_content(self.result, self.ladder_view)
        if self.headline:
            content = headline_only(content, self.result.scenarios[0])
        self.content = content
        ladder.show(self.content, self.result.delay_ms)

    def _ask(self, form: PredictForm) -> None:
        p, app = self.params, tfolab_app(self)
        scenario = self.lab.scenario(p.scenario)
        settings: dict[str, object] = dict(p.settings)  # checked when the panel took them
        headline = self.lab.headline_for(scenario.config.with_settings(settings))
        intro = intro_text(headline, p.scenario, scenario.summary, p.one_way_delay_ms)
        asked = app.predictions.quantities(self.lab, p.scenario, p.iterations)
        typed = {**app.predictions.typed(self.lab, p.scenario, p.settings), **form.typed()}
        form.ask(intro, asked, typed)

    def _show_grades(self, saved: str = "") -> None:
        if self.result is None:
            return
        graded = tfolab_app(self).predictions.grade(self.lab, self.params.settings, self.result)
        self.query_one(GradePanel).show(graded, saved)

    @on(PredictForm.Committed)
    def _committed(self, event: PredictForm.Committed) -> None:
        p, app = self.params, tfolab_app(self)
        app.student = event.student
        app.results_folder = str(event.folder or "")
        app.predictions.commit(
            self.lab, p.scenario, p.settings, event.predictions, event.student, event.folder
        )
        self.step = 0
        self._show_ladder()
        self._show_step()
        self.query_one(LadderView).focus()
        if self.result is not None:
            saved = app.predictions.save(self.lab, p.settings, self.result)
            self._show_grades(saved)
            graded = app.predictions.grade(self.lab, p.settings, self.result)
            if graded is not None:
                self._banner(
                    f"Your predictions: {graded.summary()} (the side panel says why; "
                    "s shows it). Now step through the ladder, or r runs it for real.",
                    "ok" if graded.model_right == len(graded.quantities) else "warning",
                )

    def watch_step(self, step: int) -> None:
        self.query_one(LadderView).step = step
        self._show_step()

    def watch_playing(self, playing: bool) -> None:
        if self._play_timer is not None:
            self._play_timer.stop()
            self._play_timer = None
        if playing:
            self._play_timer = self.set_interval(1 / self.speed, self._tick)
        self._show_step()

    def watch_speed(self, _speed: float) -> None:
        if self.playing:
            self.watch_playing(True)
        self._show_step()

    def _tick(self) -> None:
        if self.step >= len(self.events) - 1:
            self.playing = False
        else:
            self.step += 1

    def _show_step(self) -> None:
        status = f"▶ playing x{self.speed:g}" if self.playing else f"‖ x{self.speed:g}"
        self.query_one(StepPanel).show(self.content, self.step, status)

    def _banner(self, text: str, kind: str) -> None:
        banner = self.query_one("#banner", Static)
        banner.update(text)
        banner.set_classes(f"banner-{kind}")

    def _show_environment(self) -> None:
        status = tfolab_app(self).real_runs
        self._banner(status.banner(), "ok" if status.possible else "off")

    # --- input -> state ----------------------------------------------------------

    @on(ParamsPanel.Changed)
    def _params_changed(self, event: ParamsPanel.Changed) -> None:
        if event.params.scenario != self.params.scenario:
            self.step = 0
        self.params = event.params
        self.simulate()

    @on(LadderView.StepClicked)
    def _ladder_clicked(self, event: LadderView.StepClicked) -> None:
        self.step = event.step

    def action_next_step(self) -> None:
        self.playing = False
        self.step = min(self.step + 1, max(len(self.events) - 1, 0))

    def action_previous_step(self) -> None:
        self.playing = False
        self.step = max(self.step - 1, 0)

    def action_play(self) -> None:
        if not self.playing and self.step >= len(self.events) - 1:
            self.step = 0
        self.playing = not self.playing

    def action_restart(self) -> None:
        self.playing = False
        self.step = 0

    def action_faster(self) -> None:
        self.speed = next((s for s in SPEEDS if s > self.speed), SPEEDS[-1])

    def action_slower(self) -> None:
        self.speed = next((s for s in reversed(SPEEDS) if s < self.speed), SPEEDS[0])

    def action_cycle_view(self) -> None:
        """Model -> captured -> both -> model."""
        self.ladder_view = VIEWS[(VIEWS.index(self.ladder_view) + 1) % len(VIEWS)]

    def action_headline_only(self) -> None:
        """The whole ladder <-> the headline path only (no warm-up, close-down, side notes)."""
        self.headline = not self.headline

    def action_jump(self) -> None:
        """Ask for an iteration; go to its first step."""
        if self.predicting or not self.events:
            return
        starts = iteration_starts(self.events)

        def jump(iteration: int | None) -> None:
            if iteration is not None and iteration in starts:
                self.playing = False
                self.step = starts[iteration]

        self.app.push_screen(JumpScreen(list(starts)), jump)

    def action_save_pcap(self) -> None:
        """The last run's capture as a pcap in the current folder; the banner says where."""
        run = self.last_run
        if run is None:
            self._banner(
                "No pcap to save: no real run yet (press r to run this scenario and "
                "capture its packets).",
                "off",
            )
            return
        status = capture_status(run)
        frames = [frame for scenario in run.scenarios for frame in scenario.frames]
        if status.state is not Capture.CAPTURED or not frames:
            why = (
                capture_words(status)
                if status.state is not Capture.CAPTURED
                else "the last run sent back no frames"
            )
            self._banner(f"No pcap to save: {why}.", "off")
            return
        scenario = run.scenarios[0].planned.name
        name = pcap_file_name(run.lab, scenario, datetime.now())
        if self.app.is_web:
            self._deliver_pcap(name, frames)
            return
        try:
            path = pcap.check_writable(name)
            count = pcap.write_captured(path, frames)
        except UserError as err:
            self._banner(f"Cannot save the pcap: {err.reason}. {err.fix}", "error")
            return
        except (OSError, ValueError) as err:
            self._banner(f"Cannot save the pcap {name}: {err}", "error")
            return
        self._banner(
            f"Saved {count} packets of {run.lab}/{scenario} to {path.resolve()} "
            "(open it in Wireshark, or tcpdump -nr).",
            "ok",
        )

    def _deliver_pcap(self, name: str, frames: list[tuple[int, bytes]]) -> None:
        """In a browser (tfolab serve) the pcap is a download, not a file on the server."""
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / name
            count = pcap.write_captured(path, frames)
            data = io.BytesIO(path.read_bytes())
        self.app.deliver_binary(data, save_filename=name, mime_type="application/vnd.tcpdump.pcap")
        self._banner(f"Sent {count} packets as {name} to your browser's downloads.", "ok")

    def action_guide(self) -> None:
        from tfolab.tui.screens.guide import GuideScreen

        self.app.push_screen(GuideScreen(self.lab, reveal=tfolab_app(self).predictions.demo))

    def action_fold_flights(self) -> None:
        """A flight of many segments as one labelled arrow, or every segment on its own."""
        ladder = self.query_one(LadderView)
        ladder.toggle_fold()
        if ladder.fold_flights:
            self._banner("Ladder: each flight of 4 or more segments is one arrow (f: all).", "off")
        else:
            self._banner("Ladder: every segment on its own arrow (f folds flights).", "off")

    def action_seq_graph(self) -> None:
        """The time-sequence graph of the scenario's busiest direction: the model's, and
        the kernel's after a real run."""
        if self.predicting:
            self._banner("Predict first: the graph shows the model's answer.", "off")
            return
        from tfolab.view.seq_report import scenario_graph

        row = None
        if self.result is not None and self.result.scenarios:
            row = scenario_graph(self.lab.name, self.result.scenarios[0])
        if row is None:
            self._banner("No graph: no segment of this scenario carries data.", "off")
            return
        from tfolab.tui.screens.seq_graph import SeqGraphScreen

        self.app.push_screen(SeqGraphScreen(row))

    def action_toggle_side(self) -> None:
        side = self.query_one("#lab-side")
        side.display = not side.display
        self._side_chosen = True

    def on_resize(self, event: Resize) -> None:
        """On a narrow terminal the side panel starts folded away (s unfolds it)."""
        if not self._side_chosen:
            self.query_one("#lab-side").display = event.size.width >= SIDE_PANEL_MIN_WIDTH

    def action_back(self) -> None:
        if self.focused is not None and not isinstance(self.focused, LadderView):
            if self.predicting:
                self.set_focus(None)
            else:
                self.query_one(LadderView).focus()
            return
        self.playing = False
        self.dismiss()

    def select_scenario(self, name: str) -> None:
        """Open another scenario of this lab (from the command palette)."""
        self.query_one(ParamsPanel).select_scenario(name)

    # --- the real run ------------------------------------------------------------

    def action_run(self) -> None:
        if self.predicting:
            self._banner("Predict first: enter your predictions (Enter), then run it.", "off")
            self.query_one(PredictForm).focus_first()
            return
        status = tfolab_app(self).real_runs
        if not status.possible:
            self._banner(f"Cannot run for real: {status.reason}. {status.fix}", "error")
            return
        if self.running:
            self.notify("A run is already going.")
            return
        if self.lab_plan is None:
            self._banner("Nothing to run: these parameters do not simulate.", "error")
            return
        self.running = True
        self.playing = False
        p = self.params
        self.query_one(ResultsPanel).start(p.scenario, p.one_way_delay_ms, p.iterations)
        self._banner(f"Running {p.scenario} for real at {p.one_way_delay_ms:g} ms…", "busy")
        self.real_run(p, self.lab_plan)

    @work(exclusive=True, group="real-run")
    async def real_run(self, params: LabParams, lab_plan: LabPlan) -> None:
        try:
            run_plan = for_real(lab_plan, tfolab_app(self).backend)
            result = await session.run(run_plan, self._post_progress)
        except UserError as err:
            self.running = False
            self._flush_progress()
            self.query_one(ResultsPanel).show_failure(err.reason)
            self._banner(f"Real run impossible: {err.reason}. {err.fix}", "error")
            return
        self.running = False
        self._flush_progress()
        self._after_run(result, params)
        self._keep_for_class(result)

    def _keep_for_class(self, result: LabResult) -> None:
        """Served with --results: the run goes to the class's folder, under the session's name."""
        try:
            saved = tfolab_app(self).classroom.save_run(result)
        except OSError as err:
            self.notify(f"Not saved for the class: {err}", severity="error")
            return
        except UserError as err:  # this session saved as much as one may (lab.served_saves)
            self.notify(f"Not saved for the class: {err.reason}", severity="error")
            return
        if saved is not None:
            self.notify(f"Saved for the class as {saved.name}")

    def _after_run(self, result: LabResult, params: LabParams) -> None:
        if params == self.params:
            self.result = result  # watch_result shows the run
        else:
            self._show_run(result)
        saved = tfolab_app(self).predictions.save(self.lab, params.settings, result)
        if params == self.params:
            self._show_grades(saved)

    def _show_run(self, result: LabResult) -> None:
        """A measured result: the results panel, and the banner's verdict on it."""
        self.last_run = result
        self.query_one(ResultsPanel).show_result(result)
        summary = summarize(result)
        packets = capture_words(summary.capture)
        if summary.capture.state is Capture.CAPTURED:
            packets += " (c shows them)"
        else:
            packets = packets[0].upper() + packets[1:]
        packets_ok = summary.capture.state is Capture.CAPTURED and not summary.packet_failures
        if result.backend == "none":
            self._banner(
                "Measured WITHOUT delay emulation (backend none): times show the "
                f"bare loopback, not the delay you asked for. {packets}",
                "warning",
            )
        else:
            said = [*result.notes, *(repeat.words() for repeat in result.repeats)]
            notes = f" · {'; '.join(said)}" if said else ""
            self._banner(
                f"Measured on Linux {result.kernel_release} via {result.backend}: "
                f"{band_words(summary)} · {packets}{notes}",
                "ok" if not summary.misses and packets_ok else "warning",
            )

    def _post_progress(self, progress: Progress) -> None:
        self.post_message(self.RunProgress(progress))

    @on(RunProgress)
    def _run_progress(self, message: RunProgress) -> None:
        # A repaint costs CPU that, on a small machine, shows up in the very
        # measurement it reports (the delayer and the sockets share the cores):
        # progress is drawn at most once every PROGRESS_EVERY_S while a run goes.
        self._pending_progress.append(message.progress)
        if self._progress_timer is None:
            self._progress_timer = self.set_timer(PROGRESS_EVERY_S, self._flush_progress)

    def _flush_progress(self) -> None:
        if self._progress_timer is not None:
            self._progress_timer.stop()
            self._progress_timer = None
        panel = self.query_one(ResultsPanel)
        for progress in self._pending_progress:
            panel.progress(progress)
        self._pending_progress.clear()

"""The parameters panel: one-way delay, scenario, iterations and the lab's switches.

Rules:
- The panel validates its own inputs and shows problems inline, under the
  field (never a crash, never a notification that vanishes); only a complete,
  valid set of parameters leaves it, as a ParamsPanel.Changed message.
- Parsing is tfolab.lab's (delay.parse_delay, the iteration range), so the UI accepts
  exactly what the command line accepts.
- The preset select under the delay fills the delay field (LAN, continental,
  transcontinental, satellite: tfolab.view.presets); typing a delay shows the
  preset it matches, if any.
- Choosing a scenario resets the switches to that scenario's own values;
  programmatic updates never echo back as user changes (prevent()).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from textual import on
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Checkbox, Input, Label, Select, Static
from textual.widgets._select import NoSelection

from tfolab.core.errors import UserError
from tfolab.lab.catalog import Lab, LabScenario
from tfolab.lab.delay import parse_delay
from tfolab.model.scenario import MAX_ITERATIONS
from tfolab.view.knobs import Knob, knobs_for, settings_for
from tfolab.view.presets import PRESETS, preset_for


@dataclass(frozen=True)
class LabParams:
    """What the panel says to simulate (and to run)."""

    scenario: str
    one_way_delay_ms: float
    iterations: int
    settings: dict[str, str] = field(default_factory=dict)


def _show_problem(field: Input, message: Static, problem: str) -> None:
    """Mark a field invalid and say why under it; touch nothing that has not changed."""
    field.set_class(bool(problem), "-invalid")
    if message.display != bool(problem):
        message.display = bool(problem)
    if problem and str(message.render()) != problem:
        message.update(problem)


class ParamsPanel(VerticalScroll):
    """Inputs that re-simulate the lab as soon as they change."""

    class Changed(Message):
        def __init__(self, params: LabParams) -> None:
            super().__init__()
            self.params = params

    def __init__(self, lab: Lab, scenario: str, delay_ms: float, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lab = lab
        self.knobs: tuple[Knob, ...] = knobs_for(lab)
        self._scenario = scenario
        self._delay_text = f"{delay_ms:g}"

    def compose(self) -> ComposeResult:
        yield Label("One-way delay (ms)", classes="field-label")
        yield Input(self._delay_text, id="delay", placeholder="e.g. 10")
        yield Static("", id="delay-error", classes="field-error")
        yield Select(
            [(preset.label(), preset.name) for preset in PRESETS],
            prompt="preset D/RTT ms",
            value=self._preset_value(),
            id="preset",
        )
        yield Label("Scenario", classes="field-label")
        yield Select(
            [(s.name, s.name) for s in self.lab.scenarios],
            value=self._scenario,
            allow_blank=False,
            id="scenario",
        )
        yield Label("Iterations", classes="field-label")
        yield Input(str(self._lab_scenario().iterations), id="iterations", type="integer")
        yield Static("", id="iterations-error", classes="field-error")
        if self.knobs:
            yield Label("Switches", classes="field-label")
        for knob in self.knobs:
            value = knob.value_of(self._lab_scenario().config)
            if knob.kind == "choice":
                yield Label(knob.label, classes="knob-label")
                yield Select(
                    [(choice, choice) for choice in knob.choices],
                    value=value,
                    allow_blank=False,
                    id=f"knob-{knob.field}",
                    classes="knob",
                )
            else:
                yield Checkbox(knob.label, bool(value), id=f"knob-{knob.field}", classes="knob")

    def _preset_value(self) -> str | NoSelection:
        try:
            preset = preset_for(parse_delay(self._delay_text))
        except UserError:
            return Select.NULL
        return preset.name if preset else Select.NULL

    def _lab_scenario(self) -> LabScenario:
        return self.lab.scenario(self._scenario)

    @property
    def scenario(self) -> str:
        return self._scenario

    def _knob_values(self) -> dict[str, bool | str]:
        values: dict[str, bool | str] = {}
        for knob in self.knobs:
            widget = self.query_one(f"#knob-{knob.field}")
            value = widget.value if isinstance(widget, Checkbox | Select) else None
            if isinstance(value, bool | str):  # a Select with nothing chosen is skipped
                values[knob.field] = value
        return values

    def read(self) -> LabParams | None:
        """The current parameters, or None (with the errors shown) when one is invalid."""
        delay_input = self.query_one("#delay", Input)
        delay_error = self.query_one("#delay-error", Static)
        iterations_input = self.query_one("#iterations", Input)
        iterations_error = self.query_one("#iterations-error", Static)
        delay: float | None = None
        delay_problem = ""
        try:
            delay = parse_delay(delay_input.value)
        except UserError as err:
            delay_problem = f"{err.reason}: {err.fix.removeprefix('give ')}"
        _show_problem(delay_input, delay_error, delay_problem)
        iterations: int | None = None
        text = iterations_input.value.strip()
        if text.isdigit() and 1 <= int(text) <= MAX_ITERATIONS:
            iterations = int(text)
        problem = "" if iterations else f"a whole number from 1 to {MAX_ITERATIONS}"
        _show_problem(iterations_input, iterations_error, problem)
        if delay is None or iterations is None:
            return None
        settings = settings_for(self.knobs, self._lab_scenario().config, self._knob_values())
        return LabParams(self._scenario, delay, iterations, settings)

    def _changed(self) -> None:
        params = self.read()
        if params is not None:
            self.post_message(self.Changed(params))

    def on_mount(self) -> None:
        self.query_one("#delay-error").display = False
        self.query_one("#iterations-error").display = False

    @on(Input.Changed)
    def _input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "delay":
            self._delay_text = event.value
            with self.prevent(Select.Changed):
                self.query_one("#preset", Select).value = self._preset_value()
        self._changed()

    @on(Checkbox.Changed)
    def _switch_changed(self, _event: Checkbox.Changed) -> None:
        self._changed()

    @on(Select.Changed)
    def _select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "preset":
            preset = next((p for p in PRESETS if p.name == event.value), None)
            if preset is not None:
                # The delay field's own change message re-simulates.
                self.query_one("#delay", Input).value = f"{preset.one_way_ms:g}"
            return
        if event.select.id == "scenario" and isinstance(event.value, str):
            self.select_scenario(event.value, update_select=False)
        self._changed()

    def select_scenario(self, name: str, *, update_select: bool = True) -> None:
        """Switch scenario: its iterations and switches replace the current values."""
        self._scenario = name
        scenario = self._lab_scenario()
        with self.prevent(Input.Changed, Checkbox.Changed, Select.Changed):
            if update_select:
                self.query_one("#scenario", Select).value = name
            self.query_one("#iterations", Input).value = str(scenario.iterations)
            for knob in self.knobs:
                widget = self.query_one(f"#knob-{knob.field}")
                value = knob.value_of(scenario.config)
                if isinstance(widget, Checkbox):
                    widget.value = bool(value)
                elif isinstance(widget, Select):
                    widget.value = value
        if update_select:
            self._changed()

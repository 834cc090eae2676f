"""Predict first: the form that asks for the headline quantities, and the grades after it.

Rules:
- The form stands where the ladder will be: nothing of the model's times is
  on screen while it is asked. One field per quantity of the scenario
  (tfolab.lab.quantities), in ms or in D and RTT (tfolab.lab.expression);
  the student's name and the results folder ($TFOLAB_RESULTS_DIR filled in).
- The name is at most NAME_MAX characters and cleaned of control and bidi
  characters (tfolab.lab.names). In a served session the folder is serve's:
  shown, not editable (tfolab.lab.attempts.results_dir ignores the field).
- Enter in any field checks every field; problems show inline, under their
  field, in one line. Only a complete set leaves, as PredictForm.Committed.
- The GradePanel only displays a tfolab.lab.grading.Grade: one sentence per
  quantity against the model, and against the measurement after a real run.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Input, Label, Static

from tfolab.core.errors import UserError
from tfolab.lab.attempts import check_results_dir, fixed_results_dir, results_dir
from tfolab.lab.expression import EXAMPLES, Expression, ExpressionError, parse
from tfolab.lab.grading import Grade
from tfolab.lab.identity import is_served
from tfolab.lab.names import NAME_MAX, clean_name
from tfolab.lab.quantities import Quantity


class PredictForm(VerticalScroll):
    """The questions of one scenario; Enter commits them."""

    class Committed(Message):
        def __init__(
            self, predictions: dict[str, Expression], student: str, folder: Path | None
        ) -> None:
            super().__init__()
            self.predictions = predictions
            self.student = student
            self.folder = folder

    def __init__(self, *, student: str = "", folder: str = "", id: str | None = None) -> None:
        super().__init__(id=id)
        self.quantities: tuple[Quantity, ...] = ()
        self._student = student
        self._folder = folder

    def compose(self) -> ComposeResult:
        yield Static("", id="predict-intro")
        yield Vertical(id="predict-fields")
        yield Label("Your name", classes="field-label")
        yield Input(
            clean_name(self._student),
            id="student",
            placeholder="as your teacher will see it",
            max_length=NAME_MAX,
        )
        if is_served() and fixed_results_dir() is not None:
            yield Label("Saved in your class's results folder", classes="field-label")
        elif is_served():
            yield Label("Not saved: your teacher collects no results", classes="field-label")
        else:
            yield Label("Save results in (folder; empty: not saved)", classes="field-label")
        yield Input(
            self._folder,
            id="results-dir",
            placeholder="e.g. ~/tfolab-results",
            disabled=is_served(),
        )
        yield Static("", id="results-error", classes="field-error")
        yield Static(
            Text.assemble(
                ("Enter", "bold"),
                " commits your predictions; then the ladder and the model's times appear, "
                "graded. (Teachers demonstrating: start tfolab --demo.)",
            ),
            id="predict-hint",
        )

    def on_mount(self) -> None:
        self.query_one("#results-error").display = False

    def ask(self, intro: Text, quantities: tuple[Quantity, ...], keep: dict[str, str]) -> None:
        """Show the questions for `quantities` (keeping what was typed for the same names)."""
        self.query_one("#predict-intro", Static).update(intro)
        if [q.name for q in quantities] == [q.name for q in self.quantities]:
            return
        self.quantities = quantities
        fields = self.query_one("#predict-fields", Vertical)
        fields.remove_children()
        widgets = []
        for number, quantity in enumerate(quantities):
            widgets += [
                Label(f"Headline, {quantity.name}", classes="field-label"),
                Input(
                    keep.get(quantity.name, ""),
                    id=f"predict-{number}",
                    placeholder="ms, or in D and RTT: 4D, 2 RTT, 4D+40",
                    classes="prediction",
                ),
                Static("", id=f"predict-{number}-error", classes="field-error"),
            ]
        fields.mount_all(widgets)
        for number in range(len(quantities)):
            self.query_one(f"#predict-{number}-error").display = False

    def focus_first(self) -> None:
        for field in self.query(Input).results(Input):
            if not field.value.strip():
                field.focus()
                return
        inputs = list(self.query(Input).results(Input))
        if inputs:
            inputs[0].focus()

    def typed(self) -> dict[str, str]:
        return {
            q.name: self.query_one(f"#predict-{n}", Input).value
            for n, q in enumerate(self.quantities)
        }

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.commit()

    def commit(self) -> None:
        """Check every field; post Committed when all of them are good."""
        predictions: dict[str, Expression] = {}
        first_bad: Input | None = None
        for number, quantity in enumerate(self.quantities):
            field = self.query_one(f"#predict-{number}", Input)
            message = self.query_one(f"#predict-{number}-error", Static)
            try:
                predictions[quantity.name] = parse(field.value)
                problem = ""
            except ExpressionError as err:
                problem = str(err)
                first_bad = first_bad or field
            _show(field, message, problem)
        folder_field = self.query_one("#results-dir", Input)
        student = clean_name(self.query_one("#student", Input).value)
        folder = results_dir(folder_field.value)
        problem = ""
        if folder is not None:
            try:
                check_results_dir(folder)
            except UserError as err:
                problem = f"{err.reason}: {err.fix}"
            if not student and not problem:
                problem = "give your name above, so your results can be told from others'"
        _show(folder_field, self.query_one("#results-error", Static), problem)
        if problem:
            first_bad = first_bad or folder_field
        if first_bad is not None:
            first_bad.focus()
            return
        self.post_message(self.Committed(predictions, student, folder))


def _show(field: Input, message: Static, problem: str) -> None:
    field.set_class(bool(problem), "-invalid")
    message.display = bool(problem)
    message.update(problem)


def setup_words(summary: str) -> str:
    """What a scenario sets up, without what happens: a summary reads 'setup: outcome'.

    The predict form shows only the part before the first colon, so it never
    gives the answer away ("a cookie is cached", not "... one round trip saved").
    """
    return summary.split(":", 1)[0].strip()


def intro_text(headline: str, scenario: str, summary: str, delay_ms: float) -> Text:
    text = Text()
    text.append("Predict first", style="bold")
    text.append(f" · {scenario}: {setup_words(summary)}\n", style="")
    text.append("Headline: ", style="bold")
    text.append(f"{headline or 'the measured time of each iteration'}.\n")
    text.append(
        f"D = {delay_ms:g} ms one way, RTT = 2D = {2 * delay_ms:g} ms. "
        f"Answer in ms or in D and RTT, {EXAMPLES}.",
        style="dim",
    )
    return text


class GradePanel(Static):
    """The student's predictions, graded (shown once they are committed)."""

    def show(self, grade: Grade | None, saved: str = "") -> None:
        if grade is None:
            self.display = False
            return
        self.display = True
        text = Text()
        text.append(f"Your predictions: {grade.summary()}\n", style="bold")
        for quantity in grade.quantities:
            style = "green" if quantity.model_ok else "red"
            text.append(quantity.sentence + "\n", style=style)
            if quantity.measured_sentence:
                style = "green" if quantity.measured_ok else "red"
                text.append("  " + quantity.measured_sentence + "\n", style=style)
        if saved:
            text.append(saved, style="dim")
        text.rstrip()
        self.update(text)

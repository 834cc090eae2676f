"""The predict-then-see state the UI keeps: what each student committed, graded and saved.

Rules:
- One Predictions object per app (it outlives lab screens): committed
  predictions are kept per (lab, scenario, settings), so coming back to a
  scenario does not ask again; a quantity not yet predicted (more iterations
  than before) is asked for.
- The delay is not part of the key: a prediction in D is graded again at
  every delay, and one in ms stays what it is.
- Saving: an attempt is saved when predictions are committed and again when
  a real run of the same parameters ends; the run's measurement goes into
  the same file when the delay and iterations are those of the commit,
  else into a new one. No folder, no file (the message says so).
- Demo mode (`tfolab --demo`, for teachers who demonstrate): nothing is asked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from tfolab.core.errors import UserError
from tfolab.lab import attempts
from tfolab.lab.catalog import Lab
from tfolab.lab.expression import Expression
from tfolab.lab.grading import Grade, grade
from tfolab.lab.quantities import Quantity, quantities_for

if TYPE_CHECKING:
    from tfolab.lab.results import LabResult

Key = tuple[str, str, tuple[tuple[str, str], ...]]


@dataclass
class Commitment:
    predictions: dict[str, Expression]
    student: str
    folder: Path | None
    saved: dict[tuple[float, int], Path] = field(default_factory=dict)


@dataclass
class Predictions:
    demo: bool = False
    committed: dict[Key, Commitment] = field(default_factory=dict)

    @staticmethod
    def key(lab: Lab, scenario: str, settings: dict[str, str]) -> Key:
        return (lab.name, scenario, tuple(sorted(settings.items())))

    @staticmethod
    def quantities(lab: Lab, scenario: str, iterations: int) -> tuple[Quantity, ...]:
        return quantities_for(lab.scenario(scenario).predict, iterations)

    def needed(self, lab: Lab, scenario: str, settings: dict[str, str], iterations: int) -> bool:
        """Must the student predict before seeing this scenario's ladder?"""
        if self.demo:
            return False
        commitment = self.committed.get(self.key(lab, scenario, settings))
        asked = self.quantities(lab, scenario, iterations)
        return commitment is None or any(q.name not in commitment.predictions for q in asked)

    def typed(self, lab: Lab, scenario: str, settings: dict[str, str]) -> dict[str, str]:
        commitment = self.committed.get(self.key(lab, scenario, settings))
        if commitment is None:
            return {}
        return {name: e.text for name, e in commitment.predictions.items()}

    def commit(
        self,
        lab: Lab,
        scenario: str,
        settings: dict[str, str],
        predictions: dict[str, Expression],
        student: str,
        folder: Path | None,
    ) -> None:
        key = self.key(lab, scenario, settings)
        before = self.committed.get(key)
        merged = {**(before.predictions if before else {}), **predictions}
        self.committed[key] = Commitment(merged, student, folder)

    def grade(self, lab: Lab, settings: dict[str, str], result: LabResult) -> Grade | None:
        """The committed predictions for `result`'s scenario, graded (None if none)."""
        if not result.scenarios:
            return None
        scenario = result.scenarios[0]
        name = scenario.planned.name
        commitment = self.committed.get(self.key(lab, name, settings))
        if commitment is None:
            return None
        asked = self.quantities(lab, name, scenario.planned.iterations)
        if any(q.name not in commitment.predictions for q in asked):
            return None
        return grade(
            commitment.predictions,
            asked,
            scenario,
            result.delay_ms,
            lab.scenario(name).summary,
        )

    def save(self, lab: Lab, settings: dict[str, str], result: LabResult) -> str:
        """Save the graded attempt for `result`; one line saying where (or why not)."""
        graded = self.grade(lab, settings, result)
        if graded is None:
            return ""
        scenario = result.scenarios[0].planned
        commitment = self.committed[self.key(lab, scenario.name, settings)]
        if commitment.folder is None:
            return "not saved: no results folder given"
        attempt = attempts.make_attempt(
            student=commitment.student,
            lab=lab.name,
            scenario=scenario.name,
            settings=settings,
            iterations=scenario.iterations,
            delay_ms=result.delay_ms,
            hz=result.hz,
            grade=graded,
            saved_at=datetime.now(UTC),
        )
        where = (result.delay_ms, scenario.iterations)
        try:
            path = attempts.save(commitment.folder, attempt, commitment.saved.get(where))
        except UserError as err:
            return f"not saved: {err.reason}"
        except OSError as err:
            return f"not saved: {err.strerror or err}"
        commitment.saved[where] = path
        return f"saved as {path}"

"""Graded attempts on disk: one JSON file per attempt, and a class's summary of them.

Rules:
- Where: the folder the student gives in the UI, else $TFOLAB_RESULTS_DIR
  (`tfolab serve --results DIR` sets it for every session). No folder, no file.
- One attempt = one student's predictions for one scenario at one delay,
  graded against the model and, after a real run, the measurement. The shape
  is the Attempt struct below (docs/DESIGN.md, "Contracts", the attempt JSON);
  files are written whole (a temporary file renamed), never half.
- Reading a class: every `*.json` in the folder; a file that is not an
  attempt is skipped with its reason, never fatal.
- A student's result for a scenario is their FIRST attempt (a prediction made
  before seeing the answer); later attempts count as tries, the best is shown too.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from tfolab.core.errors import UserError
from tfolab.lab.grading import Grade

RESULTS_DIR_ENV = "TFOLAB_RESULTS_DIR"
FORMAT = "tfolab-attempt/1"


class QuantityRecord(msgspec.Struct, kw_only=True):
    quantity: str
    iterations: list[int]
    prediction: str
    predicted_ms: float
    model_ms: list[float]  # [low, high] over the quantity's iterations
    allowed_ms: float
    model_ok: bool
    measured_ms: list[float] | None = None
    measured_ok: bool | None = None
    explanation: str = ""
    measured_explanation: str = ""


class GradeRecord(msgspec.Struct, kw_only=True):
    of: int
    model_right: int
    measured_right: int | None = None


class Attempt(msgspec.Struct, kw_only=True):
    format: str = FORMAT
    student: str
    lab: str
    scenario: str
    settings: dict[str, str] = {}
    iterations: int
    delay_ms: float
    rtt_ms: float
    hz: int
    saved_at: str  # ISO 8601, UTC
    predictions: dict[str, str]  # quantity -> what the student typed
    model: dict[str, list[float]]  # quantity -> [low, high] ms
    measured: dict[str, list[float]] | None = None  # quantity -> [low, high] ms, after a run
    grade: GradeRecord
    quantities: list[QuantityRecord]


def make_attempt(
    *,
    student: str,
    lab: str,
    scenario: str,
    settings: dict[str, str],
    iterations: int,
    delay_ms: float,
    hz: int,
    grade: Grade,
    saved_at: datetime,
) -> Attempt:
    quantities = [
        msgspec.convert(q.to_json(), QuantityRecord, strict=False) for q in grade.quantities
    ]
    measured = {q.quantity.name: q.measured.to_json() for q in grade.quantities if q.measured}
    return Attempt(
        student=student,
        lab=lab,
        scenario=scenario,
        settings=dict(settings),
        iterations=iterations,
        delay_ms=delay_ms,
        rtt_ms=2 * delay_ms,
        hz=hz,
        saved_at=saved_at.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        predictions={q.quantity.name: q.prediction.text for q in grade.quantities},
        model={q.quantity.name: q.model.to_json() for q in grade.quantities},
        measured=measured if len(measured) == len(grade.quantities) and measured else None,
        grade=GradeRecord(
            of=len(grade.quantities),
            model_right=grade.model_right,
            measured_right=grade.measured_right,
        ),
        quantities=quantities,
    )


def results_dir(given: str | None = None) -> Path | None:
    """The folder attempts go to: `given` (the UI's field), else $TFOLAB_RESULTS_DIR, else None."""
    text = (given if given is not None else os.environ.get(RESULTS_DIR_ENV, "")).strip()
    return Path(text).expanduser() if text else None


def check_results_dir(folder: Path) -> Path:
    """`folder` if it is a writable folder; UserError (one line) otherwise."""
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise UserError(f"the results folder {folder} {what}", "create it, or give another folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UserError(f"the results folder {folder} is not writable", "give a folder you own")
    return folder


def file_name(attempt: Attempt, when: datetime) -> str:
    student = re.sub(r"[^A-Za-z0-9]+", "-", attempt.student).strip("-").lower() or "anonymous"
    return f"{student[:40]}-{attempt.lab}-{attempt.scenario}-{when:%Y%m%d-%H%M%S-%f}.json"


def save(folder: Path, attempt: Attempt, path: Path | None = None) -> Path:
    """Write `attempt` into `folder` (or over `path`, the same attempt graded again)."""
    check_results_dir(folder)
    target = path or folder / file_name(attempt, datetime.now(UTC))
    data = msgspec.json.format(msgspec.json.encode(attempt), indent=2) + b"\n"
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=".attempt-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


# --------------------------------------------------------------- a class's results


@dataclass(frozen=True)
class Skipped:
    file: str
    reason: str


@dataclass
class ScenarioTally:
    """One student's attempts at one scenario."""

    lab: str
    scenario: str
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def first(self) -> GradeRecord:
        return self.attempts[0].grade

    @property
    def best(self) -> GradeRecord:
        return max(self.attempts, key=lambda a: (a.grade.model_right, a.saved_at)).grade

    @property
    def measured(self) -> GradeRecord | None:
        """The latest attempt graded against a real run, if any."""
        runs = [a for a in self.attempts if a.grade.measured_right is not None]
        return runs[-1].grade if runs else None


@dataclass
class StudentTally:
    student: str
    scenarios: list[ScenarioTally] = field(default_factory=list)

    @property
    def right(self) -> int:
        return sum(s.first.model_right for s in self.scenarios)

    @property
    def of(self) -> int:
        return sum(s.first.of for s in self.scenarios)


@dataclass
class ClassResults:
    folder: Path
    students: list[StudentTally]
    skipped: list[Skipped]

    def scenario_totals(self) -> list[tuple[str, str, int, int, int]]:
        """(lab, scenario, students, right, of) over every student's first attempt."""
        totals: dict[tuple[str, str], list[int]] = {}
        for student in self.students:
            for tally in student.scenarios:
                entry = totals.setdefault((tally.lab, tally.scenario), [0, 0, 0])
                entry[0] += 1
                entry[1] += tally.first.model_right
                entry[2] += tally.first.of
        return [(lab, sc, *values) for (lab, sc), values in sorted(totals.items())]  # type: ignore[misc]


def load_class(folder: Path) -> ClassResults:
    """Every attempt in `folder`, grouped by student and scenario (UserError if no folder)."""
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise UserError(
            f"the results folder {folder} {what}",
            f"give the folder the students saved into (their {RESULTS_DIR_ENV})",
        )
    attempts: list[Attempt] = []
    skipped: list[Skipped] = []
    decoder = msgspec.json.Decoder(Attempt)
    for path in sorted(folder.glob("*.json")):
        try:
            attempt = decoder.decode(path.read_bytes())
        except (OSError, msgspec.DecodeError) as err:
            skipped.append(Skipped(path.name, str(err).splitlines()[0]))
            continue
        if attempt.format != FORMAT:
            skipped.append(Skipped(path.name, f"format {attempt.format!r}, expected {FORMAT!r}"))
            continue
        attempts.append(attempt)
    attempts.sort(key=lambda a: (a.saved_at, a.student))
    by_student: dict[str, StudentTally] = {}
    for attempt in attempts:
        name = " ".join(attempt.student.split()) or "anonymous"
        student = by_student.setdefault(name.casefold(), StudentTally(name))
        tally = next(
            (
                t
                for t in student.scenarios
                if (t.lab, t.scenario) == (attempt.lab, attempt.scenario)
            ),
            None,
        )
        if tally is None:
            tally = ScenarioTally(attempt.lab, attempt.scenario)
            student.scenarios.append(tally)
        tally.attempts.append(attempt)
    students = sorted(by_student.values(), key=lambda s: s.student.casefold())
    for student in students:
        student.scenarios.sort(key=lambda t: (t.lab, t.scenario))
    return ClassResults(folder, students, skipped)

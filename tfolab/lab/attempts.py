"""Graded attempts on disk: one JSON file per attempt (a class's are read by class_results).

Rules:
- Where: the folder the student gives in the UI, else $TFOLAB_RESULTS_DIR.
  In a served session (tfolab.lab.identity.is_served) the folder is the one
  `tfolab serve --results DIR` gave, and only that: what the form says is
  ignored and `save` refuses any other. No folder, no file.
- Who: the student's name is cleaned (tfolab.lab.names: no control or bidi
  characters, at most NAME_MAX characters) and saved with the session's
  identity (tfolab.lab.identity), which the student cannot choose.
- Bounded: a served session saves at most so many files and bytes
  (tfolab.lab.served_saves); past them, `save` refuses in one line.
- Readable by the teacher: a file is made mode 0640, so it takes the
  folder's group where the folder is setgid (`tfolab serve --results` makes
  it so); nobody else on the machine reads a classmate's answers.
- One attempt = one student's predictions for one scenario at one delay,
  graded against the model and, after a real run, the measurement. The shape
  is the Attempt struct below (docs/DESIGN.md, "Contracts", the attempt JSON);
  files are written whole (a temporary file renamed), never half.
"""

from __future__ import annotations

import os
import re
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from tfolab.core.errors import UserError
from tfolab.lab import served_saves
from tfolab.lab.grading import Grade
from tfolab.lab.identity import is_served, session_identity
from tfolab.lab.names import clean_name

RESULTS_DIR_ENV = "TFOLAB_RESULTS_DIR"
FORMAT = "tfolab-attempt/1"
FILE_MODE = 0o640  # the owner writes, the folder's group (the teacher) reads


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
    session: str = ""  # tfolab.lab.identity: who saved it, as the machine knows it
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
        student=clean_name(student),
        session=session_identity(),
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


def fixed_results_dir() -> Path | None:
    """In a served session, the folder serve gave (None: nothing is saved); elsewhere None."""
    text = os.environ.get(RESULTS_DIR_ENV, "").strip()
    return Path(text) if is_served() and text else None


def results_dir(given: str | None = None) -> Path | None:
    """The folder attempts go to: `given` (the UI's field), else $TFOLAB_RESULTS_DIR, else None.

    A served session ignores `given`: its folder is serve's, or none.
    """
    if is_served():
        return fixed_results_dir()
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
    if is_served() and folder != fixed_results_dir():
        raise UserError(
            f"a served session saves only in the class's results folder, not in {folder}",
            "your teacher chose the folder when starting tfolab serve",
        )
    check_results_dir(folder)
    target = path or folder / file_name(attempt, datetime.now(UTC))
    if target.parent != folder:
        raise UserError(f"{target} is not in the results folder {folder}", "save it in the folder")
    data = msgspec.json.format(msgspec.json.encode(attempt), indent=2) + b"\n"
    served_saves.take(len(data), new_file=not os.path.lexists(target))  # a session's bound
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=".attempt-", suffix=".tmp")
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target

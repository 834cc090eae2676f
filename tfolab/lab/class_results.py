"""A class's results folder, read by the teacher (`tfolab grade`): no file can stop it.

Rules:
- Every `*.json` in the folder is read with tfolab.core.regular_file: a
  symbolic link, a FIFO, a device or a folder is skipped unread, and so is a
  file over MAX_FILE_BYTES (an attempt is a few kB). The decoder's nesting
  depth is bounded too (RecursionError is a reason, like any decode error).
  Each skipped file is listed with its reason; nothing is fatal but a
  missing folder.
- A run result that `tfolab serve --results` saved in the same folder
  (tfolab.lab.results_dir: {"kind", "saved_at", "payload"}) is counted as
  such, not listed as skipped.
- Names are cleaned again (tfolab.lab.names), whatever wrote the file; a
  file's name and a decoder's message are made printable.
- A student is a cleaned name AND a session identity (tfolab.lab.identity):
  two sessions that typed the same name are two rows, flagged, so nobody
  sets a classmate's first attempt by typing their name first. The teacher
  decides who is who.
- A student's result for a scenario is their FIRST attempt (a prediction made
  before seeing the answer); later attempts count as tries, the best is shown too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from tfolab.core.errors import UserError
from tfolab.core.regular_file import NotReadable, read_regular
from tfolab.lab.attempts import FORMAT, RESULTS_DIR_ENV, Attempt, GradeRecord
from tfolab.lab.names import clean_name, printable

MAX_FILE_BYTES = 1 << 20  # 1 MiB: an attempt is a few kB


class RunDocument(msgspec.Struct):
    """A run result saved by a served session (tfolab.lab.results_dir)."""

    kind: str
    saved_at: str
    payload: dict[str, Any]


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
    session: str = ""  # the identity that saved these attempts ("" in files from before)
    scenarios: list[ScenarioTally] = field(default_factory=list)
    sessions_with_name: int = 1  # how many identities typed this name: > 1 is flagged

    @property
    def shared(self) -> bool:
        return self.sessions_with_name > 1

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
    runs: int = 0  # run results (not attempts) in the same folder

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

    @property
    def shared_names(self) -> dict[str, int]:
        """Each name typed in more than one session, with how many sessions typed it."""
        return {s.student: s.sessions_with_name for s in self.students if s.shared}


_ATTEMPT = msgspec.json.Decoder(Attempt)
_RUN = msgspec.json.Decoder(RunDocument)


def _decode(data: bytes) -> Attempt | RunDocument:
    """An attempt, else a run result; ValueError (with the attempt's reason) if neither."""
    try:
        return _ATTEMPT.decode(data)
    except RecursionError:
        raise ValueError("it is nested too deeply to be an attempt") from None
    except msgspec.DecodeError as err:
        problem = str(err).splitlines()[0] if str(err) else "it is not an attempt"
    try:
        return _RUN.decode(data)
    except (msgspec.DecodeError, RecursionError):
        raise ValueError(problem) from None


def read_folder(folder: Path) -> tuple[list[Attempt], list[Skipped], int]:
    """The attempts in `folder`, the files skipped (with why), and how many run results."""
    attempts: list[Attempt] = []
    skipped: list[Skipped] = []
    runs = 0
    for path in sorted(folder.glob("*.json")):
        shown = printable(path.name)
        try:
            document = _decode(read_regular(path, MAX_FILE_BYTES))
        except NotReadable as err:
            skipped.append(Skipped(shown, str(err)))
            continue
        except ValueError as err:
            skipped.append(Skipped(shown, printable(str(err))))
            continue
        if isinstance(document, RunDocument):
            runs += 1
            continue
        if document.format != FORMAT:
            found = printable(document.format[:40])
            skipped.append(Skipped(shown, f"format {found!r}, expected {FORMAT!r}"))
            continue
        document.student = clean_name(document.student) or "anonymous"
        document.lab = clean_name(document.lab) or "?"
        document.scenario = clean_name(document.scenario) or "?"
        document.session = clean_name(document.session, 80)
        attempts.append(document)
    return attempts, skipped, runs


def load_class(folder: Path) -> ClassResults:
    """Every attempt in `folder`, grouped by student and scenario (UserError if no folder)."""
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise UserError(
            f"the results folder {printable(str(folder))} {what}",
            f"give the folder the students saved into (their {RESULTS_DIR_ENV})",
        )
    attempts, skipped, runs = read_folder(folder)
    attempts.sort(key=lambda a: (a.saved_at, a.student, a.session))
    by_student: dict[tuple[str, str], StudentTally] = {}
    for attempt in attempts:
        key = (attempt.student.casefold(), attempt.session)
        student = by_student.setdefault(key, StudentTally(attempt.student, attempt.session))
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
    sessions: dict[str, int] = {}
    for name, _ in by_student:
        sessions[name] = sessions.get(name, 0) + 1
    for (name, _), student in by_student.items():
        student.sessions_with_name = sessions[name]
    students = sorted(by_student.values(), key=lambda s: (s.student.casefold(), s.session))
    for student in students:
        student.scenarios.sort(key=lambda t: (t.lab, t.scenario))
    return ClassResults(folder, students, skipped, runs)

"""A class's saved attempts as a table, as JSON and as CSV (`tfolab grade`).

Rules: pure functions from tfolab.lab.class_results.ClassResults to strings
and plain data; no I/O. A cell "1/2" is right/of: quantities predicted within
the allowance. "first" is the student's first attempt at the scenario (graded
against the model), "best" their best, "measured" their latest attempt graded
against a real run ("-" if none). A name typed in more than one session is
shown with each session's identity, and said in a sentence under the tables.
Every text cell goes through tfolab.lab.names (printable; in the CSV, no cell
starts a formula), whatever the loader did. The JSON is the grade contract of
docs/DESIGN.md.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from tfolab.lab.attempts import GradeRecord
from tfolab.lab.class_results import ClassResults, StudentTally
from tfolab.lab.names import csv_cell, printable

CSV_COLUMNS = (
    "student",
    "lab",
    "scenario",
    "attempts",
    "first_right",
    "first_of",
    "best_right",
    "best_of",
    "measured_right",
    "measured_of",
    "session",
    "sessions_with_name",
)


def _who(student: StudentTally) -> str:
    """The name, with the session's identity where the name was typed in more than one."""
    if not student.shared:
        return printable(student.student)
    return printable(f"{student.student} [{student.session or 'no session'}]")


def _cell(grade: GradeRecord | None, *, measured: bool = False) -> str:
    if grade is None:
        return "-"
    right = grade.measured_right if measured else grade.model_right
    return f"{right}/{grade.of}"


def _table(rows: list[list[str]]) -> list[str]:
    lines = []
    rows = [[printable(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for number, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        if number == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def table(results: ClassResults) -> str:
    count = sum(len(t.attempts) for s in results.students for t in s.scenarios)
    lines = [
        f"Predictions saved in {printable(str(results.folder))}: "
        f"{len(results.students)} students, {count} attempts"
    ]
    if not results.students:
        lines.append("No attempts saved here yet.")
    else:
        lines.append("right/of = quantities predicted within the allowance (first attempt)")
        lines.append("")
        rows = [["student", "lab", "scenario", "attempts", "first", "best", "measured"]]
        for student in results.students:
            for t in student.scenarios:
                rows.append(
                    [
                        _who(student),
                        t.lab,
                        t.scenario,
                        str(len(t.attempts)),
                        _cell(t.first),
                        _cell(t.best),
                        _cell(t.measured, measured=True),
                    ]
                )
        lines += _table(rows)
        lines += ["", "Per student (first attempts):"]
        lines += _table(
            [["student", "scenarios", "right"]]
            + [[_who(s), str(len(s.scenarios)), f"{s.right}/{s.of}"] for s in results.students]
        )
        lines += ["", "Per scenario (first attempts):"]
        lines += _table(
            [["lab", "scenario", "students", "right"]]
            + [
                [lab, scenario, str(students), f"{right}/{of}"]
                for lab, scenario, students, right, of in results.scenario_totals()
            ]
        )
    for name, sessions in results.shared_names.items():
        lines.append(
            f"The name {printable(name)} was typed in {sessions} sessions: each has its own "
            "rows above, marked with its session; check who is who before grading."
        )
    if results.runs:
        lines.append(
            f"{results.runs} saved real runs (the class's run results, not attempts) "
            "are in the folder too; they are not graded here."
        )
    for skipped in results.skipped:
        lines.append(f"skipped {printable(skipped.file)}: {printable(skipped.reason)}")
    return "\n".join(lines)


def _grade_json(grade: GradeRecord | None, *, measured: bool = False) -> dict[str, int] | None:
    if grade is None:
        return None
    right = grade.measured_right if measured else grade.model_right
    return {"right": right or 0, "of": grade.of}


def to_json(results: ClassResults) -> dict[str, Any]:
    return {
        "folder": str(results.folder),
        "students": [
            {
                "student": printable(s.student),
                "session": printable(s.session),
                "sessions_with_name": s.sessions_with_name,
                "right": s.right,
                "of": s.of,
                "scenarios": [
                    {
                        "lab": printable(t.lab),
                        "scenario": printable(t.scenario),
                        "attempts": len(t.attempts),
                        "first": _grade_json(t.first),
                        "best": _grade_json(t.best),
                        "measured": _grade_json(t.measured, measured=True),
                    }
                    for t in s.scenarios
                ],
            }
            for s in results.students
        ],
        "scenarios": [
            {
                "lab": printable(lab),
                "scenario": printable(sc),
                "students": n,
                "right": right,
                "of": of,
            }
            for lab, sc, n, right, of in results.scenario_totals()
        ],
        "skipped": [
            {"file": printable(s.file), "reason": printable(s.reason)} for s in results.skipped
        ],
        "runs": results.runs,
    }


def to_csv(results: ClassResults) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for student in results.students:
        for t in student.scenarios:
            measured = t.measured
            writer.writerow(
                [
                    csv_cell(student.student),
                    csv_cell(t.lab),
                    csv_cell(t.scenario),
                    len(t.attempts),
                    t.first.model_right,
                    t.first.of,
                    t.best.model_right,
                    t.best.of,
                    "" if measured is None else measured.measured_right,
                    "" if measured is None else measured.of,
                    csv_cell(student.session),
                    student.sessions_with_name,
                ]
            )
    return out.getvalue()

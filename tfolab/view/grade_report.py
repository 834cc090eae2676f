"""A class's saved attempts as a table, as JSON and as CSV (`tfolab grade`).

Rules: pure functions from tfolab.lab.attempts.ClassResults to strings and
plain data; no I/O. A cell "1/2" is right/of: quantities predicted within the
allowance. "first" is the student's first attempt at the scenario (graded
against the model), "best" their best, "measured" their latest attempt graded
against a real run ("-" if none). The JSON is the grade contract of
docs/DESIGN.md.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from tfolab.lab.attempts import ClassResults, GradeRecord

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
)


def _cell(grade: GradeRecord | None, *, measured: bool = False) -> str:
    if grade is None:
        return "-"
    right = grade.measured_right if measured else grade.model_right
    return f"{right}/{grade.of}"


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for number, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        if number == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def table(results: ClassResults) -> str:
    count = sum(len(t.attempts) for s in results.students for t in s.scenarios)
    lines = [
        f"Predictions saved in {results.folder}: {len(results.students)} students, {count} attempts"
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
                        student.student,
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
            + [[s.student, str(len(s.scenarios)), f"{s.right}/{s.of}"] for s in results.students]
        )
        lines += ["", "Per scenario (first attempts):"]
        lines += _table(
            [["lab", "scenario", "students", "right"]]
            + [
                [lab, scenario, str(students), f"{right}/{of}"]
                for lab, scenario, students, right, of in results.scenario_totals()
            ]
        )
    for skipped in results.skipped:
        lines.append(f"skipped {skipped.file}: {skipped.reason}")
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
                "student": s.student,
                "right": s.right,
                "of": s.of,
                "scenarios": [
                    {
                        "lab": t.lab,
                        "scenario": t.scenario,
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
            {"lab": lab, "scenario": sc, "students": n, "right": right, "of": of}
            for lab, sc, n, right, of in results.scenario_totals()
        ],
        "skipped": [{"file": s.file, "reason": s.reason} for s in results.skipped],
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
                    student.student,
                    t.lab,
                    t.scenario,
                    len(t.attempts),
                    t.first.model_right,
                    t.first.of,
                    t.best.model_right,
                    t.best.of,
                    "" if measured is None else measured.measured_right,
                    "" if measured is None else measured.of,
                ]
            )
    return out.getvalue()

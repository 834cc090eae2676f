"""One name, two sessions: a student who types a classmate's name first no longer sets
the classmate's grade; `tfolab grade` shows both, each with its session, and says so.

Each session is a real process with the environment `tfolab serve` gives its
sessions (TFOLAB_SERVED_BY, the fixed results folder)."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.cli.test_grade_hostile import ROOT, grade
from tfolab.lab.attempts import RESULTS_DIR_ENV
from tfolab.runner.served_class import SERVED_BY_ENV

SAVE = """
import sys
from tests.cli.test_grade import save_attempt
answer = sys.argv[2]
save_attempt(
    __import__("pathlib").Path(sys.argv[1]), "Bob", "fastopen", "cookie",
    {"iteration 1": answer, "iterations 2+": answer}, int(sys.argv[3]),
)
"""


def session_saves(folder: Path, answer: str, minute: int) -> None:
    env = dict(os.environ, **{SERVED_BY_ENV: "777", RESULTS_DIR_ENV: str(folder)})
    env.pop("TFOLAB_SESSION_ID", None)
    subprocess.run(
        [sys.executable, "-c", SAVE, str(folder), answer, str(minute)],
        check=True,
        cwd=ROOT,
        env=env,
        timeout=60,
    )


def test_a_name_typed_in_two_sessions_is_two_flagged_rows(tmp_path: Path) -> None:
    session_saves(tmp_path, "9D", 1)  # the prankster, first, with Bob's name
    session_saves(tmp_path, "2D", 2)  # Bob himself
    out = grade(tmp_path)
    assert "2 students" in out
    rows = [line for line in out.splitlines() if line.startswith("Bob [tab 777-")]
    assert len(rows) == 4  # per scenario and per student, each session its own row
    assert {r.split()[-3] for r in rows[:2]} == {"0/2", "2/2"}  # Bob's own first attempt counts
    assert "The name Bob was typed in 2 sessions" in out
    data = json.loads(grade(tmp_path, "--json"))
    assert [s["sessions_with_name"] for s in data["students"]] == [2, 2]
    assert len({s["session"] for s in data["students"]}) == 2
    rows_csv = list(csv.DictReader(io.StringIO(grade(tmp_path, "--csv"))))
    assert [r["sessions_with_name"] for r in rows_csv] == ["2", "2"]

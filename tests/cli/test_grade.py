"""`tfolab grade DIR`: two students' made-up attempts, graded by the real model, summarised."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest

from tfolab import cli
from tfolab.lab import attempts, grading
from tfolab.lab.catalog import find_lab
from tfolab.lab.expression import parse
from tfolab.lab.plan import plan
from tfolab.lab.prediction import predict
from tfolab.lab.quantities import quantities_for


def save_attempt(
    folder: Path,
    student: str,
    lab_name: str,
    scenario: str,
    predictions: dict[str, str],
    minute: int,
    measured: tuple[float, ...] = (),
) -> Path:
    lab = find_lab(lab_name)
    planned = plan(lab, scenario, delay_ms=10.0)
    result = predict(planned, hz=250)
    for m, value in zip(result.scenarios[0].measurements, measured, strict=False):
        m.measured_ms = value
    grade = grading.grade(
        {name: parse(text) for name, text in predictions.items()},
        quantities_for((), planned.scenarios[0].iterations),
        result.scenarios[0],
        10.0,
    )
    when = datetime(2026, 11, 23, 9, minute, tzinfo=UTC)
    attempt = attempts.make_attempt(
        student=student,
        lab=lab_name,
        scenario=scenario,
        settings={},
        iterations=planned.scenarios[0].iterations,
        delay_ms=10.0,
        hz=250,
        grade=grade,
        saved_at=when,
    )
    return attempts.save(folder, attempt, folder / attempts.file_name(attempt, when))


@pytest.fixture
def classroom(tmp_path: Path) -> Path:
    # Ada: cookie right first time; nagle half right, then right on her second try.
    save_attempt(
        tmp_path, "Ada", "fastopen", "cookie", {"iteration 1": "2D", "iterations 2+": "1 RTT"}, 1
    )
    save_attempt(
        tmp_path, "Ada", "delack", "nagle", {"iteration 1": "4D", "iterations 2+": "4D"}, 2
    )
    save_attempt(
        tmp_path, "Ada", "delack", "nagle", {"iteration 1": "4D", "iterations 2+": "4D+44"}, 3
    )
    # Bob: cookie wrong (4D twice), then a real run that measured ~21 ms.
    save_attempt(
        tmp_path,
        "Bob",
        "fastopen",
        "cookie",
        {"iteration 1": "4D", "iterations 2+": "40"},
        4,
        measured=(20.8, 21.0, 20.9),
    )
    (tmp_path / "notes.json").write_text('{"hello": 1}')
    return tmp_path


def test_the_table(classroom: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["grade", str(classroom)]) == 0
    out = capsys.readouterr().out
    assert out == (
        f"Predictions saved in {classroom}: 2 students, 4 attempts\n"
        "right/of = quantities predicted within the allowance (first attempt)\n"
        "\n"
        "student  lab       scenario  attempts  first  best  measured\n"
        "-------  --------  --------  --------  -----  ----  --------\n"
        "Ada      delack    nagle     2         1/2    2/2   -\n"
        "Ada      fastopen  cookie    1         2/2    2/2   -\n"
        "Bob      fastopen  cookie    1         0/2    0/2   0/2\n"
        "\n"
        "Per student (first attempts):\n"
        "student  scenarios  right\n"
        "-------  ---------  -----\n"
        "Ada      2          3/4\n"
        "Bob      1          0/2\n"
        "\n"
        "Per scenario (first attempts):\n"
        "lab       scenario  students  right\n"
        "--------  --------  --------  -----\n"
        "delack    nagle     1         1/2\n"
        "fastopen  cookie    2         2/4\n"
        "skipped notes.json: Object missing required field `student`\n"
    )


def test_json_and_csv(classroom: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["grade", str(classroom), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [s["student"] for s in data["students"]] == ["Ada", "Bob"]
    ada = data["students"][0]
    assert (ada["right"], ada["of"]) == (3, 4)
    nagle = ada["scenarios"][0]
    assert nagle == {
        "lab": "delack",
        "scenario": "nagle",
        "attempts": 2,
        "first": {"right": 1, "of": 2},
        "best": {"right": 2, "of": 2},
        "measured": None,
    }
    assert data["students"][1]["scenarios"][0]["measured"] == {"right": 0, "of": 2}
    assert data["scenarios"][1] == {
        "lab": "fastopen",
        "scenario": "cookie",
        "students": 2,
        "right": 2,
        "of": 4,
    }
    assert data["skipped"][0]["file"] == "notes.json"
    assert cli.main(["grade", str(classroom), "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [(r["student"], r["scenario"], r["first_right"], r["best_right"]) for r in rows] == [
        ("Ada", "nagle", "1", "2"),
        ("Ada", "cookie", "2", "2"),
        ("Bob", "cookie", "0", "0"),
    ]
    assert rows[2]["measured_right"] == "0" and rows[0]["measured_right"] == ""


def test_an_attempt_file_holds_the_contract(classroom: Path) -> None:
    path = next(classroom.glob("bob-fastopen-cookie-*.json"))
    data = json.loads(path.read_text())
    assert data["format"] == "tfolab-attempt/1"
    assert (data["student"], data["lab"], data["scenario"], data["delay_ms"]) == (
        "Bob",
        "fastopen",
        "cookie",
        10.0,
    )
    assert data["predictions"] == {"iteration 1": "4D", "iterations 2+": "40"}
    assert data["model"] == {"iteration 1": [20.0, 20.0], "iterations 2+": [20.0, 20.0]}
    assert data["measured"] == {"iteration 1": [20.8, 20.8], "iterations 2+": [20.9, 21.0]}
    assert data["grade"] == {"of": 2, "model_right": 0, "measured_right": 0}
    assert data["quantities"][0]["explanation"].startswith("✗ iteration 1: you predicted 4D")
    msgspec.json.decode(path.read_bytes(), type=attempts.Attempt)


def test_a_missing_folder_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["grade", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tfolab: the results folder") and err.count("\n") == 1


def test_an_empty_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["grade", str(tmp_path)]) == 0
    assert "No attempts saved here yet." in capsys.readouterr().out


def test_demo_flag_reaches_the_ui(
    monkeypatch: pytest.MonkeyPatch, cli_args: Callable[..., list[str]]
) -> None:
    import tfolab.tui.app

    seen: list[bool] = []

    def fake_run_app(*, demo: bool = False) -> int:
        seen.append(demo)
        return 0

    monkeypatch.setattr(tfolab.tui.app, "run_app", fake_run_app)
    assert cli.main(cli_args("--demo")) == 0
    assert cli.main(cli_args()) == 0
    assert seen == [True, False]

"""`tfolab grade` on a folder a hostile class filled: real files, the real command.

Deep JSON, a FIFO, a link to /dev/zero, a 100 MB sparse file, a folder named
*.json, a file name with an escape sequence, names with escape sequences,
bidi overrides and spreadsheet formulas: the command exits 0 within seconds,
lists every bad file as skipped with its reason, and its table, JSON and CSV
carry no control character and no formula.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_grade import save_attempt
from tfolab.lab.results_dir import save_result

ROOT = Path(__file__).resolve().parents[2]
HOSTILE_NAMES = (
    "\x1b]0;owned\x07Eve\x1b[2J",
    '=HYPERLINK("http://evil.example/","click me")',
    "\u202eevil\u2066 Mallory",
    "+1+2",
    "@SUM(A1)",
    "-3",
    "\tTab",
)
BAD_FILES = {
    "deep.json": "nested too deeply",
    "fifo.json": "FIFO",
    "zero.json": "symbolic link",
    "huge.json": "more than the limit",
    "folder.json": "folder",
    "\\x1b[31mred.json": "Expected `object`",
}
UNSAFE = [chr(c) for c in range(0x20) if c != 0x0A] + ["\x7f", "\u202e", "\u2066", "\x9b"]


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    for minute, name in enumerate(HOSTILE_NAMES):
        save_attempt(
            tmp_path,
            name,
            "fastopen",
            "cookie",
            {"iteration 1": "2D", "iterations 2+": "2D"},
            minute,
        )
    save_attempt(
        tmp_path, "Ada", "fastopen", "cookie", {"iteration 1": "2D", "iterations 2+": "2D"}, 9
    )
    (tmp_path / "deep.json").write_text('{"x": ' + "[" * 200_000 + "]" * 200_000 + "}")
    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    with open(tmp_path / "huge.json", "wb") as huge:
        huge.truncate(100 * 1024 * 1024)  # sparse: 100 MB to stat, no disk
    (tmp_path / "folder.json").mkdir()
    (tmp_path / "\x1b[31mred.json").write_text("[1, 2]")
    save_result(tmp_path, "run", {"session": "Ada", "run": {"lab": "fastopen"}})
    return tmp_path


def grade(folder: Path, *flags: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "tfolab", "grade", str(folder), *flags],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done.stdout


def clean(text: str) -> None:
    found = sorted({repr(c) for c in text if c in UNSAFE})
    assert not found, f"unsafe characters reach the terminal: {found}"


def test_the_table_lists_every_bad_file_and_stays_clean(hostile: Path) -> None:
    out = grade(hostile)
    clean(out)
    skipped = {
        line.removeprefix("skipped ").split(": ", 1)[0]: line.split(": ", 1)[1]
        for line in out.splitlines()
        if line.startswith("skipped ")
    }
    assert set(skipped) == set(BAD_FILES)
    for name, why in BAD_FILES.items():
        assert why in skipped[name], (name, skipped[name])
    assert "8 students" in out  # seven hostile names and Ada, each cleaned
    assert "]0;ownedEve[2J" in out and "evil Mallory" in out
    assert "1 saved real runs" in out  # counted, not skipped


def test_json_and_csv_are_clean(hostile: Path) -> None:
    data = json.loads(grade(hostile, "--json"))
    clean(json.dumps(data, ensure_ascii=False))
    assert {s["file"] for s in data["skipped"]} == set(BAD_FILES)
    assert data["runs"] == 1
    out = grade(hostile, "--csv")
    rows = list(csv.reader(io.StringIO(out)))
    assert len(rows) == 1 + 8
    for row in rows:
        for cell in row:
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), cell
            clean(cell)
    students = {row[0] for row in rows[1:]}
    assert '\'=HYPERLINK("http://evil.example/","click me")' in students
    assert {"'+1+2", "'@SUM(A1)", "'-3", "Tab"} <= students

"""The mutation check's judgement (tests/mutation_check.py, tests/mutation_outcomes.py):
only a test that passed untouched and fails an assertion once broken is a catch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.mutation_check import caught_by, not_counted, untouched_failures
from tests.mutation_outcomes import OUTCOMES_ENV

ROOT = Path(__file__).resolve().parents[1]

SAMPLE = """
from pathlib import Path

import pytest
from tests.timing import TimingMiss

@pytest.fixture
def broken_fixture():
    raise OSError("no such device")

@pytest.fixture
def broken_teardown():
    yield
    raise OSError("left something behind")

def test_passes(): assert 1 + 1 == 2
def test_disagrees(): assert 1 + 1 == 3
def test_late(): raise TimingMiss("measured 30 ms, outside [19, 21]")
def test_crashes(): {}["missing"]
def test_environment(): pytest.fail("TFOLAB_REQUIRE_REAL=1 but nginx is missing here")
def test_fixture(broken_fixture): pass
def test_teardown(broken_teardown): pass
@pytest.mark.flaky(reruns=1, only_rerun=[TimingMiss])
def test_late_then_fine():
    marker = Path(__file__).with_name("tried")
    if not marker.exists():
        marker.touch()
        raise TimingMiss("a hiccup")
"""


def test_the_plugin_records_each_tests_last_outcome(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    outcomes = tmp_path / "outcomes.json"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-p", "tests.mutation_outcomes", "test_sample.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, OUTCOMES_ENV: str(outcomes), "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    got = {k.split("::")[1]: v for k, v in json.loads(outcomes.read_text()).items()}
    assert got == {
        "test_passes": "passed",
        "test_disagrees": "assertion",
        "test_late": "timing",
        "test_crashes": "crashed",
        "test_environment": "crashed",
        "test_fixture": "error",
        "test_teardown": "error",
        "test_late_then_fine": "passed",
    }


def test_only_a_test_that_passed_untouched_and_now_disagrees_is_a_catch() -> None:
    untouched = {"a": "passed", "b": "passed", "c": "passed", "d": "passed", "e": "assertion"}
    broken = {"a": "assertion", "b": "timing", "c": "crashed", "d": "passed", "e": "assertion"}
    assert caught_by(untouched, broken) == ["a", "b (timing)"]
    assert not_counted(untouched, broken) == 1  # c crashed: not a catch, but shown
    # A broken run that only errors (an environment lost, a collection error) catches nothing.
    assert caught_by(untouched, {"a": "error", "<collection>": "error"}) == []


def test_an_untouched_selection_must_pass_entirely() -> None:
    assert untouched_failures({"a": "passed", "b": "passed"}) == []
    assert untouched_failures({"a": "passed", "b": "skipped", "c": "timing"}) == [
        "b (skipped)",
        "c (timing)",
    ]
    assert untouched_failures({}) == ["<no test ran>"]


def test_every_breakage_still_finds_its_text() -> None:
    """A breakage whose text left the source breaks nothing: the README's test command
    says so at once, not only CI's mutation step (which reports it as STALE)."""
    from tests.mutation_check import BREAKAGES

    stale = [b.name for b in BREAKAGES if b.old not in (ROOT / b.path).read_text()]
    assert stale == []

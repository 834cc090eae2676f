"""A pytest plugin for tests/mutation_check.py: each test's final outcome, as JSON.

Loaded with `-p tests.mutation_outcomes` and TFOLAB_MUTATION_OUTCOMES=<file>; it
writes {nodeid: outcome} at the end of the session. Outcomes:
- "passed", "skipped";
- "assertion" (the test body raised an AssertionError: it checked and disagreed),
  "timing" (a TimingMiss, after its rerun), "crashed" (any other exception in the
  test body, pytest.fail included: require_or_skip under TFOLAB_REQUIRE_REAL),
  "error" (setup or teardown failed: an environment or fixture, not a check).
A test rerun for timing is judged by its last attempt.
"""

from __future__ import annotations

import json
import os
from collections.abc import Generator
from pathlib import Path

import pytest

from tests.timing import TimingMiss

OUTCOMES_ENV = "TFOLAB_MUTATION_OUTCOMES"

_outcomes: dict[str, str] = {}


def classify(exception: BaseException | None) -> str:
    if exception is None:
        return "passed"
    if isinstance(exception, TimingMiss):
        return "timing"
    if isinstance(exception, AssertionError):
        return "assertion"
    return "crashed"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if call.when == "setup":
        _outcomes[item.nodeid] = "skipped" if report.skipped else "passed"
    if report.skipped:
        _outcomes[item.nodeid] = "skipped"
    elif report.failed and call.when != "call":
        _outcomes[item.nodeid] = "error"
    elif call.when == "call":
        _outcomes[item.nodeid] = classify(call.excinfo.value if call.excinfo else None)
    return report


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _outcomes[report.nodeid or "<collection>"] = "error"


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = os.environ.get(OUTCOMES_ENV)
    if path:
        Path(path).write_text(json.dumps(_outcomes, indent=1, sort_keys=True))

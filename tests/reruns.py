"""A pytest plugin: every rerun is printed with its reason, and reruns have a budget.

Rules:
- Reruns happen only on TimingMiss (tests/timing.py, TIMING in tests/conftest.py),
  or where a test repeats a timing-only miss itself (the differential fuzzer):
  it calls `record`, and that repeat is listed and counted like any other.
- The terminal summary lists each rerun: the test and the miss that caused it.
- Under TFOLAB_REQUIRE_REAL=1 (CI) more than RERUN_BUDGET reruns in one session
  fail it: a machine that misses that often is hiding something, timing or not.
"""

from __future__ import annotations

import pytest

from tests.environment import require_real

RERUN_BUDGET = 3

_reruns: list[tuple[str, str]] = []


def _reason(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    message = getattr(crash, "message", None) or str(report.longrepr)
    return " / ".join(message.strip().splitlines()[:3])


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.outcome == "rerun":
        _reruns.append((report.nodeid, _reason(report)))


def record(nodeid: str, reason: str) -> None:
    """A repeat a test made itself, for a timing-only miss: a rerun like the others."""
    _reruns.append((nodeid, reason))


def over_budget() -> bool:
    return require_real() and len(_reruns) > RERUN_BUDGET


def pytest_sessionfinish(session: pytest.Session) -> None:
    if over_budget() and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _reruns:
        return
    terminalreporter.section(f"reruns (timing only): {len(_reruns)}, budget {RERUN_BUDGET}")
    for nodeid, reason in _reruns:
        terminalreporter.write_line(f"RERUN {nodeid}: {reason}")
    if over_budget():
        terminalreporter.write_line(
            f"FAILED: {len(_reruns)} reruns exceed the budget of {RERUN_BUDGET} "
            "(TFOLAB_REQUIRE_REAL=1)"
        )

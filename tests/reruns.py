"""A pytest plugin: every rerun is printed with its reason, and reruns have a budget.

Rules:
- Reruns happen only on TimingMiss (tests/timing.py, TIMING in tests/conftest.py),
  or where a test repeats a case itself (the differential fuzzer: a timing-only
  miss, or a disagreement after the delay backend measured itself holding the
  link): it calls `record`, and that repeat is listed and counted like any other.
- The terminal summary lists each rerun: the test and the miss that caused it.
- Under TFOLAB_REQUIRE_REAL=1 (CI) more than RERUN_BUDGET reruns in one session
  fail it: a machine that misses that often is hiding something, timing or not.
- A rerun whose failed attempt ran while the hypervisor took this machine's
  CPUs (steal, tfolab.runner.cpu_wait.stolen_ns, read around every test) is
  listed with that figure and not counted: the miss has its evidence, outside
  the guest. Every other rerun counts.
"""

from __future__ import annotations

import pytest

from tests.environment import require_real
from tfolab.runner.cpu_wait import stolen_ns

RERUN_BUDGET = 3

# (test, reason, ms the hypervisor took while the failed attempt ran)
_reruns: list[tuple[str, str, float]] = []
_stolen_at_start: dict[str, int] = {}
_stolen_in_call: dict[str, float] = {}


def _reason(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    message = getattr(crash, "message", None) or str(report.longrepr)
    return " / ".join(message.strip().splitlines()[:3])


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _stolen_at_start[item.nodeid] = stolen_ns()


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    start = _stolen_at_start.pop(item.nodeid, None)
    if start is not None:
        _stolen_in_call[item.nodeid] = (stolen_ns() - start) / 1e6


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.outcome == "rerun":
        _reruns.append((report.nodeid, _reason(report), _stolen_in_call.get(report.nodeid, 0.0)))


def record(nodeid: str, reason: str, stolen_ms: float = 0.0) -> None:
    """A repeat a test made itself (differential.Outcome.repeatable): a rerun like the others
    (`stolen_ms`: what the hypervisor took while the missed run ran)."""
    _reruns.append((nodeid, reason, stolen_ms))


def counted() -> int:
    """The reruns the budget counts: those without the hypervisor's steal behind them."""
    return sum(1 for _, _, stolen in _reruns if stolen == 0)


def over_budget() -> bool:
    return require_real() and counted() > RERUN_BUDGET


def pytest_sessionfinish(session: pytest.Session) -> None:
    if over_budget() and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _reruns:
        return
    terminalreporter.section(
        f"reruns (timing or a held link): {len(_reruns)}, {counted()} counted, "
        f"budget {RERUN_BUDGET}"
    )
    for nodeid, reason, stolen in _reruns:
        host = f" [the hypervisor took {stolen:.0f} ms: not counted]" if stolen else ""
        terminalreporter.write_line(f"RERUN {nodeid}: {reason}{host}")
    if over_budget():
        terminalreporter.write_line(
            f"FAILED: {counted()} reruns exceed the budget of {RERUN_BUDGET} "
            "(TFOLAB_REQUIRE_REAL=1)"
        )

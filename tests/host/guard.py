"""A pytest plugin: the whole session leaves the host as it found it, or it fails.

Rules:
- At the start: the host's snapshot (tests/host/state.py) and a marker put in
  this process's environment, TFOLAB_TEST_SESSION=<random>, inherited by every
  process a test starts.
- At the very end (after every fixture's teardown): processes still carrying
  the marker are leftovers; they get LEFTOVER_GRACE_S to exit, are then named
  and killed (the next session starts clean either way). A second snapshot is
  compared with the first. Any leftover or change fails the session and is
  listed in the terminal summary.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time

import pytest

from tests.host import state

MARKER_ENV = "TFOLAB_TEST_SESSION"
LEFTOVER_GRACE_S = 10.0

_before: dict[str, list[str]] = {}
_found: list[str] = []


def _marker() -> str:
    return f"{MARKER_ENV}={os.environ[MARKER_ENV]}"


def pytest_sessionstart(session: pytest.Session) -> None:
    os.environ[MARKER_ENV] = secrets.token_hex(8)
    _before.update(state.snapshot())


def _leftovers() -> dict[int, str]:
    deadline = time.monotonic() + LEFTOVER_GRACE_S
    found = state.leftovers(_marker())
    while found and time.monotonic() < deadline:
        time.sleep(0.2)
        found = state.leftovers(_marker())
    return found


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    if not _before:
        return
    left = _leftovers()
    for pid, what in sorted(left.items()):
        _found.append(f"leftover process {pid} {what}: killed")
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    _found.extend(state.changes(_before, state.snapshot()))
    if _found and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _found:
        return
    terminalreporter.section("the host changed during this session", red=True)
    for line in _found:
        terminalreporter.write_line(f"HOST {line}")

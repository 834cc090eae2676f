"""Fixtures for the UI tests: a deterministic app (fixed HZ, fixed real-run status).

`make_app()` opens in demo mode (no predictions asked), so the ladder tests see
the ladder at once; the predict-first tests pass demo=False.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tfolab.lab.environment import RealRunStatus
from tfolab.tui.app import TfolabApp

SIZE = (100, 32)
HZ = 250
REAL_RUNS_ON = RealRunStatus(True, "root, a private network namespace per run")


@pytest.fixture
def make_app() -> Callable[..., TfolabApp]:
    def make(**kwargs: object) -> TfolabApp:
        kwargs.setdefault("hz", HZ)
        kwargs.setdefault("real_runs", REAL_RUNS_ON)
        kwargs.setdefault("demo", True)
        return TfolabApp(**kwargs)  # type: ignore[arg-type]

    return make

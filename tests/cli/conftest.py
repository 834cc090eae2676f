"""The `spawns` fixture: every way the CLI could start the runner, recorded (spawning.py)."""

from __future__ import annotations

import pytest

from tests.cli.spawning import record_spawns


@pytest.fixture
def spawns(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    return record_spawns(monkeypatch)

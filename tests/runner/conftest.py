"""Fixtures of the runner's tests."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.runner.holders import kill_all


@pytest.fixture
def slot_dir() -> Iterator[Path]:
    # Under /tmp (not pytest's 0700 folder): other users must reach it.
    base = Path(tempfile.mkdtemp(prefix="tfolab-slots-test-"))
    os.chmod(base, 0o755)
    yield base / "slots"
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(autouse=True)
def no_holder_outlives_its_test() -> Iterator[None]:
    yield
    kill_all()

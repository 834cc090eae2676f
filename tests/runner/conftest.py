"""Fixtures of the runner's tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.runner.holders import kill_all
from tfolab.runner import served_class as served


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


# A served class, faked: a "server" that starts a "UI" (argv ending in `-m tfolab`, as
# textual-serve's sessions are started through a shell), which starts a "run" waiting in
# line; all just sleep.
SLEEP = "import time; time.sleep(60)"
RUN = (
    "import subprocess, sys; "
    f"subprocess.Popen([sys.executable, '-c', {SLEEP!r}, '-m', 'tfolab.runner']); {SLEEP}"
)
SERVER = f"""
import subprocess, sys
subprocess.Popen(["sh", "-c", f"{{sys.executable}} -c \\"{RUN}\\" -m tfolab; true"])
{SLEEP}
"""


def _tree(root: int) -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            parent = served.parent(int(entry))
            if parent is not None:
                children.setdefault(parent, []).append(int(entry))
    return children


@pytest.fixture
def served_class() -> Iterator[tuple[int, int, int]]:
    """A fake served class, alive: (server, ui, waiting run) pids."""
    server = subprocess.Popen([sys.executable, "-c", SERVER], start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            tree = _tree(server.pid)
            shells = tree.get(server.pid, [])
            uis = [ui for shell in shells for ui in tree.get(shell, [])]
            runs = [run for ui in uis for run in tree.get(ui, [])]
            if uis and runs:
                yield server.pid, uis[0], runs[0]
                return
            time.sleep(0.05)
        pytest.fail("the fake class did not start")
    finally:
        os.killpg(server.pid, 9)
        server.wait()

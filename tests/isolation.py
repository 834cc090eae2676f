"""A pytest plugin: the test session's machine state is its own.

Rules:
- Real runs queue on measurement slots (tfolab/core/slots.py), by default in a
  directory every tfolab on the machine shares. A test session gets a fresh one
  of its own (TFOLAB_SLOTS_DIR, in a folder under /tmp that is sticky and
  world-writable like /dev/shm, so that a session run as nobody or in a user
  namespace can make the slots first), removed at the end: a stale `size`
  left by another session, or another TFOLAB_SLOTS, cannot break a test.
- A TFOLAB_SLOTS_DIR set by whoever started the tests is kept as given.
- Started as root, `tfolab serve`, `run`, `bench` and the UI take no folder
  from their environment, so those commands get the session's slots by their
  flag (tests/served_slots.py; in this process, the `cli_args` fixture).
- Two sessions measuring at once on one machine still disturb each other's
  timings; keeping them apart is the machine's timing lock's job, not this.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tfolab.core.slots import DIR_ENV

_made: list[Path] = []


def pytest_sessionstart(session: pytest.Session) -> None:
    if os.environ.get(DIR_ENV):
        return
    base = Path(tempfile.mkdtemp(prefix="tfolab-test-slots-"))
    os.chmod(base, 0o1777)  # as /dev/shm: whichever user runs first makes the slots
    _made.append(base)
    os.environ[DIR_ENV] = str(base / "slots")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    for base in _made:
        shutil.rmtree(base, ignore_errors=True)

"""A measuring run keeps a served class off a CPU (tfolab.runner.served_class), for real:
processes shaped like serve's sessions and their waiting runs are moved off the last CPU
and back, and nothing moves outside a served session."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tfolab.runner import served_class as served

pytestmark = pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to keep one free"
)


def test_a_served_run_moves_the_class_off_the_last_cpu_and_back(
    served_class: tuple[int, int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, ui, waiting = served_class
    every = sorted(os.sched_getaffinity(0))
    monkeypatch.setenv(served.SERVED_BY_ENV, str(server))
    moved = served.spare_for_measuring(1)
    assert sorted(moved) == sorted([ui, waiting])
    assert os.sched_getaffinity(ui) == os.sched_getaffinity(waiting) == set(every[:-1])
    assert os.sched_getaffinity(server) == set(every)  # the relay keeps its CPUs
    served.give_back(moved)
    assert os.sched_getaffinity(ui) == os.sched_getaffinity(waiting) == set(every)


def test_a_run_widens_itself_and_its_lab_first(
    served_class: tuple[int, int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, _, _ = served_class
    every = os.sched_getaffinity(server)
    lab = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        os.sched_setaffinity(lab.pid, {0})  # started while another run measured
        monkeypatch.setenv(served.SERVED_BY_ENV, str(server))
        moved = served.spare_for_measuring(1, (lab.pid,))
        assert os.sched_getaffinity(lab.pid) == every
        assert lab.pid not in moved
        served.give_back(moved)
    finally:
        lab.kill()
        lab.wait()


def test_outside_a_served_session_nothing_moves(
    served_class: tuple[int, int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, ui, _ = served_class
    monkeypatch.delenv(served.SERVED_BY_ENV, raising=False)
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(before)})  # the user's own taskset
    try:
        assert served.spare_for_measuring(1) == []
        assert os.sched_getaffinity(0) == {min(before)}  # left as the user set it
    finally:
        os.sched_setaffinity(0, before)
    assert os.sched_getaffinity(ui) == before

"""Reruns only for timing: what TimingMiss covers, and that the rerun policy holds.

A small suite is run in a child pytest with this repository's TIMING marker and
rerun plugin: a TimingMiss is rerun and listed with its reason; a plain
AssertionError (packets, counters, leftovers) fails at once; and under
TFOLAB_REQUIRE_REAL=1 more reruns than the budget fail the session.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reruns import RERUN_BUDGET
from tests.timing import TimingMiss, assert_in_band, check_exit, timing_only

ROOT = Path(__file__).resolve().parents[1]


def _done(code: int, stderr: str) -> subprocess.CompletedProcess[str]:
    return subprocess.CompletedProcess(["tfolab"], code, "", stderr)


def test_a_band_or_a_late_arrival_is_timing() -> None:
    band = "tfolab: delack/nagle #3 measured 93.1 ms, 2.4 ms above its band (88.0 ± 2.7 ms)"
    late = "tfolab: handshake/plain: packet 4 arrived at 41.3 ms; the model said 40.0 ms"
    with pytest.raises(TimingMiss):
        check_exit(_done(1, f"{band}\n{late}\n"))


@pytest.mark.parametrize(
    "sentence",
    [
        "tfolab: fastopen/cookie: TCPFastOpenActive +1, the model +2",
        "tfolab: delack/nagle: packet 5: window 512, the model 1024",
    ],
)
def test_anything_else_is_a_plain_failure(sentence: str) -> None:
    band = "tfolab: delack/nagle #3 measured 93.1 ms, 2.4 ms above its band (88.0 ± 2.7 ms)"
    with pytest.raises(AssertionError) as caught:
        check_exit(_done(1, f"{band}\n{sentence}\n"))
    assert not isinstance(caught.value, TimingMiss)


def test_another_exit_is_never_timing() -> None:
    with pytest.raises(AssertionError) as caught:
        check_exit(_done(3, "tfolab: internal error"))
    assert not isinstance(caught.value, TimingMiss)


BAND = "tfolab: delack/nagle #3 measured 93.1 ms, 2.4 ms above its band (88.0 ± 2.7 ms)"


def test_every_exit_1_sentence_is_read_before_the_times() -> None:
    assert timing_only(_done(0, "")) == []
    check_exit(_done(0, ""))
    assert timing_only(_done(1, f"progress line\n{BAND}\n")) == [BAND]
    for stderr in (
        "",  # an exit 1 that says nothing is not a timing verdict
        f"{BAND}\ntfolab: WARNING: 10 ms was asked but 5 ms ran (backend nfqueue); ...",
        f"{BAND}\ntfolab: handshake/plain: TCPFastOpenActive +1, the model +0",
    ):
        with pytest.raises(AssertionError) as caught:
            timing_only(_done(1, stderr))
        assert not isinstance(caught.value, TimingMiss)
    with pytest.raises(AssertionError) as caught:
        timing_only(_done(2, "tfolab: --delay: not a number"))
    assert not isinstance(caught.value, TimingMiss)


def test_the_sentence_not_about_time_is_named_even_among_a_thousand_late_ones() -> None:
    late = "tfolab: transfer/long: connection 3, server: ACK seq 1 ack 17 len 1448 <TS> arrived "
    wrong = "tfolab: transfer/long: connection 2, client: window 461, the model 466"
    stderr = "\n".join(
        [wrong] + [f"{late}{i}.00 ms; the model said 1.00 ms ± 0.10" for i in range(1000)]
    )
    with pytest.raises(AssertionError, match="1 sentence\\(s\\) not about time:\n" + wrong):
        timing_only(_done(1, stderr))


def test_in_band_is_inclusive() -> None:
    assert_in_band(40.0, 40.0, 44.0, "x")
    assert_in_band(44.0, 40.0, 44.0, "x")
    with pytest.raises(TimingMiss, match=r"x: measured 44\.001 ms, outside \[40\.000, 44\.000\]"):
        assert_in_band(44.001, 40.0, 44.0, "x")


SUITE = """
from pathlib import Path
import pytest
from tests.conftest import TIMING
from tests.timing import TimingMiss

def _first(name):
    marker = Path(__file__).with_name(name)
    if marker.exists():
        return False
    marker.write_text("")
    return True

@TIMING
def test_timing():
    if _first("timing"):
        raise TimingMiss("stamp: measured 43.0 ms, outside [40.000, 42.000]")

@TIMING
def test_counter():
    if _first("counter"):
        raise AssertionError("TCPFastOpenActive +1, the model +2")

@TIMING
@pytest.mark.parametrize("n", range(N_MORE))
def test_more_timing(n):
    if _first(f"more{n}"):
        raise TimingMiss(f"miss {n}")
"""


def _run_suite(
    tmp_path: Path, more: int, require_real: bool, *args: str
) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_suite.py").write_text(SUITE.replace("N_MORE", str(more)))
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "TFOLAB_REQUIRE_REAL": "1" if require_real else "",
    }
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.reruns",
         "--rootdir", str(tmp_path), *args, str(tmp_path / "test_suite.py")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env,
    )  # fmt: skip


def test_only_a_timing_miss_is_rerun_and_each_rerun_is_named(tmp_path: Path) -> None:
    done = _run_suite(tmp_path, more=1, require_real=False)
    assert done.returncode == 1, done.stdout
    assert "1 failed, 2 passed, 2 rerun" in done.stdout
    assert "FAILED test_suite.py::test_counter" in done.stdout
    assert (
        "RERUN test_suite.py::test_timing: "
        "tests.timing.TimingMiss: stamp: measured 43.0 ms, outside [40.000, 42.000]"
    ) in done.stdout


@pytest.mark.parametrize("require_real", [False, True])
def test_ci_fails_when_reruns_exceed_the_budget(tmp_path: Path, require_real: bool) -> None:
    within, beyond = tmp_path / "within", tmp_path / "beyond"
    within.mkdir()
    beyond.mkdir()
    # test_timing and RERUN_BUDGET - 1 more: the budget exactly; then one more than it
    done = _run_suite(within, RERUN_BUDGET - 1, require_real, "-k", "not counter")
    assert done.returncode == 0, done.stdout
    assert f"{RERUN_BUDGET} rerun" in done.stdout and "exceed the budget" not in done.stdout
    done = _run_suite(beyond, RERUN_BUDGET, require_real, "-k", "not counter")
    assert (
        f"{RERUN_BUDGET + 1} passed" in done.stdout and f"{RERUN_BUDGET + 1} rerun" in done.stdout
    )
    if require_real:
        assert done.returncode == 1, done.stdout
        assert f"{RERUN_BUDGET + 1} reruns exceed the budget of {RERUN_BUDGET}" in done.stdout
    else:  # a user's machine: reruns are listed, never fatal
        assert done.returncode == 0, done.stdout


RECORDING = """
from tests.reruns import record

def test_a_fuzz_case(request):
    for n in range(N_REPEATS):
        record(
            request.node.nodeid,
            f"timing-only miss repeated (agreed the second time): case {n}",
            STOLEN_MS,
        )
"""


def _run_recording(
    tmp_path: Path, repeats: int, stolen_ms: float, require_real: bool
) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_recording.py").write_text(
        RECORDING.replace("N_REPEATS", str(repeats)).replace("STOLEN_MS", str(stolen_ms))
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "TFOLAB_REQUIRE_REAL": "1" if require_real else "",
    }
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.reruns",
         "--rootdir", str(tmp_path), str(tmp_path / "test_recording.py")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env,
    )  # fmt: skip


@pytest.mark.parametrize("require_real", [False, True])
def test_a_repeat_a_test_makes_itself_is_a_rerun_with_its_reason(
    tmp_path: Path, require_real: bool
) -> None:
    """The fuzzer repeats a timing-only miss itself (tests/fuzz/differential.run_judged):
    each repeat is listed in the reruns section and counts against the budget."""
    done = _run_recording(tmp_path, RERUN_BUDGET + 1, 0.0, require_real)
    n = RERUN_BUDGET + 1
    summary = f"reruns (timing or a held link): {n}, {n} counted, budget {RERUN_BUDGET}"
    assert summary in done.stdout
    assert (
        "RERUN test_recording.py::test_a_fuzz_case: "
        "timing-only miss repeated (agreed the second time): case 0"
    ) in done.stdout
    assert done.returncode == (1 if require_real else 0), done.stdout


def test_a_rerun_the_hypervisor_s_steal_explains_is_listed_but_not_counted(
    tmp_path: Path,
) -> None:
    """A missed run during which the host took the machine's CPUs (steal, which no
    thread's schedstat sees) is listed with that figure and left out of CI's budget."""
    done = _run_recording(tmp_path, RERUN_BUDGET + 2, 20.0, require_real=True)
    assert f"reruns (timing or a held link): {RERUN_BUDGET + 2}, 0 counted" in done.stdout
    assert "[the hypervisor took 20 ms: not counted]" in done.stdout
    assert done.returncode == 0, done.stdout

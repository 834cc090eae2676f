"""Every bad input to `tfolab bench` is refused before anything starts.

The same two proofs as test_nothing_starts.py (which covers `run`): in-process,
with every way to start the runner or a process replaced by a recorder that
fails (and a positive control that a good input reaches it); and as a process
under `strace -f -e execve`, which records any program the CLI starts.
"""

from __future__ import annotations

import resource
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.spawning import Spawned, run_traced
from tfolab import cli
from tfolab.lab import bench_plan

# (arguments after `bench`, what the one stderr line must contain)
CASES = [
    (["--requests", "0"], "--requests 0 is out of range"),
    (["--requests", "100001"], "--requests 100001 is out of range"),
    (["--requests", "many"], "invalid int value: 'many'"),
    (["--delays", "10,x"], "invalid delay 'x'"),
    (["--delays", "0,1000.5"], "delay '1000.5' is out of range"),
    (["--delays", "-1"], "delay '-1' is out of range"),
    (["--delays", ""], "is not a list of delays"),
    (["--delays", "1,,2"], "is not a list of delays"),
    (["--delays", "10,10"], "repeats a delay"),
    (["--delays", "10,600"], "600 ms is beyond the bench's prediction"),
    (["--concurrency", "0"], "--concurrency 0 is out of range"),
    (["--concurrency", "30000"], "more than the lab namespace's 28232 client ports"),
    (["--peer", "apache"], "invalid choice: 'apache'"),
]
IDS = [" ".join(args) or "(empty)" for args, _ in CASES]


def _refused(args: list[str], expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(args) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("tfolab: ") and expected in lines[0], lines[0]


@pytest.mark.parametrize(("args", "expected"), CASES, ids=IDS)
def test_refused_in_process_before_any_spawn(
    args: list[str],
    expected: str,
    spawns: list[object],
    capsys: pytest.CaptureFixture[str],
    cli_args: Callable[..., list[str]],
) -> None:
    _refused(cli_args("bench", *args), expected, capsys)
    assert spawns == []


def test_peer_nginx_refusal_says_how_to_get_it(
    spawns: list[object],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    cli_args: Callable[..., list[str]],
) -> None:
    monkeypatch.setattr(bench_plan, "find_nginx", lambda: None)
    assert cli.main(cli_args("bench", "--peer", "nginx")) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert "fix: install it (apt-get install nginx), or use --peer none" in line
    assert spawns == []


def test_concurrency_beyond_the_file_limit_is_refused(
    spawns: list[object],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    cli_args: Callable[..., list[str]],
) -> None:
    monkeypatch.setattr(bench_plan, "file_limit", lambda: 1024)
    needs = "needs 1025 open files, but this process may open 1024"
    _refused(cli_args("bench", "--concurrency", "1009"), needs, capsys)
    assert spawns == []


def test_peer_auto_without_nginx_says_so_in_one_line_and_runs(
    spawns: list[object],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    cli_args: Callable[..., list[str]],
) -> None:
    """The control: a good input reaches the runner; without nginx one line says so."""
    monkeypatch.setattr(bench_plan, "find_nginx", lambda: None)
    with pytest.raises(Spawned):
        cli.main(cli_args("bench", "--delays", "0", "--requests", "4"))
    assert len(spawns) == 1
    # The note first, then the progress lines (here: the one before the runner starts).
    line = capsys.readouterr().err.splitlines()[0]
    assert line == (
        "tfolab: nginx is not installed, so the bench runs without its peer; "
        "get it with `apt-get install nginx`"
    )
    job = spawns[0]
    assert getattr(job, "servers", None) == ("tfolab",)


def _lower_file_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


PROCESS_CASES = [
    *CASES,
    (["--concurrency", "250"], "needs 266 open files, but this process may open 256"),
]


@pytest.mark.parametrize(
    ("args", "expected"), PROCESS_CASES, ids=[" ".join(a) or "(empty)" for a, _ in PROCESS_CASES]
)
def test_refused_as_a_process_that_starts_nothing(
    args: list[str], expected: str, tmp_path: Path
) -> None:
    traced = run_traced(["bench", *args], tmp_path, preexec_fn=_lower_file_limit)
    done = traced.done
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("tfolab: ") and expected in lines[0]
    assert "Traceback" not in done.stderr and done.stdout == ""
    programs = traced.programs
    assert len(programs) == 1, programs  # only the CLI itself
    assert "tfolab.runner" not in traced.trace
    assert traced.elapsed_s < 60

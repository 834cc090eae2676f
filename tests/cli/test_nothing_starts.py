"""Every bad input to `tfolab run` is refused before the runner process exists.

Two independent proofs, neither of which touches the network:
- in-process: cli.main() with the runner's spawn points (tfolab.runner.client's
  stream_events and the asyncio subprocess call it makes) replaced by functions
  that record the call and fail; a positive control shows a good input does
  reach them, so the patch sits on the real path;
- as a process: `python -m tfolab run ...` under `strace -f -e execve`, which
  records any program the CLI starts (the runner is `python -m tfolab.runner`),
  without changing what the CLI can do.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.spawning import Spawned, run_traced
from tfolab import cli

GOOD_LAB = '[lab]\nname = "fine"\n\n[[scenario]]\nname = "a"\n'

# (arguments after `run`, what the one stderr line must contain)
CASES = [
    (["handshake", "--delay", "10xs"], "invalid delay '10xs'"),
    (["handshake", "--delay", "-1"], "delay '-1' is out of range"),
    (["handshake", "--delay", "1000.5"], "delay '1000.5' is out of range"),
    (["handshake", "--delay", "nan"], "out of range"),
    (["handshake", "--iterations", "0"], "--iterations 0 is out of range"),
    (["handshake", "--iterations", "10000000000000000000000"], "is out of range"),
    (["handshake", "--iterations", "many"], "invalid int value: 'many'"),
    (["handshake", "--set", "mtu=0"], "setting mtu must be 128 to 65536"),
    (["handshake", "--set", "request_bytes=1e8"], "request_bytes must be 1 to 1000000"),
    (["handshake", "--set", "request_bytes=0"], "request_bytes must be 1 to 1000000"),
    (["handshake", "--set", "nosuchkey=1"], "unknown setting 'nosuchkey'"),
    (["handshake", "--set", "nodelay=maybe"], "nodelay wants true or false"),
    (["handshake", "--set", "pattern=udp"], "pattern wants one of rr, wwr"),
    (["handshake", "--set", "pingpong_thresh=256"], "pingpong_thresh must be 1 to 255"),
    (["handshake", "--set", "server_fastopen_qlen=-1"], "server_fastopen_qlen must be 0"),
    (["handshake", "--set", "nodelay"], "is not KEY=VALUE"),
    (
        ["delack", "--set", "single_write=true", "--set", "msg_more=true", "--set", "mtu=128"],
        "single_write and msg_more do not combine",
    ),
    (["fastopen", "--set", "pattern=wwr"], "does not combine with pattern=wwr"),
    (["fastopen", "--set", "fastopen_sysctl=2"], "needs bit 0x1 in fastopen_sysctl"),
    (
        ["delack", "--set", "first_write_bytes=999999", "--set", "second_write_bytes=2"],
        "first_write_bytes + second_write_bytes must be at most 1000000",
    ),
    (["handshake", "--scenario", "nosuch"], "lab 'handshake' has no scenario 'nosuch'"),
    (["nosuchlab"], "unknown lab 'nosuchlab'"),
    (["handshake", "--backend", "bogus"], "invalid choice: 'bogus'"),
    (
        ["handshake", "--backend", "none", "--delay", "10"],
        "--backend none adds no delay: use --delay 0, or another backend",
    ),
    (["handshake", "--labs-dir", "/nonexistent/labs"], "/nonexistent/labs does not exist"),
    (["handshake", "--pcap", "/nonexistent/x.pcap"], "the folder /nonexistent does not exist"),
    (["handshake", "--pcap", "/"], "--pcap /: that is a folder"),
    (["handshake", "--plot", "--json"], "--json prints one JSON object: they do not combine"),
    (["handshake", "--plot-svg", "/"], "--plot-svg /: that is a folder"),
    (["handshake", "--plot-svg", "/nonexistent/g.svg"], "the folder /nonexistent does not exist"),
]
IDS = [" ".join(args) for args, _ in CASES]


@pytest.mark.parametrize(("args", "expected"), CASES, ids=IDS)
def test_refused_in_process_before_any_spawn(
    args: list[str],
    expected: str,
    spawns: list[object],
    capsys: pytest.CaptureFixture[str],
    cli_args: Callable[..., list[str]],
) -> None:
    assert cli.main(cli_args("run", *args)) == 2
    out, err = capsys.readouterr()
    assert spawns == []
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("tfolab: ")
    assert expected in lines[0]


def test_a_good_input_does_reach_the_patched_spawn(
    spawns: list[object], cli_args: Callable[..., list[str]]
) -> None:
    """The control: without it, a patch on the wrong function would prove nothing."""
    args = ("run", "handshake", "--delay", "0", "--backend", "none", "--iterations", "1")
    with pytest.raises(Spawned):
        cli.main(cli_args(*args))
    assert len(spawns) == 1


def test_a_broken_lab_is_refused_before_any_spawn(
    tmp_path: Path,
    spawns: list[object],
    capsys: pytest.CaptureFixture[str],
    cli_args: Callable[..., list[str]],
) -> None:
    (tmp_path / "fine.toml").write_text(GOOD_LAB)
    (tmp_path / "broken.toml").write_text(GOOD_LAB.replace("fine", "broken") + "mtu = 0\n")
    assert cli.main(cli_args("run", "broken", "--labs-dir", str(tmp_path))) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert f"{tmp_path / 'broken.toml'}:6: scenario 'a': setting mtu must be" in line
    assert spawns == []


@pytest.mark.parametrize(("args", "expected"), CASES, ids=IDS)
def test_refused_as_a_process_that_starts_nothing(
    args: list[str], expected: str, tmp_path: Path
) -> None:
    traced = run_traced(["run", *args], tmp_path)
    done, elapsed = traced.done, traced.elapsed_s
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("tfolab: ") and expected in lines[0]
    assert "Traceback" not in done.stderr and done.stdout == ""
    programs = traced.programs
    # Only the CLI itself: no runner (`python -m tfolab.runner`), no tc, no server.
    assert len(programs) == 1, programs
    assert "tfolab.runner" not in traced.trace
    # A refusal is startup plus parsing; a runner's namespace and delay come later.
    assert elapsed < 60, elapsed

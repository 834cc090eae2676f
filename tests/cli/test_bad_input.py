"""Bad input gets one clear line, exit code 2, and no traceback."""

from __future__ import annotations

import pytest

from tests.conftest import run_tfolab

CASES = [
    (["simulate", "handshake", "--delay", "10xs"], "invalid delay '10xs'"),
    (["simulate", "handshake", "--delay", "-1"], "out of range"),
    (["run", "handshake", "--delay", "-1"], "out of range"),
    (["run", "handshake", "--delay", "10xs"], "invalid delay"),
    (["simulate", "nosuchlab"], "unknown lab 'nosuchlab'"),
    (["run", "nosuchlab"], "unknown lab 'nosuchlab'"),
    (["simulate", "fastopen", "--scenario", "nope"], "has no scenario 'nope'"),
    (["simulate", "delack", "--set", "nodelay=maybe"], "wants true or false"),
    (["simulate", "delack", "--set", "frobnicate=1"], "unknown setting 'frobnicate'"),
    (["simulate", "delack", "--set", "nodelay"], "is not KEY=VALUE"),
    (["run", "delack", "--iterations", "0"], "out of range"),
    (["run", "delack", "--backend", "bogus"], "invalid choice"),
    (["frobnicate"], "invalid choice"),
    (["doctor", "--bogus"], "unrecognized arguments"),
]


@pytest.mark.parametrize(("args", "expected"), CASES, ids=[" ".join(a) for a, _ in CASES])
def test_bad_input_is_one_line_exit_2(args: list[str], expected: str) -> None:
    done = run_tfolab(*args, timeout=60)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("tfolab: ")
    assert expected in lines[0]
    assert "Traceback" not in done.stderr
    assert done.stdout == ""

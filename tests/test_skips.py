"""Every skip in the suite is either an environment need (tests/environment.py, a
failure under TFOLAB_REQUIRE_REAL) or one of the few listed here with why it may stay.

A new `pytest.skip`, `skipif` or `importorskip` anywhere else fails this test: route
it through `require_or_skip`, or add it below with the reason it is not about
what CI's machine provides.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent

# file -> how many plain skips it may hold, and why they are not environment skips
ALLOWED = {
    "environment.py": (1, "the one place an environment skip happens"),
    "runner/test_backend_choice.py": (1, "needs a kernel WITHOUT netem: about the subject"),
    "runner/test_capture.py": (1, "needs packet sockets to be refused: about the subject"),
    "runner/test_autogroup.py": (1, "scheduler autogroups: a kernel option CI may lack"),
    "serve/test_serve_autogroup.py": (1, "scheduler autogroups: a kernel option CI may lack"),
    "runner/test_cpus.py": (1, "needs two CPUs to keep one free: CI's size, not its software"),
    "serve/test_serve_probe.py": (1, "its seccomp filter knows x86_64 and aarch64 only"),
}
SKIPS = {"skip", "skipif", "importorskip"}


def _skips(path: Path) -> int:
    found = 0
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr in SKIPS:
            base = node.value
            names = {getattr(base, "id", ""), getattr(base, "attr", "")}
            found += bool(names & {"pytest", "mark"})
    return found


def test_every_skip_is_an_environment_need_or_listed() -> None:
    counted = {
        str(path.relative_to(TESTS)): n
        for path in sorted(TESTS.rglob("*.py"))
        if (n := _skips(path))
    }
    assert counted == {name: n for name, (n, _why) in ALLOWED.items()}

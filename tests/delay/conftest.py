"""Fixtures for the tfo-delay tests: the binary, and a machine that can run it.

The binary is the installed package's ``tfolab/_native/tfo-delay`` when there
is one (preferred: it is what the runner uses), else native/delay/*.c (with
the shared argument parser, native/src/cli/args.c) compiled with the system cc
into a temporary directory, with the project's warning flags.  Tests that
need root, network namespaces and NFQUEUE ask for ``nfqueue_netns`` and are
skipped with the reason elsewhere.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.environment import require_or_skip

HERE = Path(__file__).resolve().parent
NATIVE = HERE.parent.parent / "native"
SOURCE = NATIVE / "delay" / "tfo_delay.c"  # main(); the other files sit beside it
ARGS_DIR = NATIVE / "src" / "cli"  # args.c, args.h: the parser all executables share
SCENARIOS = HERE / "ns_scenarios.py"
WARNINGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-Wshadow"]


def installed_binary() -> str | None:
    try:
        from importlib.resources import files

        candidate = files("tfolab._native") / "tfo-delay"
    except (ImportError, TypeError):
        return None
    path = str(candidate)
    return path if candidate.is_file() and os.access(path, os.X_OK) else None


def compile_binary(out: Path, *flags: str) -> str:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        require_or_skip("C compiler", "tfo-delay is not installed and there is none to build it")
    if not SOURCE.is_file():
        require_or_skip("tfo-delay", f"not installed and {SOURCE} is not here to build it")
    sources = [*sorted(SOURCE.parent.glob("*.c")), ARGS_DIR / "args.c"]
    build = subprocess.run(
        [compiler, *WARNINGS, *flags, f"-I{ARGS_DIR}", "-o", str(out), *map(str, sources)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert build.returncode == 0, f"compiling tfo-delay failed:\n{build.stderr}"
    return str(out)


@pytest.fixture(scope="session")
def tfo_delay(tmp_path_factory: pytest.TempPathFactory) -> str:
    return installed_binary() or compile_binary(
        tmp_path_factory.mktemp("tfo-delay") / "tfo-delay", "-O2"
    )


@pytest.fixture(scope="session")
def tfo_delay_sanitized(tmp_path_factory: pytest.TempPathFactory) -> str:
    return compile_binary(
        tmp_path_factory.mktemp("tfo-delay-asan") / "tfo-delay",
        "-O1",
        "-g",
        "-fno-omit-frame-pointer",
        "-fsanitize=address,undefined",
        "-fno-sanitize-recover=undefined",
    )


@pytest.fixture(scope="session")
def nfqueue_netns(tfo_delay: str) -> None:
    """Root, unshare and an NFQUEUE rule in a throwaway namespace, or skip."""
    if os.geteuid() != 0:
        require_or_skip("root", "network namespaces and NFQUEUE need it")
    if shutil.which("unshare") is None:
        require_or_skip("unshare", "util-linux unshare makes the network namespace")
    probe = subprocess.run(
        ["unshare", "--net", "--", "true"], capture_output=True, text=True, timeout=30
    )
    if probe.returncode != 0:
        require_or_skip("network namespaces", probe.stderr.strip())
    done = run_in_netns("probe", tfo_delay, timeout=30, check=False)
    if not done.get("ready"):
        reason = done.get("stderr", "").strip() or done.get("error", "") or str(done)[:300]
        require_or_skip("NFQUEUE", f"no NFQUEUE delay in a namespace: {reason}")


def run_in_netns(
    scenario: str,
    binary: str,
    *args: str,
    timeout: float = 60,
    check: bool = True,
    env: dict[str, str] | None = None,
) -> dict:
    """Run one ns_scenarios.py scenario in a fresh network namespace; its JSON."""
    done = subprocess.run(
        [
            "unshare",
            "--net",
            "--",
            sys.executable,
            str(SCENARIOS),
            scenario,
            "--binary",
            binary,
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    if not check and done.returncode != 0:
        return {"error": done.stderr.strip()[-500:]}
    assert done.returncode == 0, f"scenario {scenario} failed:\n{done.stderr[-2000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])

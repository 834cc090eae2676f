"""Helpers of the native tests: start the built server, read TcpExt counters.

Rules: every subprocess has a timeout and is always reaped; the server is found
through tfolab.core.native.executable_path, exactly as the runner finds it.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tfolab.core import native

SANITIZER_MARKERS = ("Sanitizer", "runtime error:", "LeakSanitizer")
TIMEOUT_S = 20


@contextlib.contextmanager
def echo_server(
    *flags: str, executable: Path | None = None, env: dict[str, str] | None = None
) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """Start tfo-echo-server --port 0 FLAGS, wait for READY, stop it on exit."""
    exe = executable or native.executable_path("tfo-echo-server")
    process = subprocess.Popen(
        [str(exe), "--port", "0", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            ready = selector.select(10)
        line = process.stdout.readline().split() if ready else []
        if len(line) != 2 or line[0] != "READY":
            process.kill()
            _, err = process.communicate(timeout=TIMEOUT_S)
            raise AssertionError(f"no READY line from the server: {line} {err}")
        yield process, int(line[1])
    finally:
        stop(process)


def stop(process: subprocess.Popen[str]) -> tuple[int, str]:
    """SIGTERM, wait (bounded), return the exit code and what is left on stderr."""
    if process.poll() is None:
        process.terminate()
    try:
        _, err = process.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        _, err = process.communicate(timeout=TIMEOUT_S)
    return process.returncode, err or ""


def run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT_S, env=env)


def client_json(*flags: str, executable: Path | None = None) -> dict[str, Any]:
    exe = executable or native.executable_path("tfo-echo-client")
    done = run([str(exe), "--json", *flags])
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def tcpext() -> dict[str, int]:
    """TcpExt counters of the current network namespace."""
    lines = Path("/proc/net/netstat").read_text().splitlines()
    counters: dict[str, int] = {}
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        if names.startswith("TcpExt:"):
            pairs = zip(names.split()[1:], values.split()[1:], strict=True)
            counters.update({name: int(value) for name, value in pairs})
    return counters


def no_sanitizer_report(stderr: str) -> bool:
    return not any(marker in stderr for marker in SANITIZER_MARKERS)


def environ_with(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    return env

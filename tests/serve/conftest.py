"""`tfolab serve` started for real, as a test would by hand: its own process, its printed URL.

As root it drops to nobody, so it is started with a Python nobody can run
(tests/unprivileged.py); as anyone else it runs as that user.
"""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.served_slots import slots_by_flag

ROOT = Path(__file__).resolve().parents[2]
READY = "Ctrl+C stops serving"


@dataclass
class Served:
    process: subprocess.Popen[str]
    url: str
    output: list[str] = field(default_factory=list)

    @property
    def port(self) -> int:
        match = re.search(r":(\d+)/", self.url)
        assert match, self.url
        return int(match.group(1))

    @property
    def token(self) -> str | None:
        match = re.search(r"token=([A-Za-z0-9_-]+)", self.url)
        return match.group(1) if match else None

    def local_url(self, query: str = "") -> str:
        return f"http://127.0.0.1:{self.port}/{query}"

    def ws_url(self, query: str = "width=100&height=30", host: str = "127.0.0.1") -> str:
        """The websocket address with the token, as a page with the cookie would reach it."""
        token = f"token={self.token}&" if self.token else ""
        return f"ws://{host}:{self.port}/ws?{token}{query}"

    def stop(self) -> str:
        """SIGTERM, wait, and everything it printed."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            rest, _ = self.process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            rest, _ = self.process.communicate()
        return "\n".join(self.output) + "\n" + rest


def _line(process: subprocess.Popen[str], deadline: float) -> str | None:
    """One line of its output by `deadline` (unbuffered: select sees what read leaves)."""
    assert process.stdout is not None
    fd = process.stdout.fileno()
    data = b""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while not data.endswith(b"\n"):
            if not selector.select(max(deadline - time.monotonic(), 0)):
                return None
            byte = os.read(fd, 1)
            if not byte:
                return None
            data += byte
    return data.decode(errors="replace").rstrip("\n")


@pytest.fixture
def serve(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator:
    started: list[Served] = []
    python = sys.executable
    if os.geteuid() == 0:
        python = request.getfixturevalue("nobody_python")

    def start(
        *args: str,
        env: dict[str, str] | None = None,
        as_a_shell_job: bool = False,
        wrap: tuple[str, ...] = (),
    ) -> Served:
        """`tfolab serve --port 0 ARGS`, started by `wrap` (a command that execs the rest)."""
        command, environment = slots_by_flag(
            ["serve", "--port", "0", *args], dict(os.environ, **(env or {}))
        )
        process = subprocess.Popen(
            [*wrap, python, "-m", "tfolab", *command],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=ROOT,
            env=environment,
            process_group=0 if as_a_shell_job else None,  # a shell makes each job a group
        )
        served = Served(process, "")
        started.append(served)
        deadline = time.monotonic() + 60
        assert process.stdout is not None
        while READY not in "\n".join(served.output):
            line = _line(process, deadline)
            if line is None:
                raise AssertionError(f"serve did not start: {served.output}")
            served.output.append(line)
        match = re.search(r"open (http://\S+)", "\n".join(served.output))
        assert match, served.output
        served.url = match.group(1)
        return served

    yield start
    for served in started:
        served.stop()

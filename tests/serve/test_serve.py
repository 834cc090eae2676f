"""`tfolab serve` for real: the token, never root on the web side, bad input, a stop
that leaves nothing behind.

Everything here talks to a real server process over 127.0.0.1; the sessions are
real tfolab UI processes started by textual-serve.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import pytest

from tests.cli.spawning import run_traced
from tests.environment import require_or_skip

ROOT = Path(__file__).resolve().parents[2]


async def _get(url: str, follow: bool = True) -> tuple[int, str, dict[str, str]]:
    jar = aiohttp.CookieJar(unsafe=True)  # cookies for an IP address too, as a browser keeps
    async with (
        aiohttp.ClientSession(cookie_jar=jar) as http,
        http.get(url, allow_redirects=follow) as response,
    ):
        return response.status, await response.text(), dict(response.headers)


async def _websocket_status(url: str) -> int:
    async with aiohttp.ClientSession() as http:
        try:
            async with http.ws_connect(url):
                return 101
        except aiohttp.WSServerHandshakeError as err:
            return err.status


async def test_a_classroom_address_needs_the_token(serve) -> None:
    served = serve("--host", "0.0.0.0")
    token = served.token
    assert token is not None and len(token) >= 16, served.url  # generated and printed
    status, body, _ = await _get(served.local_url())
    assert status == 403 and body.startswith("403")
    assert (await _get(served.local_url("?token=wrong-token-here")))[0] == 403
    assert (await _get(served.local_url("static/js/textual.js")))[0] == 403
    assert await _websocket_status(served.local_url("ws").replace("http", "ws")) == 403
    status, _, headers = await _get(served.local_url(f"?token={token}"), follow=False)
    assert status == 303 and "tfolab_token=" in headers.get("Set-Cookie", "")
    status, body, _ = await _get(served.local_url(f"?token={token}"))  # the cookie, then /
    assert status == 200 and "textual-terminal" in body
    everything = served.stop()
    # once, in the URL it printed; the access log has the requests but never the token
    assert everything.count(token) == 1, everything
    assert '"GET /" 403' in everything and '"GET /" 200' in everything


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


async def test_started_as_root_the_sessions_run_as_the_unprivileged_user(serve) -> None:
    if os.geteuid() != 0:
        require_or_skip("root", "it checks what serve drops to")
    served = serve("--user", "nobody")
    assert "sessions run as nobody" in "\n".join(served.output)
    ws_url = served.ws_url()
    async with aiohttp.ClientSession() as http, http.ws_connect(ws_url) as websocket:
        deadline = time.monotonic() + 30
        received = 0
        while received < 2000 and time.monotonic() < deadline:  # the UI drew its first screen
            message = await asyncio.wait_for(websocket.receive(), 30)
            if message.type == aiohttp.WSMsgType.BINARY:
                received += len(message.data)
        assert received >= 2000
        processes = [served.process.pid, *_descendants(served.process.pid)]
        ps = subprocess.run(
            ["ps", "-o", "user=,args=", "-p", ",".join(map(str, processes))],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
        users = {line.split(None, 1)[0] for line in ps}
        assert users == {"nobody"}, ps
        assert any(line.rstrip().endswith("-m tfolab") for line in ps), ps  # a session's UI


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (("--token", "short"), "--token puts the class's token where every user"),
        (("--token", "a-good-token-1234"), "give --token-file FILE, or set $TFOLAB_SERVE_TOKEN"),
        (("--user", "no-such-user-here"), "there is no user"),
        (("--user", "root"), "is root"),
        (("--port", "70000"), "out of range"),
        (("--results", "/etc/hostname"), "is not a folder"),
        (("--results", "/no/such/folder/here"), "does not exist"),
        (("--host", "no.such.host.invalid"), "--host"),
    ],
)
def test_bad_input_is_one_line_and_starts_nothing(
    args: tuple[str, ...], reason: str, tmp_path: Path
) -> None:
    traced = run_traced(["serve", *args], tmp_path)  # strace -f: every program it starts
    done = traced.done
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("tfolab: ") and reason in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stdout == ""
    assert len(traced.programs) == 1, traced.programs  # only the CLI itself, no session
    assert "a-good-token" not in done.stderr  # a refused token is not printed either


def test_serve_is_listed_in_help() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tfolab", "serve", "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0 and "--results" in done.stdout and "--token-file" in done.stdout
    assert "--token " not in done.stdout  # refused, so not offered


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
@pytest.mark.parametrize("when", ["the moment it is ready", "while it serves"])
def test_a_stop_signal_removes_the_sessions_folder(serve, signum: int, when: str) -> None:
    """Stopped by a service manager (SIGTERM) or a closed terminal (SIGHUP), right after
    it printed its URL (before its server handles the signal) or later: it exits 0 and
    its private folder is gone. Before the fix 7 SIGTERMs in 8 at the first moment killed
    it and left the folder in /tmp, and so did every SIGHUP."""
    folders = Path(tempfile.gettempdir())
    for _ in range(3):
        before = set(folders.glob("tfolab-serve-*"))
        served = serve()
        if when == "while it serves":
            status, _, _ = asyncio.run(_get(served.local_url(f"?token={served.token}")))
            assert status == 200
        served.process.send_signal(signum)
        assert served.process.wait(timeout=30) == 0, served.output
        assert set(folders.glob("tfolab-serve-*")) <= before

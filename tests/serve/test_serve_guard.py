"""Attacks on `tfolab serve`'s front door, against a real server on 127.0.0.1: each refused.

- a cookie that is not text (`tfolab_token=\\xff`): a plain 403 at once, no traceback
  and no token in the log (it used to print the traceback with its locals, ~140 ms);
- escape sequences and fake log lines in the request path: escaped in the log;
- loopback without the token, from a second local user, from another site's page
  (Origin), under a DNS rebinding name (Host): refused;
- the token from the environment or a file, never in `ps`; the page opened with
  the token redirects to an address without it; no Referrer.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from tests.conftest import run_tfolab
from tests.serve.test_serve_autogroup import _sessions

ROOT = Path(__file__).resolve().parents[2]
AS_DAEMON = (sys.executable, "-m", "tests.as_user", "daemon")  # a second local user


async def _raw(port: int, request: bytes) -> tuple[int, bytes]:
    """One raw HTTP/1.1 request (any bytes), its status and whole response."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), 30)
    writer.close()
    return int(data.split(b" ", 2)[1]), data


def _get_raw(path: bytes, *headers: bytes) -> bytes:
    extra = b"".join(h + b"\r\n" for h in headers)
    return (
        b"GET " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + extra + b"\r\n"
    )


async def _ws_status(url: str, **kwargs: object) -> int:
    async with aiohttp.ClientSession() as http:
        try:
            async with http.ws_connect(url, **kwargs):  # type: ignore[arg-type]
                return 101
        except aiohttp.WSServerHandshakeError as err:
            return err.status


async def test_a_cookie_that_is_not_text_is_refused_quietly(serve) -> None:
    served = serve()
    token = served.token
    assert token is not None
    for _ in range(10):
        status, body = await _raw(served.port, _get_raw(b"/", b"Cookie: tfolab_token=\xff"))
        assert status == 403 and body.rstrip().endswith(b"open the address `tfolab serve` printed.")
    for query in (b"/?token=%ff", b"/?token=%ed%b3%bf", b"/?token=" + b"A" * 5000):
        assert (await _raw(served.port, _get_raw(query)))[0] in (403, 400, 414, 431)
    # each refusal costs what a refusal costs: no traceback rendered (that took ~140 ms)
    everything = served.stop()
    assert everything.count(token) == 1, everything  # only in the printed address
    assert "Traceback" not in everything and "locals" not in everything.lower()
    assert everything.count('"GET /" 403') >= 10


async def test_escape_sequences_in_the_path_reach_the_log_escaped(serve) -> None:
    served = serve()
    hostile = (
        b"/%1b%5b2J%1b%5d0;owned%07%0d%0a127.0.0.1%20%22GET%20/admin%22%20200%c2%9b31m%e2%80%ae"
    )
    assert (await _raw(served.port, _get_raw(hostile)))[0] == 403
    raw_escape = b"/\x1b[31mred"  # unencoded: refused by the parser or logged escaped
    await _raw(served.port, _get_raw(raw_escape))
    everything = served.stop()
    assert not any(c in everything for c in "\x1b\x07\r\x9b\u202e"), repr(everything)
    (line,) = [line for line in everything.splitlines() if "owned" in line]
    assert line.startswith(
        '127.0.0.1 "GET /\\x1b[2J\\x1b]0;owned\\x07\\x0d\\x0a127.0.0.1 "GET /admin"'
    )
    assert "\\x9b31m\\u202e" in line and line.endswith(" ms")


async def test_loopback_needs_the_token_from_anyone(serve) -> None:
    served = serve()  # 127.0.0.1, no flags: a token is made all the same
    assert served.url.startswith("http://127.0.0.1:") and served.token
    async with aiohttp.ClientSession() as http:
        async with http.get(served.local_url()) as response:
            assert response.status == 403
        assert await _ws_status(served.local_url("ws").replace("http", "ws")) == 403


async def test_another_local_user_needs_the_token_on_loopback(root, serve) -> None:
    served = serve()  # as root, serve runs as nobody; the request comes from daemon
    other = subprocess.run(
        [*AS_DAEMON, "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", served.local_url()],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert other.stdout == "403", other


async def test_another_sites_page_and_a_rebinding_name_are_refused(serve) -> None:
    served = serve()
    port = served.port
    # A page on another site opening our websocket: the browser sends its Origin.
    for origin in ("http://evil.example", f"http://127.0.0.1:{port + 1}", "null"):
        assert await _ws_status(served.ws_url(), origin=origin) == 403
    assert await _ws_status(served.ws_url(), origin=f"http://127.0.0.1:{port}") == 101
    # DNS rebinding: evil.example resolved to 127.0.0.1, the Host header still says evil.
    for host in (b"evil.example", b"evil.example:%d" % port, b"localhost.evil.example"):
        request = _get_raw(f"/?token={served.token}".encode()).replace(
            b"Host: 127.0.0.1", b"Host: " + host
        )
        status, body = await _raw(port, request)
        assert status == 421 and b"--allow-host" in body
    for host in (b"localhost:%d" % port, b"[::1]:%d" % port, b"127.0.0.1"):
        request = _get_raw(f"/?token={served.token}".encode())
        assert (await _raw(port, request.replace(b"127.0.0.1", host, 1)))[0] == 303


async def test_the_token_leaves_the_address_bar_and_is_never_a_referrer(serve) -> None:
    served = serve()
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        url = served.local_url(f"?token={served.token}&fontsize=20")
        async with http.get(url, allow_redirects=False) as response:
            assert response.status == 303
            assert response.headers["Location"] == "/?fontsize=20"
            assert response.headers["Referrer-Policy"] == "no-referrer"
            assert "HttpOnly" in response.headers["Set-Cookie"]
        async with http.get(served.local_url("?fontsize=20")) as response:  # the cookie
            assert response.status == 200 and "textual-terminal" in await response.text()
            assert response.headers["Referrer-Policy"] == "no-referrer"
        async with http.get(served.local_url("static/js/textual.js")) as response:
            assert response.status == 200
            assert response.headers["Referrer-Policy"] == "no-referrer"


def _command_lines(served) -> list[bytes]:  # type: ignore[no-untyped-def]
    """What every user reads of serve and its processes: /proc/PID/cmdline of each."""
    from tests.serve.test_serve import _descendants

    lines = []
    for pid in (served.process.pid, *_descendants(served.process.pid)):
        with contextlib.suppress(OSError):
            lines.append(Path(f"/proc/{pid}/cmdline").read_bytes())
    return lines


async def test_the_token_from_the_environment_or_a_file_is_not_in_ps(serve, tmp_path) -> None:
    """Another user reads every process's arguments (/proc/PID/cmdline, `ps`): the token is
    in none of serve's or its sessions', from either source, and --token is refused."""
    secret = "from-the-environment-1234"
    served = serve(env={"TFOLAB_SERVE_TOKEN": secret})
    assert served.token == secret
    async with aiohttp.ClientSession() as http, http.ws_connect(served.ws_url()) as websocket:
        await websocket.receive()
        # A session's processes run as the session's user, who may read their
        # environment: the variable must not reach them.
        (session,) = _sessions(served.process.pid)
        environment = Path(f"/proc/{session}/environ").read_bytes()
        assert b"TFOLAB_SESSION_ID=" in environment
        assert secret.encode() not in environment
        lines = _command_lines(served)
        assert len(lines) >= 2 and not any(secret.encode() in line for line in lines), lines
    ps = subprocess.run(["ps", "-eo", "args="], capture_output=True, text=True).stdout
    assert secret not in ps
    file = tmp_path / "token"
    file.write_text("from-a-file-5678\n")
    file.chmod(0o644)
    done = run_tfolab("serve", "--token-file", str(file), timeout=60)
    assert done.returncode == 2 and "may be read by others" in done.stderr, done.stderr
    assert done.stdout == ""
    file.chmod(0o600)
    served = serve("--token-file", str(file))
    assert served.token == "from-a-file-5678"
    async with aiohttp.ClientSession() as http, http.ws_connect(served.ws_url()) as websocket:
        await websocket.receive()
        lines = _command_lines(served)
        assert len(lines) >= 2 and not any(b"from-a-file-5678" in line for line in lines)
    done = run_tfolab("serve", "--port", "0", "--token", "on-the-command-line-1", timeout=60)
    assert done.returncode == 2 and "--token-file" in done.stderr, done.stderr
    assert "on-the-command-line-1" not in done.stderr + done.stdout


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (("--token-file", "/no/such/file"), "--token-file"),
        (("--token-file", "/dev/zero"), "not a regular file"),
        (("--allow-host", "evil example"), "not a host name"),
    ],
)
def test_bad_token_sources_are_one_line(args: tuple[str, ...], reason: str) -> None:
    done = run_tfolab("serve", *args, timeout=60)
    assert done.returncode == 2 and reason in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stdout == ""

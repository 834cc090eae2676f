"""The class is bounded, against a real server: sessions in all and per client (a 300-tab
script included), idle sessions closed, each session's memory and the class's processes
limited, and what a browser sends about its terminal clamped. Clients from other
addresses are real connections from 127.0.0.2, 127.0.0.3, ... (all of 127/8 is loopback).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
import time
from pathlib import Path

import aiohttp
import pytest

from tests.conftest import run_tfolab
from tests.serve.conftest import _line
from tests.serve.test_serve_autogroup import _sessions
from tfolab.tui.web_log import REFUSED_BURST, REFUSED_PER_S
from tfolab.tui.web_sessions import CLOSED_IDLE, MAX_COLS, MAX_ROWS, MIN_COLS, MIN_ROWS


def _from(address: str) -> aiohttp.ClientSession:
    """A client whose connections come from `address`, keeping cookies as a browser does."""
    connector = aiohttp.TCPConnector(local_addr=(address, 0), limit=0)
    return aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.CookieJar(unsafe=True))


async def _ws_status(http: aiohttp.ClientSession, url: str) -> int:
    try:
        async with http.ws_connect(url):
            return 101
    except aiohttp.WSServerHandshakeError as err:
        return err.status


async def _page(http: aiohttp.ClientSession, served) -> tuple[int, str]:
    async with http.get(served.local_url(f"?token={served.token}")) as response:
        return response.status, await response.text()


async def _until(condition, timeout: float = 30.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await condition():
            return True
        await asyncio.sleep(0.2)
    return False


async def test_the_class_is_full_in_all_and_per_client(serve) -> None:
    served = serve("--max-sessions", "2", "--max-per-client", "1")
    url = served.ws_url()
    async with _from("127.0.0.1") as first, _from("127.0.0.2") as second:
        one = await first.ws_connect(url)
        assert await _ws_status(first, url) == 503  # a second tab from the same computer
        status, body = await _page(first, served)
        assert status == 503 and "The class is full" in body and "1 tfolab tabs" in body
        two = await second.ws_connect(url)  # another computer still gets in
        async with _from("127.0.0.3") as third, _from("127.0.0.4") as script:
            status, body = await _page(third, served)
            assert status == 503 and "All 2 places" in body
            # A script with the token opening 300 tabs at once: every one refused, nothing started.
            started = time.monotonic()
            tabs = await asyncio.gather(*(_ws_status(script, url) for _ in range(300)))
            assert tabs == [503] * 300, sorted(set(tabs))
            assert time.monotonic() - started < 30
            assert len(_sessions(served.process.pid)) == 2
        await one.close()  # a place is free again once that session has stopped

        async def first_gets_the_page() -> bool:
            return (await _page(first, served))[0] == 200

        assert await _until(first_gets_the_page)
        await two.close()


async def test_an_idle_session_is_closed_and_its_place_freed(serve) -> None:
    served = serve("--idle-minutes", "0.05", "--max-per-client", "2")  # 3 s
    async with _from("127.0.0.1") as http:
        idle = await http.ws_connect(served.ws_url())
        busy = await http.ws_connect(served.ws_url())
        started = time.monotonic()
        while not idle.closed and time.monotonic() - started < 30:
            await busy.send_json(["resize", {"width": 100, "height": 30}])  # someone is there
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(idle.receive(), 1.0)
        assert idle.closed and idle.close_code == CLOSED_IDLE
        assert 3 <= time.monotonic() - started < 30
        assert not busy.closed

        async def one_left() -> bool:
            return len(_sessions(served.process.pid)) == 1

        assert await _until(one_left)
        await busy.close()


def _limits(pid: int) -> dict[str, str]:
    found = {}
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines()[1:]:
        name, soft = re.split(r"\s{2,}", line.strip())[:2]
        found[name] = soft
    return found


async def test_each_session_runs_under_memory_and_process_limits(serve) -> None:
    served = serve("--session-memory-mb", "1024", "--max-sessions", "3")
    async with _from("127.0.0.1") as http, http.ws_connect(served.ws_url()) as websocket:
        await websocket.receive()
        (session,) = _sessions(served.process.pid)
        limits = _limits(session)
        assert limits["Max address space"] == str(1024 * 1024 * 1024)
        processes = limits["Max processes"]
        assert processes != "unlimited" and int(processes) >= 3 * 64, limits
        assert _limits(served.process.pid)["Max address space"] == "unlimited"  # serve's own


async def test_what_a_browser_says_about_its_terminal_is_bounded(serve) -> None:
    served = serve()
    async with _from("127.0.0.1") as http:
        url = served.ws_url("width=100000000000000000000&height=-5")
        async with http.ws_connect(url) as websocket:
            await websocket.receive()
            (session,) = _sessions(served.process.pid)
            environment = Path(f"/proc/{session}/environ").read_bytes().split(b"\0")
            assert f"COLUMNS={MAX_COLS}".encode() in environment
            assert f"ROWS={MIN_ROWS}".encode() in environment
            for hostile in (
                "not json",
                "[]",
                '{"stdin": 1}',
                '["resize", {"width": 1e400, "height": "x"}]',
                '["resize", "wide"]',
                '["stdin", "\\ud800"]',
                '["ping", "' + "p" * 1000 + '"]',
            ):
                await websocket.send_str(hostile)
            await websocket.send_json(["resize", {"width": 10**9, "height": 10**9}])
            await asyncio.sleep(1)
            assert not websocket.closed
            await websocket.send_str("x" * (1024 * 1024))  # beyond the message bound: closed
            while not websocket.closed:
                await asyncio.wait_for(websocket.receive(), 30)
        assert (await _page(http, served))[0] == 200  # the server carries on
    everything = served.stop()
    assert "Traceback" not in everything and "error" not in everything.lower(), everything


CURSOR_TO = re.compile(rb"\x1b\[(\d+);(\d+)H")  # where a piece of the screen is drawn
NOT_DRAWN = re.compile(rb"\x1b\[[0-9;?$]*[A-Za-z~]|\x1b\][^\x07]*\x07")


def drawn_size(output: bytes) -> tuple[int, int]:
    """The columns and rows a session's screen covers, from what it drew: the furthest
    column and row any piece reaches (Textual draws every line at a cursor position)."""
    cols = rows = 0
    pieces = CURSOR_TO.split(output)
    for at in range(1, len(pieces) - 2, 3):
        row, col = int(pieces[at]), int(pieces[at + 1])
        text = NOT_DRAWN.sub(b"", pieces[at + 2].split(b"\n")[0]).decode(errors="replace")
        rows, cols = max(rows, row), max(cols, col + len(text) - 1)
    return cols, rows


async def _drawn(websocket: aiohttp.ClientWebSocketResponse, quiet_s: float = 1.5) -> bytes:
    """What the session draws from now until it has been quiet for `quiet_s` (at most 30 s)."""
    output, deadline = b"", time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            message = await asyncio.wait_for(websocket.receive(), quiet_s)
        except TimeoutError:
            if output:
                break
            continue
        if message.type == aiohttp.WSMsgType.BINARY:
            output += message.data
        elif message.type != aiohttp.WSMsgType.TEXT:
            break
    return output


async def test_the_terminal_a_session_draws_is_clamped(serve) -> None:
    """A terminal size out of range, in the address or in a resize message, reaches the
    session clamped: the screen it draws covers the clamped size (a normal size, as asked)."""
    served = serve("--max-per-client", "2")
    async with _from("127.0.0.1") as http:
        async with http.ws_connect(served.ws_url("width=5&height=3"), max_msg_size=0) as tiny:
            assert drawn_size(await _drawn(tiny)) == (MIN_COLS, MIN_ROWS)
            for asked, seen in (
                ({"width": 10**6, "height": 10**6}, (MAX_COLS, MAX_ROWS)),
                ({"width": 100, "height": 30}, (100, 30)),
                ({"width": -1, "height": 0}, (MIN_COLS, MIN_ROWS)),
                ({"width": 401, "height": 7}, (MAX_COLS, MIN_ROWS)),
            ):
                await tiny.send_json(["resize", asked])
                assert drawn_size(await _drawn(tiny)) == seen, asked
        url = served.ws_url("width=100000&height=100000")
        async with http.ws_connect(url, max_msg_size=0) as huge:
            assert drawn_size(await _drawn(huge)) == (MAX_COLS, MAX_ROWS)


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (("--max-sessions", "0"), "--max-sessions 0 is out of range"),
        (("--max-sessions", "3", "--max-per-client", "9"), "--max-per-client 9 is not 1 to"),
        (("--idle-minutes", "0"), "--idle-minutes 0 is out of range"),
        (("--session-memory-mb", "10"), "too small"),
    ],
)
def test_bad_bounds_are_one_line_and_start_nothing(args: tuple[str, ...], reason: str) -> None:
    done = run_tfolab("serve", *args, timeout=60)
    assert done.returncode == 2 and reason in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stdout == ""


def _identities(pid: int) -> list[str]:
    """TFOLAB_SESSION_ID of every UI process under serve."""
    found = []
    for child in _sessions(pid):
        with contextlib.suppress(OSError):
            for entry in Path(f"/proc/{child}/environ").read_bytes().split(b"\0"):
                if entry.startswith(b"TFOLAB_SESSION_ID="):
                    found.append(entry.split(b"=", 1)[1].decode())
    return sorted(found)


async def test_one_browser_is_one_identity_across_its_tabs(serve) -> None:
    """serve gives each browser a cookie and its sessions that identity, so a reload or
    a second tab is the same student to `tfolab grade`; another browser, or a cookie
    that is not one serve makes, gets an identity of its own."""
    served = serve("--max-per-client", "4")
    url = served.ws_url()
    async with _from("127.0.0.1") as browser, _from("127.0.0.2") as other:
        assert (await _page(browser, served))[0] == 200
        assert (await _page(other, served))[0] == 200
        forged = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
        forged.cookie_jar.update_cookies({"tfolab_browser": "x; rm -rf ~"})
        async with forged:
            tabs = [
                await browser.ws_connect(url),
                await browser.ws_connect(url),
                await other.ws_connect(url),
                await forged.ws_connect(f"{url}?token={served.token}"),
            ]

            async def four_started() -> bool:
                return len(_identities(served.process.pid)) == 4

            assert await _until(four_started)
            ids = _identities(served.process.pid)
            browsers = [i for i in ids if i.startswith("browser ")]
            assert len(browsers) == 3 and len(set(browsers)) == 2, ids
            assert next(i for i in ids if not i.startswith("browser ")).startswith("tab ")
            for tab in tabs:
                await tab.close()


def _lines_until_quiet(served, quiet_s: float = 1.0) -> list[str]:  # type: ignore[no-untyped-def]
    lines = []
    while (line := _line(served.process, time.monotonic() + quiet_s)) is not None:
        lines.append(line)
    return lines


async def test_a_flood_of_refused_requests_does_not_flood_the_teachers_console(serve) -> None:
    """300 refused tabs log at most REFUSED_BURST lines plus what the budget refills while
    they come; every refusal is either logged or counted in a "not logged" line
    (web_log.RefusalBudget, shared by every connection)."""
    served = serve("--max-sessions", "1", "--max-per-client", "1")
    url = served.ws_url()
    async with _from("127.0.0.1") as first, _from("127.0.0.5") as script:
        one = await first.ws_connect(url)
        _lines_until_quiet(served)
        started = time.monotonic()
        tabs = await asyncio.gather(*(_ws_status(script, url) for _ in range(300)))
        assert tabs == [503] * 300
        flood = _lines_until_quiet(served)
        await asyncio.sleep(1.0)  # the budget refills: the next refusal is logged, with a count
        assert await _ws_status(script, url) == 503
        lines = flood + _lines_until_quiet(served)
        took = time.monotonic() - started
        logged = [line for line in lines if '" 503 ' in line]
        counted = [
            int(line.split("(")[1].split()[0])
            for line in lines
            if "more refused requests were not logged" in line
        ]
        assert len(logged) + sum(counted) == 301, lines[-5:]
        assert len(logged) <= REFUSED_BURST + math.ceil(REFUSED_PER_S * took) + 1, took
        assert counted and sum(counted) >= 300 - REFUSED_BURST - REFUSED_PER_S * took
        await one.close()

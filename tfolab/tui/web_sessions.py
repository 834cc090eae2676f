"""How many sessions `tfolab serve` runs, for how long, and how big each may grow.

Rules:
- A session is one websocket, hence one tfolab UI process. At most
  `sessions` run at once in all and `per_client` per client address; one
  more gets a "class is full" page (503) and its websocket a 503, and
  nothing starts.
- A session nobody typed into, clicked or resized for `idle_s` is closed;
  its UI process ends and its place is free again. The page's pings do not
  count as use.
- Each UI process (and all it starts) runs with RLIMIT_AS = `memory_bytes`;
  RLIMIT_NPROC is the serving user's processes at start plus `processes`,
  a bound for the whole class (the kernel counts processes per user, and
  every session runs as the same user).
- What a browser sends is bounded: the terminal size (in the address and
  in a resize message) is clamped to MIN_/MAX_ columns and rows, a message
  is at most MAX_MESSAGE bytes, and a malformed one is ignored.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import resource
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

from aiohttp import WSMsgType, web
from textual_serve.app_service import AppService

from tfolab.lab.identity import SESSION_ID_ENV
from tfolab.tui.web_limits import SessionLimits

BROWSER_COOKIE = "tfolab_browser"  # one browser's identity across its tabs and reloads
BROWSER_ID = re.compile(r"[0-9a-f]{16}")
MIN_COLS, MAX_COLS = 20, 400
MIN_ROWS, MAX_ROWS = 8, 200
MAX_MESSAGE = 64 * 1024
CLOSED_IDLE = 4000  # the websocket close code of an idle session

FULL_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>tfolab: the class is full</title></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 3em auto">
<h1>The class is full</h1>
<p>{reason}</p>
<p>Close a tab you no longer use, or wait a little and reload this page.</p>
</body></html>
"""


def user_processes(uid: int) -> int:
    """How many processes the user `uid` runs now (what RLIMIT_NPROC counts)."""
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                count += os.stat(f"/proc/{entry}").st_uid == uid
            except OSError:
                continue
    return count


def bounded(value: Any, default: int, low: int, high: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        number = default
    return min(max(number, low), high)


def bounded_size(width: Any, height: Any) -> tuple[int, int]:
    return bounded(width, 80, MIN_COLS, MAX_COLS), bounded(height, 24, MIN_ROWS, MAX_ROWS)


class Sessions:
    """The running sessions, counted in all and per client."""

    def __init__(self, limits: SessionLimits) -> None:
        self.limits = limits
        self.per_client: Counter[str] = Counter()
        self.nproc = user_processes(os.getuid()) + limits.processes

    @property
    def running(self) -> int:
        return sum(self.per_client.values())

    def refusal(self, client: str) -> str | None:
        """Why one more session for `client` cannot start now; None if it can."""
        if self.running >= self.limits.sessions:
            return f"All {self.limits.sessions} places of this class are taken."
        if self.per_client[client] >= self.limits.per_client:
            return (
                f"This computer already has {self.limits.per_client} tfolab tabs open "
                "(the most one computer may have)."
            )
        return None

    @contextlib.contextmanager
    def hold(self, client: str) -> Iterator[None]:
        self.per_client[client] += 1
        try:
            yield
        finally:
            self.per_client[client] -= 1
            if self.per_client[client] <= 0:
                del self.per_client[client]

    def limit_child(self) -> None:
        """preexec_fn of every UI process: its memory, and the class's processes."""
        resource.setrlimit(resource.RLIMIT_AS, (self.limits.memory_bytes,) * 2)
        resource.setrlimit(resource.RLIMIT_NPROC, (self.nproc,) * 2)


class LimitedAppService(AppService):
    """textual-serve's AppService whose process starts under the session limits,
    told which browser it serves (TFOLAB_SESSION_ID, saved with every attempt)."""

    def __init__(self, *args: Any, sessions: Sessions, identity: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sessions = sessions
        self.identity = identity

    async def _open_app_process(self, width: int = 80, height: int = 24) -> Any:
        environment = self._build_environment(width=width, height=height)
        environment[SESSION_ID_ENV] = self.identity
        self._process = process = await asyncio.create_subprocess_shell(
            self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=environment,
            preexec_fn=self.sessions.limit_child,
        )
        assert process.stdin is not None
        self._stdin = process.stdin
        return process


def browser_of(request: web.Request) -> str | None:
    """The browser's identity from its cookie ("browser <16 hex>"), None if it has none."""
    given = request.cookies.get(BROWSER_COOKIE, "")
    return f"browser {given}" if BROWSER_ID.fullmatch(given) else None


class IdleClock:
    """When the browser last did something; closes the websocket after `idle_s` without."""

    def __init__(self, websocket: web.WebSocketResponse, idle_s: float) -> None:
        self.websocket = websocket
        self.idle_s = idle_s
        self.last = time.monotonic()

    def touch(self) -> None:
        self.last = time.monotonic()

    async def watch(self) -> None:
        while not self.websocket.closed:
            left = self.last + self.idle_s - time.monotonic()
            if left <= 0:
                await self.websocket.close(code=CLOSED_IDLE, message=b"idle")
                return
            await asyncio.sleep(min(left, 60.0))


async def relay(websocket: web.WebSocketResponse, service: AppService, clock: IdleClock) -> None:
    """The browser's messages to the UI process, bounded, malformed ones dropped."""
    async for message in websocket:
        if message.type != WSMsgType.TEXT:
            continue
        try:
            envelope = json.loads(message.data)
        except ValueError:
            continue
        if not isinstance(envelope, list) or len(envelope) < 1:
            continue
        kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
        if kind == "ping":
            if isinstance(data, str) and len(data) <= 64:
                await websocket.send_json(["pong", data])
            continue
        clock.touch()
        if kind == "stdin" and isinstance(data, str):
            await service.send_bytes(data.encode("utf-8", "replace"))
        elif kind == "resize" and isinstance(data, dict):
            await service.set_terminal_size(*bounded_size(data.get("width"), data.get("height")))
        elif kind == "blur":
            await service.blur()
        elif kind == "focus":
            await service.focus()

"""The UI in a browser: textual-serve, one tfolab UI process per browser tab, guarded and bounded.

Rules:
- textual-serve's aiohttp app does the serving: the page, its static files,
  and a websocket per tab that drives one `tfolab` UI process (its command).
- Every request passes the guard first (web_guard: Host, Origin, token);
  a refused one gets a plain 4xx and nothing starts.
- Sessions are counted, bounded and timed out (web_sessions); the page says
  "the class is full" rather than opening a terminal that cannot start.
- What is logged is safe for the teacher's console (web_log): no token, no
  query, no raw control characters, no local variables.
- The socket is bound by the caller (who may be root, for a port below 1024)
  and only listened on here, after privileges are dropped.
- The page's URLs follow the address the browser used (its Host header, which
  the guard checked), so a student's laptop gets a websocket address it can reach.
"""

from __future__ import annotations

import asyncio
import html
import logging
import secrets
import signal
import socket
from typing import Any

import aiohttp_jinja2
from aiohttp import web
from textual_serve.server import Server

from tfolab.tui.web_guard import guard_middleware, no_referrer
from tfolab.tui.web_limits import SessionLimits
from tfolab.tui.web_log import PathOnlyAccessLogger, quiet_logging
from tfolab.tui.web_sessions import (
    BROWSER_COOKIE,
    FULL_PAGE,
    MAX_MESSAGE,
    IdleClock,
    LimitedAppService,
    Sessions,
    bounded,
    bounded_size,
    browser_of,
    relay,
)

log = logging.getLogger("tfolab.serve")

# what stops the classroom server: Ctrl+C, a service manager, its terminal closed
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class ClassroomServer(Server):
    """textual-serve's Server behind the guard, with bounded sessions and a safe log."""

    def __init__(
        self,
        command: str,
        sock: socket.socket,
        token: str,
        title: str,
        hosts: frozenset[str],
        limits: SessionLimits,
    ) -> None:
        host, port = sock.getsockname()[:2]
        super().__init__(command, host=host, port=port, title=title)
        self.sock = sock
        self.token = token
        self.hosts = hosts
        self.limits = limits
        self.sessions = Sessions(limits)

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(guard_middleware(self.token, self.hosts))
        app.on_response_prepare.append(no_referrer)
        return app

    async def on_startup(self, app: web.Application) -> None:
        """Quiet: `tfolab serve` has printed where to go already."""

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        refusal = self.sessions.refusal(str(request.remote))
        if refusal is not None:
            page = FULL_PAGE.format(reason=html.escape(refusal))
            return web.Response(status=503, text=page, content_type="text/html")
        response = await self._page(request)
        if browser_of(request) is None:
            response.set_cookie(
                BROWSER_COOKIE, secrets.token_hex(8), httponly=True, samesite="Lax", path="/"
            )
        return response

    @aiohttp_jinja2.template("app_index.html")
    async def _page(self, request: web.Request) -> dict[str, Any]:
        base = f"{request.scheme}://{request.host}"
        websocket = ("wss" if request.scheme == "https" else "ws") + f"://{request.host}/ws"
        return {
            "font_size": bounded(request.query.get("fontsize"), 16, 6, 64),
            "app_websocket_url": websocket,
            "config": {"static": {"url": f"{base}/static/"}},
            "application": {"name": self.title},
        }

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        client = str(request.remote)
        refusal = self.sessions.refusal(client)
        if refusal is not None:
            raise web.HTTPServiceUnavailable(text=f"503: the class is full. {refusal}\n")
        width, height = bounded_size(request.query.get("width"), request.query.get("height"))
        websocket = web.WebSocketResponse(heartbeat=15, max_msg_size=MAX_MESSAGE)
        with self.sessions.hold(client):
            service: LimitedAppService | None = None
            watcher: asyncio.Task[None] | None = None
            try:
                await websocket.prepare(request)
                service = LimitedAppService(
                    self.command,
                    write_bytes=websocket.send_bytes,
                    write_str=websocket.send_str,
                    close=websocket.close,
                    download_manager=self.download_manager,
                    debug=self.debug,
                    sessions=self.sessions,
                    identity=browser_of(request) or f"tab {secrets.token_hex(8)}",
                )
                await service.start(width, height)
                clock = IdleClock(websocket, self.limits.idle_s)
                watcher = asyncio.create_task(clock.watch())
                await relay(websocket, service, clock)
            except asyncio.CancelledError:
                await websocket.close()
            except ConnectionError:
                pass  # the browser went away mid-message: an ordinary end
            except Exception:
                log.exception("a session ended with an error")
            finally:
                if watcher is not None:
                    watcher.cancel()
                if service is not None:
                    await service.stop()
        return websocket

    def serve(self, debug: bool = False) -> None:
        """Listen on the bound socket until SIGINT, SIGTERM or SIGHUP (its terminal closed)."""
        self.debug = debug
        quiet_logging()
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        for signum in STOP_SIGNALS:
            loop.add_signal_handler(signum, self.request_exit)
        web.run_app(
            self._make_app(),
            sock=self.sock,
            handle_signals=False,
            loop=loop,
            access_log_class=PathOnlyAccessLogger,
            print=lambda *args: None,
        )

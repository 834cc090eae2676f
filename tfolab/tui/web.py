"""The UI in a browser: textual-serve, one tfolab UI process per browser tab, behind a token.

Rules:
- textual-serve's aiohttp app does the serving: the page, its static files,
  and a websocket per tab that drives one `tfolab` UI process (its command).
- With a token, every request needs it: `?token=T` in the URL, or the cookie
  the page's first response sets (so the page's own files and its websocket
  carry it). Anything else gets a plain 403 and nothing starts.
- The token is never logged: the access log shows the path without its query.
- The socket is bound by the caller (who may be root, for a port below 1024)
  and only listened on here, after privileges are dropped.
- The page's URLs follow the address the browser used (its Host header), so a
  student's laptop gets a websocket address it can reach.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import signal
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp_jinja2
from aiohttp import web
from aiohttp.abc import AbstractAccessLogger
from textual_serve.server import Server

TOKEN_COOKIE = "tfolab_token"
REFUSED = "403: this tfolab classroom needs its token; open the address `tfolab serve` printed.\n"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class PathOnlyAccessLogger(AbstractAccessLogger):
    """One line per request: who, method, path (never the query: it may hold the token), status."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        self.logger.info(
            '%s "%s %s" %s %.1f ms',
            request.remote,
            request.method,
            request.path,
            response.status,
            time * 1000,
        )


def token_middleware(token: str) -> Any:
    @web.middleware
    async def check_token(request: web.Request, handler: Handler) -> web.StreamResponse:
        given = request.query.get("token") or request.cookies.get(TOKEN_COOKIE) or ""
        if not hmac.compare_digest(given.encode(), token.encode()):
            return web.Response(status=403, text=REFUSED)
        response = await handler(request)
        if "token" in request.query and request.path == "/" and not response.prepared:
            response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="Strict")
        return response

    return check_token


class ClassroomServer(Server):
    """textual-serve's Server with a token check, a quiet access log and a pre-bound socket."""

    def __init__(self, command: str, sock: socket.socket, token: str | None, title: str) -> None:
        host, port = sock.getsockname()[:2]
        super().__init__(command, host=host, port=port, title=title)
        self.sock = sock
        self.token = token

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        if self.token is not None:
            app.middlewares.append(token_middleware(self.token))
        return app

    async def on_startup(self, app: web.Application) -> None:
        """Quiet: `tfolab serve` has printed where to go already."""

    @aiohttp_jinja2.template("app_index.html")
    async def handle_index(self, request: web.Request) -> dict[str, Any]:
        base = f"{request.scheme}://{request.host}"
        websocket = ("wss" if request.scheme == "https" else "ws") + f"://{request.host}/ws"
        try:
            font_size = int(request.query.get("fontsize", "16"))
        except ValueError:
            font_size = 16
        return {
            "font_size": font_size,
            "app_websocket_url": websocket,
            "config": {"static": {"url": f"{base}/static/"}},
            "application": {"name": self.title},
        }

    def serve(self, debug: bool = False) -> None:
        """Listen on the bound socket until SIGINT or SIGTERM."""
        self.debug = debug
        self.initialize_logging()
        logging.getLogger("aiohttp.access").setLevel(logging.INFO)
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, self.request_exit)
        web.run_app(
            self._make_app(),
            sock=self.sock,
            handle_signals=False,
            loop=loop,
            access_log_class=PathOnlyAccessLogger,
            print=lambda *args: None,
        )

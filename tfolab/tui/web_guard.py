"""Who may talk to `tfolab serve`: the Host, the Origin and the token of every request.

Rules, checked in this order on every request (the page, its files, its websocket):
- Host: an IP address, `localhost`, this machine's name, or a name given
  with --allow-host. Anything else (a DNS rebinding name) is a 421 and
  nothing starts.
- Origin: absent (a script, curl), or the very address the request was sent
  to (`http://<Host>`): a page of another site opening our websocket (which
  the same-origin policy does not stop) is a 403.
- Token: `?token=T` or the cookie, compared as bytes in constant time; a
  value that is not text (a cookie `\\xff`) is a refusal like any wrong one,
  never an exception. Anything else is a plain 403.
- The page opened with `?token=T` gets the cookie (HttpOnly, SameSite=Lax)
  and a redirect to the same address without the token, so it leaves the
  address bar and the history.
- Every response says `Referrer-Policy: no-referrer`; a refusal never
  echoes what was sent.
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web

TOKEN_COOKIE = "tfolab_token"
REFUSED = "403: this tfolab classroom needs its token; open the address `tfolab serve` printed.\n"
CROSS_SITE = "403: this tfolab classroom only answers its own pages, not another site's.\n"
WRONG_HOST = (
    "421: this tfolab classroom is not served under that name; use its IP address, "
    "or ask the teacher to add the name with --allow-host.\n"
)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def host_names(extra: Iterable[str] = ()) -> frozenset[str]:
    """The names the Host header may carry besides IP addresses."""
    names = {"localhost", socket.gethostname()}
    names.update(extra)
    return frozenset(name.lower().rstrip(".") for name in names if name)


def host_of(header: str) -> str:
    """'Name:8000' -> 'name'; '[::1]:8000' -> '::1'."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    if header.count(":") == 1:
        header = header.split(":", 1)[0]
    return header.rstrip(".")


def host_allowed(header: str | None, names: frozenset[str]) -> bool:
    if not header:
        return False
    name = host_of(header)
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return name in names
    return True


def origin_allowed(origin: str | None, host: str | None) -> bool:
    """No Origin (not a browser), or the page's own address."""
    if origin is None:
        return True
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and parts.netloc.lower() == (host or "").lower()


def token_matches(given: str, token: bytes) -> bool:
    """Constant-time, total: anything that is not the token's text is False."""
    try:
        raw = given.encode("utf-8")
    except UnicodeError:
        return False
    return hmac.compare_digest(raw, token)


def guard_middleware(token: str | None, names: frozenset[str]) -> Any:
    expected = token.encode() if token is not None else b""

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        host = request.headers.get("Host")
        if not host_allowed(host, names):
            return web.Response(status=421, text=WRONG_HOST)
        if not origin_allowed(request.headers.get("Origin"), host):
            return web.Response(status=403, text=CROSS_SITE)
        if token is None:
            return await handler(request)
        in_query = request.query.get("token")
        given = in_query if in_query is not None else request.cookies.get(TOKEN_COOKIE, "")
        if not token_matches(given, expected):
            return web.Response(status=403, text=REFUSED)
        if in_query is not None and request.path == "/" and request.method == "GET":
            return _without_the_token(request, token)
        return await handler(request)

    return guard


def _without_the_token(request: web.Request, token: str) -> web.Response:
    """303 to the same page without ?token=, with the cookie that replaces it."""
    kept = [(key, value) for key, value in request.query.items() if key != "token"]
    rest = request.rel_url.with_query(kept)
    response = web.Response(
        status=303, headers={"Location": str(rest), "Cache-Control": "no-store"}
    )
    # Lax, not Strict: a class's address posted on a course page is a cross-site link,
    # and its redirect must carry the cookie. Cross-site sockets get no Lax cookie (and
    # no entry: the Origin check).
    response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="Lax", path="/")
    return response


async def no_referrer(request: web.Request, response: web.StreamResponse) -> None:
    """on_response_prepare: no page of ours tells another site where it came from."""
    response.headers["Referrer-Policy"] = "no-referrer"

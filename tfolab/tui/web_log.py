"""What `tfolab serve` prints to the teacher's console while it serves: safe lines only.

Rules:
- Every logged line is plain text: control characters (escape sequences, CR,
  the C1 range, bidi overrides) from a request reach the console escaped
  (`\\x1b`), never raw; a long field is cut.
- The access log shows who, method, path, status, time: never the query (it
  may hold the token) and never a header or cookie.
- Refused requests (status 400 and above) are logged at most REFUSED_BURST at
  once and REFUSED_PER_S a second after that, for the whole server (aiohttp
  makes an access logger per connection): a 300-tab script or a scan cannot
  flood the teacher's console. The next refusal logged says how many were
  left out.
- An exception is one line and its traceback's file:line frames, never the
  values of local variables (textual-serve's default shows them, the token
  among them); rendering it costs no more than formatting a few lines.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
import unicodedata

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger

MAX_FIELD = 300  # characters of one logged field (a request path)
MAX_LINE = 1000  # characters of one logged message


def safe_text(text: str, limit: int = MAX_FIELD) -> str:
    """`text` with every control or format character escaped, cut to `limit` characters."""
    out = []
    for char in text[:limit]:
        if char.isprintable() or char == " ":
            out.append(char)
        elif unicodedata.category(char) == "Cs":  # a byte that was not UTF-8 (surrogateescape)
            out.append(f"\\x{ord(char) - 0xDC00:02x}")
        else:
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
    if len(text) > limit:
        out.append("...")
    return "".join(out)


REFUSED_BURST = 20
REFUSED_PER_S = 2.0


class RefusalBudget:
    """A token bucket for refused requests' log lines, shared by every connection."""

    def __init__(self, burst: int = REFUSED_BURST, per_s: float = REFUSED_PER_S) -> None:
        self.burst, self.per_s = burst, per_s
        self.tokens = float(burst)
        self.at = time.monotonic()
        self.left_out = 0
        self.lock = threading.Lock()

    def take(self) -> tuple[bool, int]:
        """(log this one?, how many were left out before it, when it is logged)."""
        with self.lock:
            now = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.at) * self.per_s)
            self.at = now
            if self.tokens < 1:
                self.left_out += 1
                return False, 0
            self.tokens -= 1
            left_out, self.left_out = self.left_out, 0
            return True, left_out


REFUSALS = RefusalBudget()


class PathOnlyAccessLogger(AbstractAccessLogger):
    """One line per request: who, method, path (never the query: it may hold the token), status."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        if response.status >= 400:
            logged, left_out = REFUSALS.take()
            if not logged:
                return
            if left_out:
                self.logger.info("(%d more refused requests were not logged)", left_out)
        self.logger.info(
            '%s "%s %s" %s %.1f ms',
            safe_text(str(request.remote)),
            safe_text(request.method, 16),
            safe_text(request.path),
            response.status,
            time * 1000,
        )


class SafeFormatter(logging.Formatter):
    """The message escaped; an exception as its type, message and frames, without locals."""

    def format(self, record: logging.LogRecord) -> str:
        line = safe_text(record.getMessage(), MAX_LINE)
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            frames = traceback.extract_tb(error.__traceback__)[-8:]
            where = " <- ".join(f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno}" for f in frames)
            kind = type(error).__name__
            line += f" [{kind}: {safe_text(str(error), 120)}; at {safe_text(where, 600)}]"
        return f"{record.levelname.lower()}: {line}" if record.levelno > logging.INFO else line


def quiet_logging() -> None:
    """INFO lines, formatted safely, to stderr; replaces textual-serve's rich handler."""
    handler = logging.StreamHandler()
    handler.setFormatter(SafeFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    logging.getLogger("aiohttp.access").setLevel(logging.INFO)

"""What `tfolab serve` prints to the teacher's console while it serves: safe lines only.

Rules:
- Every logged line is plain text: control characters (escape sequences, CR,
  the C1 range, bidi overrides) from a request reach the console escaped
  (`\\x1b`), never raw; a long field is cut.
- The access log shows who, method, path, status, time: never the query (it
  may hold the token) and never a header or cookie.
- An exception is one line and its traceback's file:line frames, never the
  values of local variables (textual-serve's default shows them, the token
  among them); rendering it costs no more than formatting a few lines.
"""

from __future__ import annotations

import logging
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


class PathOnlyAccessLogger(AbstractAccessLogger):
    """One line per request: who, method, path (never the query: it may hold the token), status."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
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

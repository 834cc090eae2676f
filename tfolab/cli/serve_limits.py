"""`tfolab serve`'s flags for the class's size and each session's bounds (tui.web_limits).

Rule: every bound is checked before anything starts; a bad one is one line, exit 2.
"""

from __future__ import annotations

import argparse

from tfolab.core.errors import UserError
from tfolab.tui.web_limits import (
    DEFAULT_IDLE_MINUTES,
    DEFAULT_MEMORY_MB,
    DEFAULT_PER_CLIENT,
    DEFAULT_SESSIONS,
    PROCESSES_PER_SESSION,
    SessionLimits,
)

MAX_SESSIONS = 500
MIN_MEMORY_MB = 256


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-sessions",
        type=int,
        default=DEFAULT_SESSIONS,
        metavar="N",
        help=f"sessions (browser tabs) at once in all (default {DEFAULT_SESSIONS})",
    )
    parser.add_argument(
        "--max-per-client",
        type=int,
        default=None,
        metavar="N",
        help="sessions at once from one client address "
        f"(default {DEFAULT_PER_CLIENT}, or --max-sessions if fewer)",
    )
    parser.add_argument(
        "--idle-minutes",
        type=float,
        default=DEFAULT_IDLE_MINUTES,
        metavar="M",
        help=f"close a session unused for M minutes (default {DEFAULT_IDLE_MINUTES:g})",
    )
    parser.add_argument(
        "--session-memory-mb",
        type=int,
        default=DEFAULT_MEMORY_MB,
        metavar="MB",
        help=f"address space of each session's processes (default {DEFAULT_MEMORY_MB})",
    )


def session_limits(args: argparse.Namespace) -> SessionLimits:
    if not 1 <= args.max_sessions <= MAX_SESSIONS:
        raise UserError(
            f"--max-sessions {args.max_sessions} is out of range", f"give 1 to {MAX_SESSIONS}"
        )
    per_client = args.max_per_client
    if per_client is None:
        per_client = min(DEFAULT_PER_CLIENT, args.max_sessions)
    if not 1 <= per_client <= args.max_sessions:
        raise UserError(
            f"--max-per-client {per_client} is not 1 to --max-sessions ({args.max_sessions})",
            "give fewer per client, or more sessions",
        )
    if not 0 < args.idle_minutes <= 24 * 60:
        raise UserError(
            f"--idle-minutes {args.idle_minutes:g} is out of range", "give more than 0, up to 1440"
        )
    if args.session_memory_mb < MIN_MEMORY_MB:
        raise UserError(
            f"--session-memory-mb {args.session_memory_mb} is too small for a tfolab UI",
            f"give at least {MIN_MEMORY_MB}",
        )
    return SessionLimits(
        sessions=args.max_sessions,
        per_client=per_client,
        idle_s=args.idle_minutes * 60,
        memory_bytes=args.session_memory_mb * 1024 * 1024,
        processes=args.max_sessions * PROCESSES_PER_SESSION,
    )

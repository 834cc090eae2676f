"""Wait until the lab namespace's earlier connections are over, before a measured part.

Rules:
- Over means every TCP socket of this network namespace (/proc/net/tcp and
  tcp6, the calling process's namespace) is a listener or in TIME_WAIT: both
  FINs sent and acknowledged, so no timer of an earlier connection (a
  tail-loss probe, a FIN again) can fire, and no counter move, inside what
  is measured next.
- The wait is bounded: `wait_until_over` says whether it was over in time;
  the caller decides what to tell.
"""

from __future__ import annotations

import time
from pathlib import Path

# include/net/tcp_states.h, as /proc/net/tcp prints them (hexadecimal)
TCP_TIME_WAIT = 0x06
TCP_LISTEN = 0x0A
TABLES = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))
POLL_S = 0.001


def open_states() -> list[int]:
    """The states of this namespace's TCP sockets that are neither listening nor in
    TIME_WAIT."""
    states = []
    for table in TABLES:
        try:
            lines = table.read_text().splitlines()[1:]
        except FileNotFoundError:  # no IPv6 in this kernel
            continue
        for line in lines:
            fields = line.split()
            state = int(fields[3], 16)
            if state not in (TCP_TIME_WAIT, TCP_LISTEN):
                states.append(state)
    return states


def wait_until_over(timeout_s: float) -> bool:
    """Poll until no connection of this namespace is open (see the rules); False if
    one still was after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while open_states():
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)
    return True

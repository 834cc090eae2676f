"""Wait until the lab namespace's earlier connections are over, before a measured part.

Rules:
- Over means every TCP socket of this network namespace (/proc/net/tcp and
  tcp6, the calling process's namespace) is a listener or in TIME_WAIT: both
  FINs sent and acknowledged, so no timer of an earlier connection (a
  tail-loss probe, a FIN again) can fire, and no counter move, inside what
  is measured next.
- Before a capture of a lossy path stops, a lighter rule: no socket has a FIN
  unacknowledged (FIN_WAIT1, CLOSING, LAST_ACK), so the probe of a lost FIN, or
  of a FIN whose last ACK was lost, is in the capture. A request socket (SYN_RECV) the lab
  leaves behind on purpose (a replayed SYN's) is not waited for.
- The waits are bounded: each says whether its rule held in time; the caller
  decides what to tell.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

# include/net/tcp_states.h, as /proc/net/tcp prints them (hexadecimal)
TCP_FIN_WAIT1 = 0x04
TCP_TIME_WAIT = 0x06
TCP_LAST_ACK = 0x09
TCP_LISTEN = 0x0A
TCP_CLOSING = 0x0B
FIN_UNACKED = (TCP_FIN_WAIT1, TCP_LAST_ACK, TCP_CLOSING)
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
    return _wait(lambda: not open_states(), timeout_s)


def wait_until_fins_acked(timeout_s: float) -> bool:
    """Poll until no socket of this namespace waits for the ACK of its FIN; False if
    one still did after `timeout_s`."""
    return _wait(lambda: not set(open_states()) & set(FIN_UNACKED), timeout_s)


def _wait(done: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)
    return True

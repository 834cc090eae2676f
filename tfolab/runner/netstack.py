"""Sysctls, TcpExt counters and the TFO cookie cache of the current namespace.

Rules: call these only inside the lab's namespace (the runner, after
`enter_new_netns`). /proc/sys/net and /proc/net follow the caller's network
namespace, so the host's values are never read or written from here.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tfolab.core.errors import UserError

FASTOPEN_COUNTERS = (
    "TCPFastOpenActive",
    "TCPFastOpenActiveFail",
    "TCPFastOpenPassive",
    "TCPFastOpenPassiveFail",
    "TCPFastOpenListenOverflow",
    "TCPFastOpenCookieReqd",
    "TCPFastOpenPassiveAltKey",
    "TCPFastOpenBlackhole",
)
DELACK_COUNTERS = ("DelayedACKs", "DelayedACKLocked", "DelayedACKLost", "TCPAutoCorking")
# what loss and the retransmission timers move (the `drop` setting)
LOSS_COUNTERS = (
    "TCPTimeouts",
    "TCPSynRetrans",
    "TCPLossProbes",
    "TCPLossProbeRecovery",
    "TCPLostRetransmit",
    "TcpTimeoutRehash",
    "TCPSYNChallenge",
    "TCPChallengeACK",
    "TCPACKSkippedChallenge",
    "TCPACKSkippedSynRecv",
)


def sysctl_path(name: str) -> Path:
    return Path("/proc/sys") / name.replace(".", "/")


def has_sysctl(name: str) -> bool:
    return sysctl_path(name).exists()


def write_sysctl(name: str, value: str | int) -> None:
    try:
        sysctl_path(name).write_text(f"{value}\n")
    except OSError as err:
        raise UserError(
            f"cannot set {name}={value} in the lab namespace: {err.strerror}",
            "run as root, or check that this kernel has that sysctl",
        ) from None


def read_tcpext() -> dict[str, int]:
    """All TcpExt counters of this namespace (/proc/net/netstat)."""
    lines = Path("/proc/net/netstat").read_text().splitlines()
    counters: dict[str, int] = {}
    for header, values in zip(lines[::2], lines[1::2], strict=False):
        names, numbers = header.split(), values.split()
        if names and names[0] == "TcpExt:":
            counters.update(zip(names[1:], (int(n) for n in numbers[1:]), strict=False))
    return counters


def counter_deltas(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """The lab's counters that moved, plus the Fast Open ones (shown even at 0)."""
    deltas = {name: after.get(name, 0) - before.get(name, 0) for name in after}
    shown = {name: deltas.get(name, 0) for name in FASTOPEN_COUNTERS if name in after}
    shown.update(
        {
            name: value
            for name, value in deltas.items()
            if value and name in (*DELACK_COUNTERS, *LOSS_COUNTERS)
        }
    )
    return shown


def flush_cookie_cache() -> bool:
    """Forget every cached TFO cookie (tcp_metrics) in this namespace.

    False where it cannot: tcp_metrics' netlink family wants CAP_NET_ADMIN in
    the initial user namespace, so a lab running in a user namespace cannot
    flush, and a machine without iproute2's `ip` has no way to ask. The runner
    then uses a fresh destination address, whose cache entry is empty.
    """
    try:
        done = subprocess.run(
            ["ip", "tcp_metrics", "flush", "all"], check=False, capture_output=True, timeout=5
        )
    except FileNotFoundError:
        return False
    return done.returncode == 0


def random_fastopen_key() -> str:
    """A fresh TFO key in the sysctl's format: four 8-hex-digit words."""
    import secrets

    words = [secrets.token_hex(4) for _ in range(4)]
    return "-".join(words)

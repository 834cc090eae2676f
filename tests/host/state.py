"""What a lab run must leave exactly as it found it on the host, read without changing it.

Rules:
- `snapshot()` reads, never writes: the nf_tables ruleset (over netlink), the
  legacy x_tables, `iptables -S` where that binary exists, the qdiscs of every
  interface, every interface's MTU and flags, the named network namespaces
  and the host's values of every sysctl tfolab writes in its namespaces.
- `leftovers(marker)` lists live processes whose environment carries the
  marker: the test session sets it, so every process the tests started (and
  theirs) has it, and nothing of another session on the same machine does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from tests.host import legacy, nftables

# Every sysctl tfolab writes (inside its namespaces; the host's value must not move).
SYSCTLS = (
    "net.core.rmem_max",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.route.min_adv_mss",
    "net.ipv4.tcp_autocorking",
    "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_fastopen",
    "net.ipv4.tcp_fastopen_key",
    "net.ipv4.tcp_invalid_ratelimit",
    "net.ipv4.tcp_min_tso_segs",
    "net.ipv4.tcp_pacing_ss_ratio",
    "net.ipv4.tcp_pingpong_thresh",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_tso_rtt_log",
)
LAB_PROGRAMS = ("tfo-echo-server", "tfo-echo-client", "tfo-bench-client", "tfo-delay", "nginx")


def _json(*args: str) -> list[dict[str, object]]:
    if shutil.which(args[0]) is None:
        return [{"missing": args[0]}]
    done = subprocess.run(list(args), capture_output=True, text=True, timeout=20, check=True)
    found: list[dict[str, object]] = json.loads(done.stdout or "[]")
    return found


def qdiscs() -> list[str]:
    return sorted(
        " ".join(f"{key}={q.get(key)}" for key in ("dev", "kind", "handle", "parent", "root"))
        for q in _json("tc", "-j", "qdisc", "show")
    )


def links() -> list[str]:
    found = []
    for link in _json("ip", "-j", "link", "show"):
        flags = link.get("flags")
        flags = sorted(map(str, flags)) if isinstance(flags, list) else []
        found.append(f"{link.get('ifname')} mtu={link.get('mtu')} flags={flags}")
    return sorted(found)


def sysctls() -> list[str]:
    found = []
    for name in SYSCTLS:
        path = Path("/proc/sys") / name.replace(".", "/")
        value = " ".join(path.read_text().split()) if path.exists() else "absent"
        found.append(f"{name} = {value}")
    return found


def iptables() -> list[str]:
    lines = []
    for binary in ("iptables", "iptables-legacy", "ip6tables"):
        if shutil.which(binary) is not None:
            done = subprocess.run([binary, "-S"], capture_output=True, text=True, timeout=20)
            lines += [f"{binary}: {line}" for line in (done.stdout + done.stderr).splitlines()]
    return lines


def snapshot() -> dict[str, list[str]]:
    netns = Path("/run/netns")
    return {
        "nf_tables": nftables.ruleset(),
        "x_tables": legacy.tables(),
        "iptables -S": iptables(),
        "qdiscs": qdiscs(),
        "links": links(),
        "named namespaces": sorted(os.listdir(netns)) if netns.is_dir() else [],
        "sysctls": sysctls(),
    }


def changes(before: dict[str, list[str]], after: dict[str, list[str]]) -> list[str]:
    """One line per difference: `what: + line` (appeared) or `what: - line` (gone)."""
    found = []
    for what in before:
        old, new = set(before[what]), set(after.get(what, []))
        found += [f"{what}: - {line}" for line in sorted(old - new)]
        found += [f"{what}: + {line}" for line in sorted(new - old)]
    return found


def _environ(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return b""


def _status(pid: str) -> tuple[str, str]:
    """(comm, state letter), or ("", "") for a process already gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "", ""
    comm = stat[stat.index("(") + 1 : stat.rindex(")")]
    return comm, stat[stat.rindex(")") + 2 :].split()[0]


def leftovers(marker: str) -> dict[int, str]:
    """Live processes (zombies aside) carrying `marker` in their environment: pid -> what."""
    needle = marker.encode() + b"\0"
    host = os.readlink("/proc/self/ns/net")
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        if needle not in _environ(entry) + b"\0":
            continue
        comm, state = _status(entry)
        if not comm or state == "Z":
            continue
        try:
            netns = os.readlink(f"/proc/{entry}/ns/net")
        except OSError:
            netns = "?"
        where = "" if netns == host else f" in {netns}"
        found[int(entry)] = f"{comm}{where}"
    return found

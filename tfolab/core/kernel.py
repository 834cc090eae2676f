"""Facts about the running kernel that the model needs as parameters.

Rules: read-only; every function has a safe answer when the fact cannot be
found (the model then uses its documented default), and says where it came from.
"""

from __future__ import annotations

import gzip
import platform
from pathlib import Path

DEFAULT_HZ = 250


def kernel_release() -> str:
    return platform.release().split("-")[0] or platform.release()


def kernel_config() -> tuple[dict[str, str], str] | None:
    """The running kernel's build options (CONFIG_X -> y|m|value) and where they were read."""
    candidates = [Path("/proc/config.gz"), Path(f"/boot/config-{platform.release()}")]
    for path in candidates:
        try:
            raw = path.read_bytes()
        except OSError:
            continue
        text = gzip.decompress(raw) if path.suffix == ".gz" else raw
        pairs = (line.split("=", 1) for line in text.decode(errors="replace").splitlines())
        return {pair[0]: pair[1] for pair in pairs if len(pair) == 2}, str(path)
    return None


def config_has(config: dict[str, str], *options: str) -> bool:
    """True when every option is built in or a module."""
    return all(config.get(f"CONFIG_{name}") in ("y", "m") for name in options)


def kernel_hz() -> tuple[int, str]:
    """CONFIG_HZ of the running kernel and where it was read, else (250, 'default')."""
    found = kernel_config()
    if found is not None and found[0].get("CONFIG_HZ", "").isdigit():
        return int(found[0]["CONFIG_HZ"]), f"read from {found[1]}"
    return DEFAULT_HZ, "assumed: the kernel config is not readable here"


def read_sysctl(name: str) -> str | None:
    path = Path("/proc/sys") / name.replace(".", "/")
    try:
        return path.read_text().strip()
    except OSError:
        return None


DEFAULT_RECEIVE_SPACE = 6_291_456  # Linux's default net.ipv4.tcp_rmem[2]


def receive_space_bytes() -> tuple[int, str]:
    """max(net.ipv4.tcp_rmem[2], net.core.rmem_max): what sizes the SYN's window scale.

    A new network namespace copies tcp_rmem from the host's, and rmem_max is
    global, so the host's values are the lab's.
    """
    rmem = read_sysctl("net.ipv4.tcp_rmem")
    rmem_max = read_sysctl("net.core.rmem_max")
    try:
        largest = max(int(rmem.split()[2]) if rmem else 0, int(rmem_max or 0))
    except (ValueError, IndexError):
        largest = 0
    if largest <= 0:
        return DEFAULT_RECEIVE_SPACE, "assumed: Linux's default tcp_rmem"
    return largest, "read from net.ipv4.tcp_rmem and net.core.rmem_max"


DEFAULT_TCP_RMEM = (4096, 131_072, 6_291_456)  # Linux's default net.ipv4.tcp_rmem


def tcp_rmem() -> tuple[tuple[int, int, int], str]:
    """net.ipv4.tcp_rmem (min, default, max): a socket's first and largest receive buffer."""
    text = read_sysctl("net.ipv4.tcp_rmem")
    try:
        low, default, high = (int(v) for v in (text or "").split())
    except ValueError:
        return DEFAULT_TCP_RMEM, "assumed: Linux's default tcp_rmem"
    return (low, default, high), "read from net.ipv4.tcp_rmem"


def kernel_version() -> tuple[int, int]:
    """The running kernel's (major, minor), e.g. (6, 1); (0, 0) when it cannot be read."""
    parts = kernel_release().split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (ValueError, IndexError):
        return 0, 0

"""The legacy (x_tables) firewall of the caller's network namespace, without a binary.

Rules:
- Table names come from /proc/net/{ip,ip6,arp}_tables_names. Only a table
  already listed there is asked for its size (IPT_SO_GET_INFO / IP6T_SO_GET_INFO:
  entry count and blob size): asking for an absent one would make the kernel
  create it, which would change the host being watched.
- Entry counts change whenever a rule is added or removed, which is what a
  leaked rule does; counters are never read.
"""

from __future__ import annotations

import ctypes
import socket
import struct
from pathlib import Path

SO_GET_INFO = 64  # IPT_SO_GET_INFO and IP6T_SO_GET_INFO (IPT_BASE_CTL)
GETINFO = struct.Struct("=32sI5I5III")  # name, valid_hooks, hook_entry, underflow, num, size
FAMILIES = (
    ("ip", socket.AF_INET, socket.IPPROTO_IP),
    ("ip6", socket.AF_INET6, socket.IPPROTO_IPV6),
)


def _names(family: str) -> list[str]:
    path = Path(f"/proc/net/{family}_tables_names")
    return sorted(path.read_text().split()) if path.exists() else []


def _entries(address_family: int, level: int, table: str) -> str:
    try:
        sock = socket.socket(address_family, socket.SOCK_RAW, socket.IPPROTO_RAW)
    except OSError as err:
        return f"unreadable ({err.strerror})"
    with sock:
        libc = ctypes.CDLL(None, use_errno=True)
        buffer = ctypes.create_string_buffer(table.encode().ljust(GETINFO.size, b"\0"))
        length = ctypes.c_uint(GETINFO.size)
        if libc.getsockopt(sock.fileno(), level, SO_GET_INFO, buffer, ctypes.byref(length)):
            return f"unreadable (errno {ctypes.get_errno()})"
        *_, count, size = GETINFO.unpack(buffer.raw[: GETINFO.size])
        return f"{count} entries, {size} bytes"


def tables() -> list[str]:
    """Sorted lines: `FAMILY TABLE: N entries, S bytes` (arp: names only)."""
    lines = [
        f"{family} {table}: {_entries(address_family, level, table)}"
        for family, address_family, level in FAMILIES
        for table in _names(family)
    ]
    lines += [f"arp {table}" for table in _names("arp")]
    return sorted(lines)

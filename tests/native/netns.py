"""Run a test body inside a fresh, anonymous network namespace.

Rules of this module:
- The body runs in a forked child that calls unshare(CLONE_NEWNET) through
  libc (Python 3.11 has no os.unshare); the namespace dies with the child.
- Sysctls are written only after checking that /proc/self/ns/net changed, so
  the host's settings are never touched.
- The child reports back through a pipe: the body's (picklable) return value,
  a skip reason, or the formatted traceback of a failure, which fails the test
  in the parent. Not root or unshare refused: the test is skipped with the
  reason, it never silently passes.
- Every wait is bounded: a child that outlives `timeout` is killed and the
  test fails.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import pickle
import select
import signal
import socket
import struct
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.environment import require_or_skip

CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
IFREQ = "16sH22x"  # struct ifreq: name, flags, rest of the union (40 bytes)
DEFAULT_SYSCTLS = {"net.ipv4.tcp_fastopen": "3"}

T = TypeVar("T")


class _Skip(Exception):
    """Raised in the child when the namespace cannot be made."""


def _unshare_net() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) != 0:
        code = ctypes.get_errno()
        raise _Skip(
            f"unshare(CLONE_NEWNET) failed: {errno.errorcode.get(code, code)} "
            "(network namespaces are not permitted here)"
        )


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack(IFREQ, b"lo", 0)
        flags = struct.unpack(IFREQ, fcntl.ioctl(sock.fileno(), SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock.fileno(), SIOCSIFFLAGS, struct.pack(IFREQ, b"lo", flags | IFF_UP))


def write_sysctl(name: str, value: str, host_namespace: str) -> None:
    """Write a net.* sysctl, refusing unless this process left the host's namespace."""
    if not name.startswith("net.") or os.readlink("/proc/self/ns/net") == host_namespace:
        raise RuntimeError(f"refusing to write {name}: not inside a new network namespace")
    Path("/proc/sys", *name.split(".")).write_text(value + "\n")


def _child(body: Callable[..., Any], args: tuple[Any, ...], sysctls: dict[str, str]) -> Any:
    host_namespace = os.readlink("/proc/self/ns/net")
    _unshare_net()
    if os.readlink("/proc/self/ns/net") == host_namespace:
        raise RuntimeError("unshare succeeded but the network namespace did not change")
    _loopback_up()
    for name, value in sysctls.items():
        write_sysctl(name, value, host_namespace)
    return body(*args)


def _read_all(fd: int, deadline: float) -> bytes | None:
    chunks = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            return None
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def run_in_netns(
    body: Callable[..., T],
    *args: Any,
    timeout: float = 30.0,
    sysctls: dict[str, str] | None = None,
) -> T:
    """Run body(*args) in a new network namespace with lo up; return its result."""
    if os.geteuid() != 0:
        require_or_skip("root", "a network namespace needs it (run the tests as root)")
    wanted = DEFAULT_SYSCTLS if sysctls is None else sysctls
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns into pytest
        code = 0
        try:
            os.close(read_fd)
            try:
                report = ("ok", _child(body, args, wanted))
            except _Skip as skip:
                report = ("skip", str(skip))
            except BaseException:
                report = ("error", traceback.format_exc())
            data = pickle.dumps(report)
            view = memoryview(data)
            while view:
                view = view[os.write(write_fd, view) :]
        except BaseException:
            code = 70
        finally:
            os._exit(code)
    os.close(write_fd)
    try:
        data = _read_all(read_fd, time.monotonic() + timeout)
    finally:
        os.close(read_fd)
    if data is None:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if data is None:
        pytest.fail(f"the namespace child did not finish within {timeout} s", pytrace=False)
    if not data:
        pytest.fail(f"the namespace child died without a report (wait status {status})")
    kind, value = pickle.loads(data)
    if kind == "skip":
        require_or_skip("network namespaces", value)
    if kind == "error":
        pytest.fail(f"inside the namespace:\n{value}", pytrace=False)
    return value  # type: ignore[no-any-return]

"""Enter a fresh, anonymous network namespace that dies with this process.

Rules:
- Only ever called in a process that exists for the lab (the runner, a probe):
  after it returns, this process's network is the lab's, not the host's.
- Root unshares CLONE_NEWNET directly. Anyone else gets a user namespace with
  their uid mapped to root (CLONE_NEWUSER | CLONE_NEWNET) where the kernel
  allows it; the caller must be single-threaded then (unshare says EINVAL
  otherwise: our bug, reported as one, not as the machine's refusal).
  Nothing is named or bind-mounted, so nothing can leak: the
  namespace goes away when its last process exits, even on SIGKILL.
- Children started afterwards get PR_SET_PDEATHSIG from their own code
  (`--die-with-parent`); the process itself dies with its parent
  (tfolab.core.lifetime).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import socket
import struct
import threading
import time

from tfolab.core.errors import UserError

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
SIOCSIFMTU = 0x8922
IFF_UP = 0x1

_libc = ctypes.CDLL(None, use_errno=True)  # the C library already loaded: no ldconfig run
_libc.unshare.argtypes = [ctypes.c_int]
_libc.unshare.restype = ctypes.c_int


def enter_new_netns() -> str:
    """Unshare into a new network namespace; returns how ("root" or "user namespace")."""
    uid, gid = os.geteuid(), os.getegid()
    if uid == 0:
        if _libc.unshare(CLONE_NEWNET) == 0:
            return "root"
        code = ctypes.get_errno()
        raise UserError(
            f"cannot create a network namespace: {os.strerror(code)}",
            "run where unshare(CLONE_NEWNET) is allowed (not inside a restricted container)",
        )
    _wait_single_threaded()
    if _libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
        code = ctypes.get_errno()
        threads = os.listdir("/proc/self/task")
        if code == errno.EINVAL and len(threads) > 1:  # our bug, not the machine's refusal
            raise RuntimeError(
                f"unshare(CLONE_NEWUSER) needs a single-threaded process; {len(threads)} "
                f"threads were alive: {', '.join(sorted(t.name for t in threading.enumerate()))}"
            )
        raise UserError(
            f"no privileges for a lab network: unprivileged user namespaces are refused "
            f"({errno.errorcode.get(code, code)})",
            "run tfolab as root, or let users make them: "
            "sysctl -w kernel.unprivileged_userns_clone=1 "
            "or kernel.apparmor_restrict_unprivileged_userns=0",
        )
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"0 {uid} 1")
    _write("/proc/self/gid_map", f"0 {gid} 1")
    return "user namespace"


SINGLE_THREAD_WAIT_S = 1.0


def _wait_single_threaded() -> None:
    """Until the kernel counts one thread here: a helper thread that Python has joined
    (the slot and lock waits) may still be exiting, and unshare(CLONE_NEWUSER) refuses a
    process with a second thread (EINVAL; seen in 4 of 30 runs of a served class)."""
    if threading.active_count() > 1:
        return  # a live Python thread will not go: let unshare say so
    deadline = time.monotonic() + SINGLE_THREAD_WAIT_S
    while len(os.listdir("/proc/self/task")) > 1 and time.monotonic() < deadline:
        time.sleep(0.0005)


def _write(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


def require_lab_namespace() -> None:
    """Refuse to change a device outside a lab's namespace: lo's MTU, state and offloads
    are the lab's to set only after enter_new_netns. A caller that forgot (an offline
    script measuring skb heads once left the host's lo at MTU 1280 with TSO off) gets a
    RuntimeError here, before any ioctl. A lab's namespace is fresh: lo is its only
    device; the host's has others (and is PID 1's, where that can be read)."""
    devices = [line.split(":")[0].strip() for line in _read("/proc/self/net/dev")[2:]]
    if any(device != "lo" for device in devices if device):
        raise RuntimeError("refusing to change the host's lo: not inside a lab namespace")
    try:
        host = os.stat("/proc/1/ns/net").st_ino
    except OSError:
        return  # PID 1 unreadable: its namespace is not checked, the devices were
    if os.stat("/proc/self/ns/net").st_ino == host:
        raise RuntimeError("refusing to change the host's lo: not inside a lab namespace")


def _read(path: str) -> list[str]:
    with open(path) as handle:
        return handle.read().splitlines()


def set_loopback(up: bool = True, mtu: int | None = None) -> None:
    """Bring the namespace's lo up (and set its MTU) with two ioctls."""
    require_lab_namespace()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        name = b"lo".ljust(16, b"\0")
        if mtu is not None:
            fcntl.ioctl(sock, SIOCSIFMTU, name + struct.pack("i", mtu) + b"\0" * 20)
        flags_req = fcntl.ioctl(sock, SIOCGIFFLAGS, name + b"\0" * 24)
        flags = struct.unpack_from("H", flags_req, 16)[0]
        flags = flags | IFF_UP if up else flags & ~IFF_UP
        fcntl.ioctl(sock, SIOCSIFFLAGS, name + struct.pack("H", flags) + b"\0" * 22)


SIOCETHTOOL = 0x8946
ETHTOOL_STSO = 0x1F  # TCP segmentation offload
ETHTOOL_SGSO = 0x24  # generic segmentation offload


def set_segmentation_offload(on: bool, device: str = "lo") -> None:
    """Turn TSO and GSO of the namespace's `device` on or off (two SIOCETHTOOL ioctls).

    With them on, loopback hands TCP super-segments of up to 64 KiB to the
    stack, and a capture shows each write whole; with them off, TCP cuts every
    segment to the MSS, as on a real link. Labs about segment sizes turn them off.
    """
    require_lab_namespace()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for command in (ETHTOOL_STSO, ETHTOOL_SGSO):
            value = ctypes.create_string_buffer(struct.pack("II", command, int(on)), 8)
            request = device.encode().ljust(16, b"\0") + struct.pack("P", ctypes.addressof(value))
            fcntl.ioctl(sock, SIOCETHTOOL, request.ljust(40, b"\0"))

"""Enter a fresh, anonymous network namespace that dies with this process.

Rules:
- Only ever called in a process that exists for the lab (the runner, a probe):
  after it returns, this process's network is the lab's, not the host's.
- Root unshares CLONE_NEWNET directly. Anyone else gets a user namespace with
  their uid mapped to root (CLONE_NEWUSER | CLONE_NEWNET) where the kernel
  allows it. Nothing is named or bind-mounted, so nothing can leak: the
  namespace goes away when its last process exits, even on SIGKILL.
- Children started afterwards get PR_SET_PDEATHSIG from their own code
  (`--die-with-parent`); this module makes the process itself die with its parent.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import os
import signal
import socket
import struct

from tfolab.core.errors import UserError

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
PR_SET_PDEATHSIG = 1
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
SIOCSIFMTU = 0x8922
IFF_UP = 0x1

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.unshare.argtypes = [ctypes.c_int]
_libc.unshare.restype = ctypes.c_int
_libc.prctl.argtypes = [
    ctypes.c_int,
    ctypes.c_ulong,
    ctypes.c_ulong,
    ctypes.c_ulong,
    ctypes.c_ulong,
]
_libc.prctl.restype = ctypes.c_int


def die_with_parent() -> None:
    """SIGKILL this process when its parent dies; exit now if it already has."""
    parent = os.getppid()
    if _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != parent:
        os._exit(1)


def child_dies_with_parent() -> None:
    """A `preexec_fn` for programs without --die-with-parent (nginx): SIGKILL them when
    the process that started them dies. PR_SET_PDEATHSIG survives the exec."""
    if _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        os._exit(127)


def own_autogroup() -> None:
    """A session of its own, so a scheduler autogroup of its own at nice 0.

    With autogroups (kernel.sched_autogroup_enabled), CPU time is shared between
    sessions first: a lab run is then not weighed against whatever else its
    parent's session runs (served UIs lower their own group, tfolab.tui.classroom).
    Harmless where it cannot (already a group leader).
    """
    with contextlib.suppress(OSError):
        os.setsid()


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
    if _libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
        code = ctypes.get_errno()
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


def _write(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


LAB_RT_PRIORITY = 5


def realtime_permitted() -> tuple[bool, str]:
    """Whether the lab's processes may run at SCHED_FIFO 5 here, tried and undone at once.

    Lab processes are almost always asleep; on a busy machine a woken one can
    wait out another task's time slice (about 3 ms with EEVDF), which would be
    measured as TCP. A low real-time priority removes that (tfo-delay takes its
    own). It is only taken while a measurement slot is held (`prefer_realtime`):
    runs still setting up or waiting in line stay on normal scheduling, so they
    never compete at the measuring run's priority. Where it is not permitted,
    runs stay on normal scheduling.
    """
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(LAB_RT_PRIORITY))
    except OSError:
        return False, "normal scheduling (real-time priority not permitted): busy hosts add noise"
    normal_scheduling()
    return (
        True,
        f"lab processes at real-time priority {LAB_RT_PRIORITY} (SCHED_FIFO) while measuring",
    )


def _own_threads() -> list[int]:
    """Every thread of this process (a scheduling policy belongs to a thread)."""
    return [int(tid) for tid in os.listdir("/proc/self/task")]


def prefer_realtime(others: tuple[int, ...] = ()) -> bool:
    """Move this process's threads and `others` to SCHED_FIFO 5; False where not permitted."""
    try:
        for pid in (*_own_threads(), *others):
            os.sched_setscheduler(pid, os.SCHED_FIFO, os.sched_param(LAB_RT_PRIORITY))
    except OSError:
        return False
    return True


def normal_scheduling() -> None:
    """This process's threads back to SCHED_OTHER (always permitted: it lowers the priority)."""
    for tid in _own_threads():
        with contextlib.suppress(ProcessLookupError):
            os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))


def set_loopback(up: bool = True, mtu: int | None = None) -> None:
    """Bring the namespace's lo up (and set its MTU) with two ioctls."""
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
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for command in (ETHTOOL_STSO, ETHTOOL_SGSO):
            value = ctypes.create_string_buffer(struct.pack("II", command, int(on)), 8)
            request = device.encode().ljust(16, b"\0") + struct.pack("P", ctypes.addressof(value))
            fcntl.ioctl(sock, SIOCETHTOOL, request.ljust(40, b"\0"))

"""Make the lab namespace's lo receive every packet on one CPU, so each socket's
packets are received in the order they were transmitted.

Rules:
- Why: lo hands a transmitted packet to the receive path on the CPU that
  transmits it (loopback_xmit -> netif_rx -> enqueue_to_backlog on
  smp_processor_id(); net/core/dev.c, 6.1 and 6.18). Behind a qdisc that holds
  packets (netem), whichever CPU runs the qdisc when a packet is due transmits
  it, so two packets of one socket due microseconds apart can land in two CPUs'
  backlogs and be received in the other order (docs/TCP-NOTES.md, "lo's
  per-CPU backlogs").
- How: receive packet steering with a one-CPU map (lo's rx-0/rps_cpus). netif_rx
  then queues every packet on that CPU's backlog (get_rps_cpu), one FIFO, in the
  order the qdisc released them.
- Only the lab namespace's lo is touched, never the host's. The map is written
  through a sysfs instance that is never attached anywhere (fsopen/fsmount: a
  detached mount, gone when its descriptor closes); sysfs shows the network
  devices of the namespace that creates it, the caller's.
- Only root can: store_rps_map wants CAP_NET_ADMIN in the initial user
  namespace, and a detached mount CAP_SYS_ADMIN in the caller's mount
  namespace. A lab in a user namespace gets the refusal as an OSError.
"""

from __future__ import annotations

import ctypes
import os

# The mount API's system calls have one number on every architecture (since 5.2).
_SYS_FSOPEN, _SYS_FSCONFIG, _SYS_FSMOUNT = 430, 431, 432
_FSOPEN_CLOEXEC = 1
_FSCONFIG_CMD_CREATE = 6
_FSMOUNT_CLOEXEC = 1
RPS_MAP = "class/net/lo/queues/rx-0/rps_cpus"  # inside sysfs

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def may_steer() -> bool:
    """A cheap look: root of the initial user namespace (uid 0, identity uid map)."""
    if os.geteuid() != 0:
        return False
    try:
        with open("/proc/self/uid_map") as uid_map:
            return uid_map.read().split() == ["0", "0", "4294967295"]
    except OSError:
        return True  # no user namespaces in this kernel: uid 0 is root


def receiving_cpu() -> int:
    """The CPU lo's packets are received on: the lowest this process may run on."""
    return min(os.sched_getaffinity(0))


def cpu_mask(cpu: int) -> str:
    """A one-CPU mask in the kernel's bitmap format: hex, a comma every 32 bits."""
    digits = format(1 << cpu, "x")
    digits = digits.rjust(-(-len(digits) // 8) * 8, "0")
    return ",".join(digits[at : at + 8] for at in range(0, len(digits), 8))


def steer_lo_to_one_cpu(cpu: int) -> None:
    """Write lo's receive steering map (this namespace's lo) so only `cpu` receives.

    Raises OSError (errno and the step that failed) where this process cannot.
    """
    mount = _detached_sysfs()
    try:
        fd = os.open(RPS_MAP, os.O_WRONLY | os.O_CLOEXEC, dir_fd=mount)
        try:
            os.write(fd, cpu_mask(cpu).encode())
        finally:
            os.close(fd)
    finally:
        os.close(mount)


def steered_cpus() -> str:
    """lo's receive steering map as the kernel shows it (this namespace's lo)."""
    mount = _detached_sysfs()
    try:
        fd = os.open(RPS_MAP, os.O_RDONLY | os.O_CLOEXEC, dir_fd=mount)
        try:
            return os.read(fd, 256).decode().strip()
        finally:
            os.close(fd)
    finally:
        os.close(mount)


def _detached_sysfs() -> int:
    """A descriptor of a new sysfs mount that is attached nowhere."""
    context = _syscall("fsopen", _SYS_FSOPEN, b"sysfs", _FSOPEN_CLOEXEC)
    try:
        _syscall("fsconfig", _SYS_FSCONFIG, context, _FSCONFIG_CMD_CREATE, None, None, 0)
        return _syscall("fsmount", _SYS_FSMOUNT, context, _FSMOUNT_CLOEXEC, 0)
    finally:
        os.close(context)


def _syscall(name: str, number: int, *args: object) -> int:
    result = int(_libc.syscall(number, *args))
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{name}: {os.strerror(code)}")
    return result

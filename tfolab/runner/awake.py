"""Idle CPUs that poll instead of halting while a lab measures (a CPU latency request of 0).

Rules: a halted CPU wakes only when an interrupt arrives, and a halted
virtual CPU only when its host runs it again: microseconds on a quiet host,
milliseconds on a busy one, measured as TCP. While a lab's turn holds its slot
(tfolab.runner.turn) the runner asks for a CPU wake-up latency of 0 us, the
kernel's PM QoS interface: /dev/cpu_dma_latency kept open with 0 written.
cpuidle's governors then choose only the polling state. The request is the
open file: closing it ends it, and the kernel closes it when the process
dies, SIGKILL included, so nothing outlasts the run. The device is root's
(mode 0600); elsewhere, or without a cpuidle driver (the CPU halts without a
governor), the run measures with idle states and its note says so.
Measured in docs/DESIGN.md, "Measurement slots".
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

CPU_LATENCY_DEVICE = "/dev/cpu_dma_latency"
CPUIDLE = Path("/sys/devices/system/cpu/cpuidle")
NO_WAKE_LATENCY_US = 0


def cpuidle_driver() -> str:
    """The cpuidle driver ("none" without one: idle CPUs halt with no governor to ask)."""
    try:
        return (CPUIDLE / "current_driver").read_text().strip() or "none"
    except OSError:
        return "none"


def awake_permitted() -> tuple[bool, str]:
    """Whether a run here can keep idle CPUs polling while it measures, tried and let go at
    once, and what its measurements get, in words."""
    driver = cpuidle_driver()
    if driver == "none":
        return False, "no cpuidle driver: idle CPUs halt while measuring, wake-ups add noise"
    held = hold()
    if held is None:
        return False, (
            f"idle CPUs may halt while measuring ({CPU_LATENCY_DEVICE} is root's): "
            "wake-ups add noise"
        )
    os.close(held)
    return True, f"idle CPUs poll while measuring (CPU latency request 0 us, cpuidle {driver})"


def hold() -> int | None:
    """Ask for no wake-up latency; the request lasts as long as the returned descriptor is
    open. None where it cannot be asked for."""
    try:
        fd = os.open(CPU_LATENCY_DEVICE, os.O_WRONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        os.write(fd, struct.pack("=i", NO_WAKE_LATENCY_US))
    except OSError:
        os.close(fd)
        return None
    return fd

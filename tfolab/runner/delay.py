"""Delay backends: netem, the bundled NFQUEUE delayer, or none.

Each backend adds the one-way delay D to every packet on the namespace's lo
(so RTT = 2D). The command lines are built by pure functions (unit-tested, never
a shell string); `install_delay` runs them inside the lab namespace only.

Rules:
- `auto` picks netem, else nfqueue, else none; every result says which ran.
- nfqueue holds each skb charged to its socket where netem orphans it; with
  TCP_NODELAY autocorking would then hold the second write (3D, not 2D). So the
  nfqueue backend turns net.ipv4.tcp_autocorking off in the namespace, which
  restores netem's timing (TCP-NOTES.md, "Delay emulation").
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Literal

from tfolab.errors import UserError

Backend = Literal["netem", "nfqueue", "none"]
BackendChoice = Literal["auto", "netem", "nfqueue", "none"]
BACKEND_CHOICES: tuple[str, ...] = ("auto", "netem", "nfqueue", "none")
NFQUEUE_NUMBER = 7

# How exact each backend is, for the model's tolerance bands: the error of one
# delayed packet, including the stack's own processing of it, in ms.
# nfqueue: benchmarks/delay_accuracy.py measures p99 0.17 ms on a quiet host,
# about 0.3 ms on a busy one; netem's hrtimer is a little tighter (TCP-NOTES:
# 41.6 ms for the 4 packets of a request at D = 10); plain loopback leaves
# only the stack.
PER_PACKET_ERROR_MS: dict[str, float] = {"netem": 0.3, "nfqueue": 0.4, "none": 0.1}
# Scheduling and first-use costs of one measured interval on a quiet host, ms.
HOST_OVERHEAD_MS = 1.0


def format_ms(delay_ms: float) -> str:
    return f"{delay_ms:g}ms"


def netem_args(delay_ms: float, *, device: str = "lo") -> list[str]:
    return [
        "tc",
        "qdisc",
        "replace",
        "dev",
        device,
        "root",
        "netem",
        "delay",
        format_ms(delay_ms),
        "limit",
        "100000",
    ]


def nfqueue_rule_args(
    queue: int = NFQUEUE_NUMBER, *, iptables: str = "iptables", protocol: str = "tcp"
) -> list[str]:
    """Send every `protocol` packet leaving on lo to the queue (bypassed if no one listens)."""
    return [iptables, "-w", "-A", "OUTPUT", "-o", "lo", "-p", protocol,
            "-j", "NFQUEUE", "--queue-num", str(queue), "--queue-bypass"]  # fmt: skip


def delayer_args(executable: str, delay_ms: float, queue: int = NFQUEUE_NUMBER) -> list[str]:
    return [
        executable,
        "--queue",
        str(queue),
        "--delay-ms",
        f"{delay_ms:.6f}",
        "--die-with-parent",
        "--stats-json",
    ]


@dataclass
class InstalledDelay:
    """What is running in the namespace; `stop` collects the delayer's statistics."""

    backend: Backend
    delay_ms: float
    notes: list[str] = field(default_factory=list)
    delayer: subprocess.Popen[str] | None = None

    def stop(self) -> str:
        if self.delayer is None:
            return ""
        self.delayer.terminate()
        try:
            out, _ = self.delayer.communicate(timeout=3)
        except subprocess.TimeoutExpired:
            self.delayer.kill()
            out, _ = self.delayer.communicate()
        self.delayer = None
        return out.strip().splitlines()[-1] if out.strip() else ""


def netem_works() -> tuple[bool, str]:
    """Try a netem qdisc on this namespace's lo (call in a throwaway namespace)."""
    if shutil.which("tc") is None:
        return False, "tc (iproute2) is not installed"
    probe = subprocess.run(netem_args(1.0), capture_output=True, text=True, timeout=10)
    if probe.returncode != 0:
        said = (probe.stderr.strip().splitlines() or ["tc failed"])[-1].removeprefix("Error: ")
        return False, f"this kernel has no usable netem qdisc (tc: {said})"
    subprocess.run(["tc", "qdisc", "del", "dev", "lo", "root"], capture_output=True, timeout=10)
    return True, "tc qdisc netem works"


def iptables_command() -> str | None:
    for name in ("iptables", "iptables-nft", "iptables-legacy"):
        if shutil.which(name):
            return name
    return None


def nfqueue_works(delayer: str | None) -> tuple[bool, str]:
    """Try the NFQUEUE rule and bind the delayer (call in a throwaway namespace)."""
    iptables = iptables_command()
    if iptables is None:
        return False, "iptables is not installed"
    if delayer is None:
        return False, "the bundled tfo-delay is not built"
    try:
        installed = _install_nfqueue(0.0, iptables, delayer)
    except UserError as err:
        return False, err.reason
    installed.stop()
    return True, f"{iptables} NFQUEUE rule + tfo-delay bound"


def install_delay(choice: BackendChoice, delay_ms: float, delayer: str | None) -> InstalledDelay:
    """Install the chosen backend on this namespace's lo (the caller is in the lab namespace)."""
    if choice == "none" or (choice == "auto" and delay_ms == 0):
        note = "NO DELAY EMULATION: plain loopback"
        if delay_ms > 0:
            note += f" (the requested {delay_ms:g} ms was not applied)"
        return InstalledDelay("none", 0.0, [note])
    if choice in ("auto", "netem"):
        ok, why = netem_works()
        if ok:
            _run(netem_args(delay_ms), "netem")
            return InstalledDelay("netem", delay_ms)
        if choice == "netem":
            raise UserError(
                f"--backend netem: this kernel has no netem ({why})",
                "use --backend nfqueue (the bundled delayer) or auto, or load sch_netem",
            )
    iptables = iptables_command()
    if iptables is None or delayer is None:
        missing = "iptables is not installed" if iptables is None else "tfo-delay is not built"
        if choice == "nfqueue":
            raise UserError(
                f"--backend nfqueue: {missing}",
                "install iptables (apt-get install iptables) or reinstall tfolab",
            )
        raise UserError(
            f"no delay backend: netem is missing and {missing}",
            "install iptables, or use --backend none --delay 0",
        )
    return _install_nfqueue(delay_ms, iptables, delayer)


def _install_nfqueue(delay_ms: float, iptables: str, delayer: str) -> InstalledDelay:
    process = subprocess.Popen(
        delayer_args(delayer, delay_ms), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    ready = process.stdout.readline().strip()
    if ready != "READY":
        process.kill()
        _, err = process.communicate(timeout=5)
        raise UserError(
            f"the NFQUEUE delayer did not start: {err.strip() or 'no output'}",
            "run `tfolab doctor` to see what this machine supports",
        )
    installed = InstalledDelay("nfqueue", delay_ms, delayer=process)
    try:
        _run(nfqueue_rule_args(iptables=iptables), "iptables")
    except UserError:
        installed.stop()
        raise
    installed.notes.append("tcp_autocorking off in the namespace, so NFQUEUE matches netem")
    return installed


def _run(args: list[str], what: str) -> None:
    result = subprocess.run(args, capture_output=True, text=True, timeout=10)
    if result.returncode != 0:
        raise UserError(
            f"{what} failed: {result.stderr.strip() or result.returncode}",
            "run `tfolab doctor` to see what this machine supports",
        )

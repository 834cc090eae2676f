"""Delay backends: netem, the bundled NFQUEUE delayer, or none.

Each backend adds the one-way delay D to every packet on the namespace's lo
(so RTT = 2D). The command lines are built by pure functions (unit-tested, never
a shell string); `install_delay` runs them inside the lab namespace only. The
NFQUEUE rule needs no binary: tfolab.runner.nfrule speaks netlink itself.

Rules:
- `auto` picks netem, else nfqueue, else none; every result says which ran.
- nfqueue holds each skb charged to its socket where netem orphans it; with
  TCP_NODELAY autocorking would then hold the second write (3D, not 2D). So the
  nfqueue backend turns net.ipv4.tcp_autocorking off in the namespace, which
  restores netem's timing (docs/TCP-NOTES.md, "Delay emulation").
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Literal

from tfolab import kernel
from tfolab.errors import UserError
from tfolab.runner.nfrule import QUEUE_NUMBER as NFQUEUE_NUMBER
from tfolab.runner.nfrule import RuleRefused, install_rule, kernel_may_queue

Backend = Literal["netem", "nfqueue", "none"]
BackendChoice = Literal["auto", "netem", "nfqueue", "none"]
BACKEND_CHOICES: tuple[str, ...] = ("auto", "netem", "nfqueue", "none")

# How exact each backend is, for the model's tolerance bands: the error of one
# delayed packet, including the stack's own processing of it, in ms.
# nfqueue: benchmarks/delay_accuracy.py measures p99 0.17 ms on a quiet host,
# about 0.3 ms on a busy one; netem's hrtimer is a little tighter (docs/TCP-NOTES.md:
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
    rule_way: str = ""

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
        return False, f"this kernel has no netem qdisc; tc says: {said.rstrip('.')}"
    subprocess.run(["tc", "qdisc", "del", "dev", "lo", "root"], capture_output=True, timeout=10)
    return True, "tc qdisc netem works"


def nfqueue_works(delayer: str | None) -> tuple[bool, str]:
    """Install the NFQUEUE rule and bind the delayer (call in a throwaway namespace)."""
    if delayer is None:
        return False, "the bundled tfo-delay is not built"
    try:
        installed = _install_nfqueue(0.0, delayer)
    except UserError as err:
        return False, err.reason
    installed.stop()
    return True, f"rule through {installed.rule_way}, tfo-delay bound to queue {NFQUEUE_NUMBER}"


NO_BACKEND_FIX = (
    "use a kernel with sch_netem, or one with NFQUEUE in nf_tables or ip_tables; "
    "`tfolab doctor` shows what is missing"
)


def install_delay(choice: BackendChoice, delay_ms: float, delayer: str | None) -> InstalledDelay:
    """Install the chosen backend on this namespace's lo (the caller is in the lab namespace)."""
    if choice == "none" or (choice == "auto" and delay_ms == 0):
        return InstalledDelay("none", 0.0, ["NO DELAY EMULATION: plain loopback"])
    netem_why = "not tried"
    if choice in ("auto", "netem"):
        ok, netem_why = netem_works()
        if ok:
            _run(netem_args(delay_ms), "netem")
            return InstalledDelay("netem", delay_ms)
        if choice == "netem":
            raise UserError(
                f"--backend netem: {netem_why}", "use --backend nfqueue (the bundled delayer)"
            )
    if delayer is None:
        raise UserError("the bundled NFQUEUE delayer tfo-delay is not built", REINSTALL_FIX)
    try:
        return _install_nfqueue(delay_ms, delayer)
    except UserError as err:
        if choice == "nfqueue":
            raise
        raise UserError(
            f"no delay backend: {netem_why}, and {err.reason}", NO_BACKEND_FIX
        ) from None


REINSTALL_FIX = "reinstall tfolab so its C parts are built: pip install -e ."


def _install_nfqueue(delay_ms: float, delayer: str) -> InstalledDelay:
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
        rule = install_rule(NFQUEUE_NUMBER)
    except RuleRefused as refused:
        installed.stop()
        raise UserError(f"the NFQUEUE rule was refused ({refused})", NO_BACKEND_FIX) from None
    installed.rule_way = rule.way
    installed.notes.append(f"NFQUEUE rule installed through {rule.way}")
    installed.notes.append("tcp_autocorking off in the namespace, so NFQUEUE matches netem")
    return installed


def _run(args: list[str], what: str) -> None:
    result = subprocess.run(args, capture_output=True, text=True, timeout=10)
    if result.returncode != 0:
        raise UserError(
            f"{what} failed: {result.stderr.strip() or result.returncode}",
            "run `tfolab doctor` to see what this machine supports",
        )


def netem_may_exist() -> str | None:
    """A cheap look (no namespace) for netem: None when it may work, else why not."""
    if shutil.which("tc") is None:
        return "tc (iproute2) is not installed"
    found = kernel.kernel_config()
    if found is not None and not kernel.config_has(found[0], "NET_SCH_NETEM"):
        return "this kernel has no netem (it is built without sch_netem)"
    return None


def nfqueue_may_exist(delayer: str | None) -> str | None:
    """A cheap look (no namespace) for the NFQUEUE delayer: None when it may work."""
    if delayer is None:
        return "the bundled tfo-delay is not built"
    return kernel_may_queue()


def likely_backend(choice: BackendChoice, delay_ms: float, delayer: str | None) -> Backend:
    """The backend a run will most likely get, checked before anything is started.

    Raises UserError when the choice clearly cannot work here; the runner's own
    install is still the final word (a namespace may refuse what the config allows).
    """
    if choice == "none" or (choice == "auto" and delay_ms == 0):
        return "none"
    netem_why = netem_may_exist() if choice in ("auto", "netem") else None
    if choice == "netem":
        if netem_why:
            raise UserError(
                f"--backend netem: {netem_why}", "use --backend nfqueue (the bundled delayer)"
            )
        return "netem"
    nfqueue_why = nfqueue_may_exist(delayer)
    if choice == "auto" and netem_why is None:
        return "netem"
    if nfqueue_why is None:
        return "nfqueue"
    if choice == "nfqueue":
        raise UserError(f"--backend nfqueue: {nfqueue_why}", NO_BACKEND_FIX)
    raise UserError(f"no delay backend: {netem_why}, and {nfqueue_why}", NO_BACKEND_FIX)

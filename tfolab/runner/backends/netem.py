"""netem: the kernel's own delay qdisc on lo (`tc qdisc replace dev lo root netem delay D`).

The reference backend where the kernel has sch_netem. netem orphans each queued
skb, so autocorking behaves as without a delay. Its hrtimer is a little tighter
than the NFQUEUE delayer (docs/TCP-NOTES.md: 41.6 ms for the 4 packets of a
request at D = 10). Whichever CPU runs the qdisc when a packet is due hands it
to lo's receive path on that CPU, so the install also steers lo's receiving to
one CPU (receive_order.py): without it two packets of one socket may be received
in the other order. Only root can steer; in a user namespace netem is refused.
"""

from __future__ import annotations

import shutil
import subprocess

from tfolab.core import kernel
from tfolab.core.errors import UserError
from tfolab.runner import receive_order
from tfolab.runner.backends.base import Backend, InstalledDelay, Trial


def format_ms(delay_ms: float) -> str:
    return f"{delay_ms:g}ms"


def netem_args(delay_ms: float, *, device: str = "lo") -> list[str]:
    return ["tc", "qdisc", "replace", "dev", device, "root", "netem",
            "delay", format_ms(delay_ms), "limit", "100000"]  # fmt: skip


class Netem:
    name: Backend = "netem"
    per_packet_error_ms = 0.3
    fix = "load sch_netem (modprobe sch_netem), or use a kernel that has it"

    def unavailable(self, delayer: str | None) -> str | None:
        if shutil.which("tc") is None:
            return "tc (iproute2) is not installed"
        found = kernel.kernel_config()
        if found is not None and not kernel.config_has(found[0], "NET_SCH_NETEM"):
            return "this kernel has no netem (it is built without sch_netem)"
        if not receive_order.may_steer():
            return (
                "netem needs root here: it steers the lab's lo to receive on one CPU "
                "(keeping a socket's packets in order), which a user namespace may not"
            )
        return None

    def probe(self, delayer: str | None) -> Trial:
        try:
            self.install(1.0, delayer)
        except UserError as refused:
            return Trial("unsupported", refused.reason)
        remove_qdisc()
        return Trial("works", "tc qdisc netem works, and lo can be steered to one CPU")

    def install(
        self, delay_ms: float, delayer: str | None, *, record: bool = False
    ) -> InstalledDelay:
        """The qdisc, then lo steered to one CPU; a refusal (UserError, its reason in the
        words a probe reports) leaves neither."""
        if shutil.which("tc") is None:
            raise UserError("tc (iproute2) is not installed", self.fix)
        tried = subprocess.run(netem_args(delay_ms), capture_output=True, text=True, timeout=10)
        if tried.returncode != 0:
            said = (tried.stderr.strip().splitlines() or ["tc failed"])[-1].removeprefix("Error: ")
            raise UserError(
                f"this kernel has no netem qdisc; tc says: {said.rstrip('.')}", self.fix
            )
        cpu = receive_order.receiving_cpu()
        try:
            receive_order.steer_lo_to_one_cpu(cpu)
        except OSError as refused:
            remove_qdisc()
            raise UserError(
                f"netem works, but lo cannot be steered to one CPU here ({refused.strerror}), "
                "which keeps a socket's packets in order behind netem",
                "run tfolab as root for netem, or use --backend nfqueue",
            ) from None
        note = f"netem: lo receives every packet on CPU {cpu}, in the order netem releases them"
        return InstalledDelay("netem", delay_ms, notes=[note])


def remove_qdisc() -> None:
    subprocess.run(["tc", "qdisc", "del", "dev", "lo", "root"], capture_output=True, timeout=10)


NETEM = Netem()

"""nfqueue: the bundled delayer (tfo-delay) holds every TCP packet on lo for D.

A netfilter rule (nfrule.py: installed over netlink, no binary needed) sends
each TCP packet leaving on lo to queue 7; tfo-delay accepts it D later, with
queue-bypass so traffic flows if it dies.

Rule: an NFQUEUE-held skb stays charged to its socket where netem orphans it;
with TCP_NODELAY autocorking would then hold the second write until the first
leaves the queue (3D, not 2D). So this backend needs tcp_autocorking off in
the namespace, which restores netem's timing (docs/TCP-NOTES.md, "Delay
emulation"). Its error per packet: benchmarks/delay_accuracy.py measures p99
0.17 ms on a quiet host, about 0.3 ms on a busy one.
"""

from __future__ import annotations

import subprocess

from tfolab.core.errors import UserError
from tfolab.runner.backends.base import (
    NO_BACKEND_FIX,
    REINSTALL_FIX,
    Backend,
    InstalledDelay,
    Trial,
)
from tfolab.runner.backends.nfrule import QUEUE_NUMBER, RuleRefused, install_rule, kernel_may_queue


def delayer_args(executable: str, delay_ms: float, queue: int = QUEUE_NUMBER) -> list[str]:
    return [executable, "--queue", str(queue), "--delay-ms", f"{delay_ms:.6f}",
            "--die-with-parent", "--stats-json"]  # fmt: skip


class Nfqueue:
    name: Backend = "nfqueue"
    per_packet_error_ms = 0.4
    autocorking_off = True
    fix = "a kernel with NFQUEUE (CONFIG_NETFILTER_NETLINK_QUEUE) and nf_tables or ip_tables"

    def unavailable(self, delayer: str | None) -> str | None:
        if delayer is None:
            return "the bundled tfo-delay is not built"
        return kernel_may_queue()

    def probe(self, delayer: str | None) -> Trial:
        if delayer is None:
            return Trial("not_built", "the bundled tfo-delay is not built")
        try:
            installed = self.install(0.0, delayer)
        except UserError as err:
            return Trial("unsupported", err.reason)
        installed.stop()
        way = f"rule through {installed.rule_way}, tfo-delay bound to queue {QUEUE_NUMBER}"
        return Trial("works", way)

    def install(self, delay_ms: float, delayer: str | None) -> InstalledDelay:
        if delayer is None:
            raise UserError("the bundled NFQUEUE delayer tfo-delay is not built", REINSTALL_FIX)
        process = subprocess.Popen(
            delayer_args(delayer, delay_ms),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # an autogroup at nice 0, not a waiting UI's (core/autogroup)
        )
        assert process.stdout is not None
        if process.stdout.readline().strip() != "READY":
            process.kill()
            _, err = process.communicate(timeout=5)
            raise UserError(
                f"the NFQUEUE delayer did not start: {err.strip() or 'no output'}",
                "run `tfolab doctor` to see what this machine supports",
            )
        installed = InstalledDelay("nfqueue", delay_ms, delayer=process)
        try:
            rule = install_rule(QUEUE_NUMBER)
        except RuleRefused as refused:
            installed.stop()
            raise UserError(f"the NFQUEUE rule was refused ({refused})", NO_BACKEND_FIX) from None
        installed.rule_way = rule.way
        installed.notes.append(f"NFQUEUE rule installed through {rule.way}")
        installed.notes.append("tcp_autocorking off in the namespace, so NFQUEUE matches netem")
        return installed


NFQUEUE = Nfqueue()

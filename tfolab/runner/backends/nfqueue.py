"""nfqueue: the bundled delayer (tfo-delay) holds every TCP packet on lo for D.

A netfilter rule (nfrule.py: installed over netlink, no binary needed) sends
each TCP packet arriving on lo to queue 7; tfo-delay accepts it D later, with
queue-bypass so traffic flows if it dies.

Rules:
- The rule is at the receiving end (INPUT), where the sender's socket is no
  longer charged for the packet, as with netem: TCP Small Queues and
  autocorking see no delay on either (docs/TCP-NOTES.md, "Delay emulation").
- lo's receive path runs on the CPU that sends, so two packets of one socket
  could reach the INPUT hook in the other order. Where permitted (root), lo is
  steered to receive on one CPU (receive_order.py): one FIFO. In a user
  namespace it cannot be; there the delayer's release by send time (the
  netif_rx stamp) keeps the order unless a packet waits in a backlog longer
  than D plus the gap to the next (docs/TCP-NOTES.md, "lo's per-CPU backlogs").
- A packet socket sees each packet before its delay, so the capture is the
  delayer's own record of what it released and when (capture_delayer.py):
  tfo-delay writes it into a memory file made here (memfd: nothing on disk,
  gone with the last process holding it).
- Its error per packet: benchmarks/delay_accuracy.py measures the verdict's
  lateness at p99 0.15 ms on a quiet host (0.2 ms with the receiver's
  wake-up), about 0.3 ms on a busy one.
"""

from __future__ import annotations

import os
import subprocess

from tfolab.core.errors import UserError
from tfolab.runner import receive_order
from tfolab.runner.backends.base import (
    NO_BACKEND_FIX,
    REINSTALL_FIX,
    Backend,
    InstalledDelay,
    Trial,
)
from tfolab.runner.backends.nfrule import QUEUE_NUMBER, RuleRefused, install_rule, kernel_may_queue


def delayer_args(
    executable: str,
    delay_ms: float,
    queue: int = QUEUE_NUMBER,
    record_fd: int | None = None,
    drop_record_fd: int | None = None,
    late_record_fd: int | None = None,
) -> list[str]:
    record = [] if record_fd is None else ["--record-fd", str(record_fd)]
    if late_record_fd is not None:  # each record's lateness beside it (record.c)
        record += ["--late-record-fd", str(late_record_fd)]
    if drop_record_fd is not None:  # drop plans on stdin (drop.c), their packets recorded
        record += ["--control", "--drop-record-fd", str(drop_record_fd)]
    return [executable, "--queue", str(queue), "--delay-ms", f"{delay_ms:.6f}",
            "--die-with-parent", "--stats-json", *record]  # fmt: skip


class Nfqueue:
    name: Backend = "nfqueue"
    per_packet_error_ms = 0.4
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
        way = (
            f"rule through {installed.rule_way} at the receiving end (INPUT), "
            f"tfo-delay bound to queue {QUEUE_NUMBER}"
        )
        return Trial("works", way)

    def install(
        self, delay_ms: float, delayer: str | None, *, record: bool = False
    ) -> InstalledDelay:
        """The delayer, then the rule; `record`: it records what it releases into a
        memory file made here (the run's capture). A failure leaves nothing running."""
        if delayer is None:
            raise UserError("the bundled NFQUEUE delayer tfo-delay is not built", REINSTALL_FIX)
        steering = _steer_lo()
        record_fd = os.memfd_create("tfolab-delayed-packets", os.MFD_CLOEXEC) if record else None
        drop_fd = os.memfd_create("tfolab-dropped-packets", os.MFD_CLOEXEC) if record else None
        late_fd = os.memfd_create("tfolab-delayer-lateness", os.MFD_CLOEXEC) if record else None
        installed = InstalledDelay(
            "nfqueue", delay_ms, record_fd=record_fd, drop_record_fd=drop_fd, late_record_fd=late_fd
        )
        try:
            installed.delayer = subprocess.Popen(
                delayer_args(
                    delayer,
                    delay_ms,
                    record_fd=record_fd,
                    drop_record_fd=drop_fd,
                    late_record_fd=late_fd,
                ),
                stdin=subprocess.PIPE if record else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                pass_fds=tuple(fd for fd in (record_fd, drop_fd, late_fd) if fd is not None),
                start_new_session=True,  # an autogroup at nice 0, not a waiting UI's
            )
            assert installed.delayer.stdout is not None
            if installed.delayer.stdout.readline().strip() != "READY":
                installed.delayer.kill()
                _, err = installed.delayer.communicate(timeout=5)
                installed.delayer = None  # waited for: nothing left for stop()
                raise UserError(
                    f"the NFQUEUE delayer did not start: {err.strip() or 'no output'}",
                    "run `tfolab doctor` to see what this machine supports",
                )
            rule = install_rule(QUEUE_NUMBER)
        except RuleRefused as refused:
            installed.stop()
            raise UserError(f"the NFQUEUE rule was refused ({refused})", NO_BACKEND_FIX) from None
        except BaseException:
            installed.stop()
            raise
        installed.rule_way = rule.way
        installed.notes.append(
            f"NFQUEUE rule installed through {rule.way}, at the receiving end (INPUT)"
        )
        installed.notes.append(steering)
        if record:
            installed.notes.append(
                "packets captured by the delayer as it releases them (tcpdump on lo "
                "would show them before their delay)"
            )
        return installed


def _steer_lo() -> str:
    """Steer lo to receive on one CPU where permitted; what was done, for the notes."""
    cpu = receive_order.receiving_cpu()
    try:
        receive_order.steer_lo_to_one_cpu(cpu)
    except OSError as refused:
        return (
            f"lo is not steered to one CPU ({refused.strerror}): the delayer releases by "
            "send time instead"
        )
    return f"lo receives every packet on CPU {cpu}, in the order they were sent"


NFQUEUE = Nfqueue()

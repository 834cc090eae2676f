"""`python -m tfolab.runner.probe`: what a lab namespace can do on this machine.

Rules: runs in a process of its own, enters a throwaway namespace exactly as the
runner does, tries netem and NFQUEUE there, prints one ProbeReport as JSON and
exits; the namespace, rule, qdisc and delayer vanish with it. `run_probe` is
the parent's side: it starts the probe and reads the report back, typed.
"""

from __future__ import annotations

import subprocess
import sys

import msgspec

from tfolab.core import lifetime, native
from tfolab.core.errors import UserError
from tfolab.runner import netns
from tfolab.runner.backends import BACKENDS, Trial

NOT_TRIED = Trial("not_tried", "not tried (no namespace)")
PROBE_TIMEOUT_S = 60


class ProbeReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A fresh namespace and how it was made, or why none; each backend tried in it."""

    namespace: str | None = None  # "root" or "user namespace" (netns.enter_new_netns)
    namespace_error: str | None = None  # set: no namespace, so nothing was tried
    netem: Trial = NOT_TRIED
    nfqueue: Trial = NOT_TRIED


class ProbeFailed(Exception):
    """The probe gave no report (it crashed or hung): a bug or a broken install, never a "no"."""


def probe() -> ProbeReport:
    lifetime.die_with_parent()
    try:
        namespace = netns.enter_new_netns()
        netns.set_loopback(True)
    except (UserError, OSError) as err:
        return ProbeReport(namespace_error=err.reason if isinstance(err, UserError) else str(err))
    delayer = native.optional_executable("tfo-delay")
    return ProbeReport(
        namespace=namespace,
        netem=BACKENDS["netem"].probe(delayer),
        nfqueue=BACKENDS["nfqueue"].probe(delayer),
    )


def run_probe() -> ProbeReport:
    """The probe's report, from a process of its own; ProbeFailed if it gave none."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tfolab.runner.probe"],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise ProbeFailed(f"no report within {PROBE_TIMEOUT_S} s") from None
    try:
        return msgspec.json.decode(done.stdout, type=ProbeReport)
    except msgspec.DecodeError:
        raise ProbeFailed(done.stderr.strip()[-200:] or "no report") from None


if __name__ == "__main__":
    sys.stdout.buffer.write(msgspec.json.encode(probe()) + b"\n")
    sys.exit(0)

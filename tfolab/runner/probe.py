"""`python -m tfolab.runner.probe`: what a lab namespace can do on this machine.

Rules: runs in a process of its own, enters a throwaway namespace exactly as the
runner does, tries netem and NFQUEUE there, prints one JSON object and exits;
the namespace, rule, qdisc and delayer vanish with it.
"""

from __future__ import annotations

import json
import sys

from tfolab.core import lifetime, native
from tfolab.core.errors import UserError
from tfolab.runner import netns
from tfolab.runner.backends import BACKENDS


def probe() -> dict[str, object]:
    report: dict[str, object] = {}
    lifetime.die_with_parent()
    try:
        report["namespace"] = netns.enter_new_netns()
        netns.set_loopback(True)
    except (UserError, OSError) as err:
        report["namespace_error"] = err.reason if isinstance(err, UserError) else str(err)
        return report
    delayer = native.optional_executable("tfo-delay")
    report["netem"] = list(BACKENDS["netem"].probe(delayer))
    report["nfqueue"] = list(BACKENDS["nfqueue"].probe(delayer))
    return report


if __name__ == "__main__":
    print(json.dumps(probe()))
    sys.exit(0)

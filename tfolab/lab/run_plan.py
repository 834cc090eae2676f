"""A LabPlan a real run may start: what only a real run needs checked, before anything starts.

Rules:
- `for_real()` checks, before any process or namespace exists: the backend,
  the machine-wide slots, what a real run cannot honour and a served
  session's budget.
- It keeps the model's prediction those checks read (RunPlan.prediction); the
  run predicts again only with what the runner measured (the delay that
  really ran, the segment truesize).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from tfolab.core import native
from tfolab.core.errors import UserError
from tfolab.core.slots import SlotTable
from tfolab.lab import served_budget
from tfolab.lab.plan import LabPlan
from tfolab.lab.prediction import predict
from tfolab.lab.results import LabResult
from tfolab.runner.backends import BACKEND_CHOICES, likely_backend

PINGPONG_SYSCTL = "/proc/sys/net/ipv4/tcp_pingpong_thresh"


@dataclass(frozen=True)
class RunPlan:
    """A LabPlan a real run may start: its backend checked, the model's prediction kept."""

    plan: LabPlan
    backend: str  # as asked: auto, netem, nfqueue or none
    prediction: LabResult  # the model's, on the backend the run will most likely get


def for_real(lab_plan: LabPlan, backend: str) -> RunPlan:
    """What a real run would refuse after its network is up, refused before anything starts."""
    if backend not in BACKEND_CHOICES:
        raise UserError(
            f"unknown backend {backend!r}", f"pick one of: {', '.join(BACKEND_CHOICES)}"
        )
    drops = any(p.config.drop or p.config.middlebox != "none" for p in lab_plan.scenarios)
    delayer = native.optional_executable("tfo-delay")
    likely = likely_backend(backend, lab_plan.delay_ms, delayer, drops=drops)  # type: ignore[arg-type]
    SlotTable.open()  # the machine-wide measurement slots are usable (and agree on N)
    configs = [p.config for p in lab_plan.scenarios]
    if any(c.fastopen_queue_full for c in configs):
        raise UserError(
            "fastopen_queue_full is a model-only setting: a real run cannot fill the server's "
            "Fast Open queue, so the kernel would accept the SYN's data",
            "see it with `tfolab simulate`, or drop that --set",
        )
    if any(c.pingpong_thresh != 1 for c in configs) and not os.path.exists(PINGPONG_SYSCTL):
        raise UserError(
            "this kernel has no net.ipv4.tcp_pingpong_thresh sysctl",
            "drop the pingpong_thresh setting (the sysctl exists since Linux 6.7; "
            "before, the threshold is built in)",
        )
    prediction = predict(lab_plan, backend=likely)
    served_budget.check_run(prediction)  # a served session's run fits the class's budget
    return RunPlan(lab_plan, backend, prediction)

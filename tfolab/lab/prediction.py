"""The model's prediction of a plan: every scenario simulated on this kernel's rules.

Rules:
- Pure of the runner: a prediction reads this kernel's facts (HZ, tcp_rmem,
  its version) and, for a real run, what the runner measured (the segment
  truesize per MTU, the delay that ran, whether it got real-time priority).
- A scenario the model refuses (its domain, model/domain.py) is a UserError
  naming the scenario.
"""

from __future__ import annotations

import dataclasses

from tfolab.core import kernel
from tfolab.core.errors import UserError
from tfolab.lab.plan import LabPlan
from tfolab.lab.results import LabResult, Measurement, ScenarioResult
from tfolab.model import Accuracy, simulate
from tfolab.model.rcv_space import ReceiveMemory, receive_memory_for
from tfolab.runner.backends import (
    BACKENDS,
    HOST_OVERHEAD_MS,
    HOST_OVERHEAD_NORMAL_SCHEDULING_MS,
)


def receive_memory(
    mtu: int | None = None, skb_heads: dict[int, int] | None = None
) -> ReceiveMemory:
    """This kernel's receive-memory rules for the model (its version and tcp_rmem), with
    the segment overhead the runner measured at this MTU where it did."""
    (_, default, high), _ = kernel.tcp_rmem()
    version = kernel.kernel_version()
    if version == (0, 0):
        rules = ReceiveMemory(rmem_default=default, rmem_max=high)
    else:
        rules = receive_memory_for(version, default, high)
    measured = (skb_heads or {}).get(mtu) if mtu is not None else None
    if measured is not None and measured > 0:
        rules = dataclasses.replace(rules, skb_head_truesize=measured)
    return rules


def accuracy_for(backend: str, realtime: bool = True) -> Accuracy:
    """How exact a run is: the backend's error per packet, and the host's scheduling."""
    return Accuracy(
        per_packet_delay_error_ms=BACKENDS.get(backend, BACKENDS["nfqueue"]).per_packet_error_ms,
        host_overhead_ms=HOST_OVERHEAD_MS if realtime else HOST_OVERHEAD_NORMAL_SCHEDULING_MS,
    )


def predict(
    lab_plan: LabPlan,
    *,
    backend: str = "nfqueue",
    hz: int | None = None,
    realtime: bool = True,
    skb_heads: dict[int, int] | None = None,
    delay_ms: float | None = None,
) -> LabResult:
    """The model alone: every scenario simulated, no measurements.

    `skb_heads`: a received segment's truesize beyond its payload per MTU, as
    the runner measured it; without it the kernel generation's estimate.
    `delay_ms`: the delay that really ran, where it is not the plan's.
    """
    hz = hz or kernel.kernel_hz()[0]
    delay = lab_plan.delay_ms if delay_ms is None else delay_ms
    scenarios = []
    for p in lab_plan.scenarios:
        try:
            sim = simulate(
                p.config,
                one_way_delay_ms=delay,
                iterations=p.iterations,
                hz=hz,
                accuracy=accuracy_for(backend, realtime),
                receive_space_bytes=kernel.receive_space_bytes()[0],
                receive_memory=receive_memory(p.config.mtu, skb_heads or {}),
            )
        except ValueError as err:
            raise UserError(f"scenario {p.name}: {err}", "check --delay and --set values") from None
        measurements = [
            Measurement(pred.i, None, pred.predicted_ms, pred.tolerance_ms)
            for pred in sim.predictions
        ]
        scenarios.append(ScenarioResult(p, sim, measurements))
    return LabResult(lab_plan.lab.name, delay, backend, kernel.kernel_release(), scenarios, hz=hz)

"""Real captures from this project's 6.18 host, typed, and the model they are compared with.

The host: Linux 6.18.44, tcp_rmem 4096 131072 33554432 (window scale 10), and
a received segment's skb head measured at 832 bytes (runner/truesize.py).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import msgspec

from tfolab.lab import packets
from tfolab.lab.catalog import find_lab
from tfolab.lab.packet_rows import captured_rows, model_rows, model_starts
from tfolab.lab.plan import plan
from tfolab.model import Accuracy, Simulation, simulate
from tfolab.model.captured import CapturedRow
from tfolab.model.loop import ReaderChoice
from tfolab.model.rcv_space import ReceiveMemory, receive_memory_for
from tfolab.model.simulation import with_lock_early

CAPTURES = Path(__file__).parent / "captures"
RMEM = (4096, 131072, 33554432)
SKB_HEAD = 832


def load(name: str) -> tuple[float, list[CapturedRow]]:
    """A capture's delay and rows (tests/labs/captures/NAME.json)."""
    data = json.loads((CAPTURES / f"{name}.json").read_text())
    return data["delay_ms"], msgspec.convert(data["captured"], list[CapturedRow])


def model(
    lab: str,
    scenario: str,
    settings: dict[str, str],
    iterations: int,
    delay_ms: float,
    accuracy: Accuracy | None = None,
) -> Simulation:
    """The scenario as the model predicts it on this host (`accuracy`: the backend's)."""
    rules = dataclasses.replace(
        receive_memory_for((6, 18), RMEM[1], RMEM[2]), skb_head_truesize=SKB_HEAD
    )
    return simulate_lab(lab, scenario, settings, iterations, delay_ms, rules, accuracy)


def simulate_lab(
    lab: str,
    scenario: str,
    settings: dict[str, str],
    iterations: int,
    delay_ms: float,
    memory: ReceiveMemory,
    accuracy: Accuracy | None = None,
) -> Simulation:
    """A lab's scenario, planned as `tfolab run` plans it, through the model at HZ 250
    with `memory`'s buffers (the host's here, the VM's in vm_captures.py) and, where
    given, the delay backend's accuracy (it sets the band of the round-trip races)."""
    (planned,) = plan(find_lab(lab), scenario, iterations, settings, delay_ms=delay_ms).scenarios
    return simulate(
        planned.config,
        one_way_delay_ms=delay_ms,
        iterations=iterations,
        hz=250,
        receive_space_bytes=memory.rmem_max,
        receive_memory=memory,
        **({} if accuracy is None else {"accuracy": accuracy}),
    )


def disagrees(sim: Simulation, rows: list[CapturedRow]) -> bool:
    """This one timeline against the capture, no other outcome searched."""
    aligned = packets.pairs(
        model_rows(sim),
        captured_rows(rows),
        model_starts(sim),
        {0: 0.0},
        same_instant=not sim.one_way_delay_ms,
    )
    return any(pair.disagreement is not None for pair in aligned)


def unneeded(comparison: packets.PacketComparison, rows: list[CapturedRow]) -> list[ReaderChoice]:
    """The lock points the comparison took that the capture agrees without."""
    chosen = comparison.simulation
    return [
        choice
        for choice in sorted(chosen.lock_early)
        if not disagrees(with_lock_early(chosen, chosen.lock_early - {choice}), rows)
    ]

"""Real captures from CI's VM, typed, and the model they are compared with.

The VM: Debian's Linux 6.1 (netem), tcp_rmem 4096 131072 6291456 (window scale 7),
HZ 250. The host's counterpart is tests/labs/host_captures.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from tfolab.lab.catalog import find_lab
from tfolab.lab.plan import plan
from tfolab.model import Simulation, simulate
from tfolab.model.captured import CapturedRow
from tfolab.model.rcv_space import receive_memory_for

CAPTURES = Path(__file__).parent / "captures"
RMEM = (4096, 131072, 6291456)
LINUX_6_1 = (6, 1)


def load(name: str) -> tuple[float, list[CapturedRow]]:
    """A capture's delay and rows (tests/labs/captures/NAME.json)."""
    data = json.loads((CAPTURES / f"{name}.json").read_text())
    return data["delay_ms"], msgspec.convert(data["captured"], list[CapturedRow])


def model(
    lab: str,
    scenario: str,
    settings: dict[str, str],
    *,
    delay_ms: float,
    iterations: int = 3,
    release: tuple[int, int] = LINUX_6_1,
) -> Simulation:
    """The scenario as the model predicts it in the VM (or, with `release`, on another
    kernel generation with the VM's buffers)."""
    (planned,) = plan(find_lab(lab), scenario, iterations, settings, delay_ms=delay_ms).scenarios
    return simulate(
        planned.config,
        one_way_delay_ms=delay_ms,
        iterations=iterations,
        hz=250,
        receive_space_bytes=RMEM[2],
        receive_memory=receive_memory_for(release, RMEM[1], RMEM[2]),
    )

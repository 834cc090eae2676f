"""Real captures from CI's VM, typed, and the model they are compared with.

The VM: Debian's Linux 6.1 (netem), tcp_rmem 4096 131072 6291456 (window scale 7),
HZ 250. The host's counterpart is tests/labs/host_captures.py.
"""

from __future__ import annotations

from tests.labs.host_captures import load, simulate_lab
from tfolab.model import Accuracy, Simulation
from tfolab.model.rcv_space import receive_memory_for

RMEM = (4096, 131072, 6291456)
LINUX_6_1 = (6, 1)
__all__ = ["load", "model"]


def model(
    lab: str,
    scenario: str,
    settings: dict[str, str],
    *,
    delay_ms: float,
    iterations: int = 3,
    release: tuple[int, int] = LINUX_6_1,
    accuracy: Accuracy | None = None,
) -> Simulation:
    """The scenario as the model predicts it in the VM (or, with `release`, on another
    kernel generation with the VM's buffers)."""
    memory = receive_memory_for(release, RMEM[1], RMEM[2])
    return simulate_lab(lab, scenario, settings, iterations, delay_ms, memory, accuracy)

"""Spies on the comparison's searches (tfolab/lab/packets.py): which extra simulations a
search ran, in order. Each installs itself with the test's monkeypatch and returns the
list it fills as the comparison runs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tfolab.lab import packets
from tfolab.model import Simulation
from tfolab.model.loop import ReaderChoice
from tfolab.model.simulation import other_buckets, with_lock_early


def wheel_searches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The connection of each other timer-wheel position the comparison simulates."""
    tried: list[int] = []
    real = other_buckets  # what packets.py imported

    def counting(sim: Simulation, connection: int) -> Iterator[Simulation]:
        for other in real(sim, connection):
            tried.append(connection)
            yield other

    monkeypatch.setattr(packets, "other_buckets", counting)
    return tried


def lock_searches(monkeypatch: pytest.MonkeyPatch) -> list[frozenset[ReaderChoice]]:
    """The lock points of each simulation the comparison's lock-point search runs."""
    tried: list[frozenset[ReaderChoice]] = []
    real = with_lock_early

    def counting(base: Simulation, lock_early: frozenset[ReaderChoice]) -> Simulation:
        tried.append(lock_early)
        return real(base, lock_early)

    monkeypatch.setattr(packets, "with_lock_early", counting)
    return tried

"""The lock-point search tries the points of the earliest disagreement's own connection
first, and follows an outcome that clears that connection at once (lab/packets.py).

A real capture from this host (6.18, NFQUEUE): fastopen large-data at MTU 576 with
D = 0.02 ms, five connections, each of which needs a take and a release lock point
(the client's read() held its socket while the answer arrived and let it go before the
last 380 bytes). Trying every connection's points at every step spent the search's
400 simulations on two connections, and the run disagreed (host fuzz seed 5224).
"""

from __future__ import annotations

import pytest

from tests.labs import host_captures
from tfolab.lab import packets
from tfolab.model import Simulation

NAME = "fastopen-large-data-mtu576-d0.02-6.18-five-takes"


def model() -> Simulation:
    return host_captures.model("fastopen", "large-data", {"mtu": "576"}, 5, delay_ms=0.02)


def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many simulations the search runs, counted as it calls with_lock_early."""
    calls = [0]
    real = packets.with_lock_early

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(packets, "with_lock_early", counting)
    return calls


def test_every_connection_gets_its_take_and_release(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = counted(monkeypatch)
    comparison = packets.compare(model(), host_captures.load(NAME)[1], {})
    assert comparison.sentences == []
    takes = {c for c in comparison.simulation.lock_early if c[3] == "take"}
    assert takes == {(n, "client", 2621, "take") for n in range(2, 7)}
    assert comparison.races_used >= 10  # and the capture's other named races
    assert calls[0] <= 60, calls[0]  # 30 on this capture; 374 before, 2 connections found


def test_without_the_own_connection_first_the_budget_runs_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(packets, "_later", lambda *args: False)
    monkeypatch.setattr(packets, "_wrong_connection", lambda *args: None)
    comparison = packets.compare(model(), host_captures.load(NAME)[1], {})
    assert any("ack 2621" in s for s in comparison.sentences), comparison.sentences

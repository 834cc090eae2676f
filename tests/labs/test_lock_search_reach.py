"""The readers' lock-point search (packets._reader_races) runs only while a disagreement
about TCP is left. A hold is an instant in the model: a lock point changes which ACKs
leave at that instant, and their windows, never only when a segment arrives; so where
times alone disagree (a slow or emulated host, late everywhere) no point can remove one.
CI's VM once spent 342 s of a 380 s comparison on it (fuzzer seed 5403: `transfer long`
at D = 18.69, 4 iterations, every arrival 4-18 ms late), and the fuzzer's timeout called
that a crash.

No real run: the "capture" is the model's own segments, made late.
"""

from __future__ import annotations

import msgspec
import pytest

from tests.captured_from_model import as_captured
from tests.labs import vm_captures
from tests.labs.search_spies import lock_searches
from tfolab.lab import packet_rows, packets
from tfolab.lab.catalog import find_lab
from tfolab.lab.plan import plan
from tfolab.lab.prediction import predict
from tfolab.model import Simulation
from tfolab.model.loop import ReaderChoice

# fuzzer seed 5403's case, the one CI's VM timed out on
SETTINGS = {
    "cookie_cache": "warm",
    "fastopen_sysctl": "1738",
    "first_write_bytes": "1",
    "request_bytes": "53",
    "server_fastopen_qlen": "228176",
}


def _long(delay_ms: float = 18.69, iterations: int = 4) -> Simulation:
    lab = find_lab("transfer")
    result = predict(plan(lab, "long", iterations, SETTINGS, delay_ms=delay_ms), hz=250)
    sim = result.scenarios[0].simulation
    assert sim.lock_points  # the search would have points to try
    return sim


def _compared(
    sim: Simulation, late_ms: float, monkeypatch: pytest.MonkeyPatch, kernel: Simulation
) -> tuple[packets.PacketComparison, list[frozenset[ReaderChoice]]]:
    """`kernel`'s segments, each `late_ms` late, compared with `sim`; and the lock points
    of every simulation the search ran."""
    tried = lock_searches(monkeypatch)
    starts = packet_rows.model_starts(kernel)
    rows = [r for r in packet_rows.model_rows(kernel) if not r.optional]
    captured = [
        msgspec.structs.replace(c, t_ms=c.t_ms + late_ms)
        for c in as_captured(rows, origin_ms=starts[0])
    ]
    measured = {i: s - starts[0] for i, s in starts.items()}
    return packets.compare(sim, captured, measured), tried


def test_a_capture_late_everywhere_runs_no_lock_point_simulation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sim = _long()
    comparison, tried = _compared(sim, 6.0, monkeypatch, kernel=sim)
    assert comparison.disagreements and comparison.timing_only
    assert tried == []
    assert comparison.simulation.lock_early == frozenset()


def test_a_lock_point_the_capture_shows_is_still_found_under_the_lateness(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A capture late everywhere from a kernel whose reader took its socket where that
    changes what TCP sent (CI's VM, handshake plain at MTU 9000, a 17000-byte request at
    D = 0: the client's read held the socket as the echo's second segment arrived, and
    its ACK offered 440): the search runs, finds that point, and leaves only the times."""
    sim = vm_captures.model(
        "handshake", "plain", {"mtu": "9000", "request_bytes": "17000"}, delay_ms=0
    )
    take = next(
        p
        for p in sim.lock_points
        if (p.connection, p.side, p.end, p.kind) == (2, "client", 8949, "take")
    )
    kernel = packets.with_lock_early(sim, frozenset({take.key}))
    comparison, tried = _compared(sim, 6.0, monkeypatch, kernel=kernel)
    assert tried
    assert comparison.disagreements and comparison.timing_only
    assert comparison.simulation.lock_early == frozenset({take.key})

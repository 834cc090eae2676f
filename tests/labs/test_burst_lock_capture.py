"""With a delay, a woken reader races what arrives with the segment that woke it.

The captures are real ones from this host (Linux 6.18.44, NFQUEUE delayer,
tcp_rmem 4096 131072 33554432, so window scale 10): handshake plain with a
48839-byte request at lo's MTU, 4 connections. Each request and each response
leaves as two GSO packets (32741 + 16098, 32768 + 16071) some microseconds
apart, and the delayer keeps that gap. Reading after both packets (the
model's default) offers 93 from then on; a reader that read the first packet
and let its socket go before the second arrived offers 109 (tcp_grow_window
judged the second with the first freed); a server whose accept() held the new
socket (inet_accept: lock_sock, graft, release_sock) as the first request
packet arrived offered 64, then 77 (that packet processed from the backlog,
sk_backlog.len still charged). Fuzzer seed 5108's disagreement.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from tfolab.lab import packets
from tfolab.lab.catalog import find_lab
from tfolab.lab.disagreements import WrongWindow
from tfolab.lab.plan import plan
from tfolab.model import Segment, Simulation, simulate
from tfolab.model.captured import CapturedRow
from tfolab.model.loop import World
from tfolab.model.rcv_space import receive_memory_for
from tfolab.model.simulation import with_lock_early

CAPTURES = Path(__file__).parent / "captures"
RMEM = (4096, 131072, 33554432)  # this host's tcp_rmem: 32 MiB, window scale 10
NAMES = ["d0.07-6.18-client-lets-go", "d0.07-6.18-both-let-go", "d1-6.18-accept-holds"]


def capture(name: str) -> tuple[float, list[CapturedRow]]:
    data = json.loads((CAPTURES / f"handshake-48839-{name}.json").read_text())
    return data["delay_ms"], msgspec.convert(data["captured"], list[CapturedRow])


def model(delay_ms: float) -> Simulation:
    lab = find_lab("handshake")
    (scenario,) = plan(lab, "plain", 4, {"request_bytes": "48839"}, delay_ms=delay_ms).scenarios
    return simulate(
        scenario.config,
        one_way_delay_ms=delay_ms,
        iterations=4,
        hz=250,
        receive_space_bytes=RMEM[2],
        receive_memory=receive_memory_for((6, 18), RMEM[1], RMEM[2]),
    )


def compared(name: str) -> packets.PacketComparison:
    delay_ms, rows = capture(name)
    return packets.compare(model(delay_ms), rows, {})


def windows(sim: Simulation, connection: int, sender: str) -> list[int | None]:
    return [
        e.window
        for e in sim.events
        if isinstance(e, Segment) and e.connection == connection and e.sender == sender
        and "SYN" not in e.flags
    ]  # fmt: skip


@pytest.mark.parametrize("name", NAMES)
def test_every_capture_agrees_through_its_lock_points(name: str) -> None:
    comparison = compared(name)
    assert comparison.sentences == []
    assert comparison.simulation.lock_early  # the other outcome, taken
    assert comparison.races_used >= len(comparison.simulation.lock_early)


def test_the_lock_points_with_a_delay_are_where_more_arrives_at_once() -> None:
    """accept()'s hold at the handshake ACK (end 1), the server's read of the first
    request packet, the client's of the first response packet: per connection."""
    points = [p.key for p in model(1).lock_points if p.connection == 1]
    assert points == [(1, "server", 1, "take"), (1, "server", 32742, "take"),
                      (1, "client", 32769, "take")]  # fmt: skip


def test_a_reader_that_lets_go_between_the_packets_offers_109() -> None:
    sim = model(0.07)
    assert windows(sim, 1, "client")[3:] == [93, 93, 93, 93]  # after the request's 3
    took = with_lock_early(sim, frozenset({(1, "client", 32769, "take")}))
    let_go = with_lock_early(took, took.lock_early | {(1, "client", 48840, "release")})
    assert windows(let_go, 1, "client")[3:] == [93, 109, 109, 109]


def test_accept_holding_the_socket_gives_64_then_77() -> None:
    sim = model(1)
    held = with_lock_early(sim, frozenset({(1, "server", 1, "take")}))
    detached = with_lock_early(held, held.lock_early | {(1, "server", 32742, "detach")})
    assert windows(detached, 1, "server")[:2] == [64, 77]


def _lock_points_only_without_a_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule before: with a delay a burst's reader always read after all of it."""
    takes = World._takes

    def old(self: World, *args: object, **kwargs: object) -> bool:
        if self.env.link.one_way_delay_ns:
            return False
        return takes(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(World, "_takes", old)


@pytest.mark.parametrize("name", NAMES)
def test_the_old_rule_misses_the_windows(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _lock_points_only_without_a_delay(monkeypatch)
    found = compared(name).disagreements
    assert found and all(isinstance(d, WrongWindow) for d in found)

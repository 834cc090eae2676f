"""In CI's VM a reader woken by the first of two packets lets its socket go before the
second arrives, and the client acks the first alone (a take and a release lock point).

CI's VM (Debian's 6.1, netem, HZ 250, window scale 7), the VM fuzzer's seed 5143 case:
fastopen cookie-request with a 59907-byte request at D = 29 ms, one iteration. The
echo's two GSO packets (32768 + 27139 bytes) reached the client 0.5 ms apart; the
client acked 32769 before the second arrived, then 59908 with its FIN. The read()
the first packet woke took the socket, copied it and released it (tcp_cleanup_rbuf:
the ACK of 32769) before the second came. When the fuzzer first met it, the search
for lock points started from the earliest disagreement about time (the VM's late
first iteration) and never tried these points; it now anchors on the earliest
disagreement about TCP (packets._first_wrong_event; pinned by
test_passive_clamp_capture.py's late first iteration: this capture's was not late).
"""

from __future__ import annotations

from tests.labs import vm_captures
from tfolab.lab import packets
from tfolab.model import Segment, Simulation
from tfolab.model.simulation import with_lock_early

NAME = "fastopen-cookie-request-59907-d29-6.1"
SETTINGS = {
    "cookie_cache": "flush",
    "fastopen_sysctl": "0xc01",
    "fresh_connection_each_iteration": "true",
    "request_bytes": "59907",
}
OUTCOME = frozenset({(1, "client", 32769, "take"), (1, "client", 59908, "release")})


def model() -> Simulation:
    delay_ms = vm_captures.load(NAME)[0]
    return vm_captures.model(
        "fastopen", "cookie-request", SETTINGS, delay_ms=delay_ms, iterations=1
    )


def client_acks(sim: Simulation) -> list[int | None]:
    return [
        e.ack
        for e in sim.events
        if isinstance(e, Segment) and e.sender == "client" and e.length == 0
        and "SYN" not in e.flags and "FIN" not in e.flags and (e.ack or 0) > 1
    ]  # fmt: skip


def test_the_capture_agrees_with_a_take_and_a_release() -> None:
    comparison = packets.compare(model(), vm_captures.load(NAME)[1], {})
    assert comparison.sentences == []
    assert comparison.simulation.lock_early == OUTCOME
    assert comparison.races_used >= len(OUTCOME)


def test_the_default_reads_both_packets_at_once() -> None:
    sim = model()
    assert 32769 not in client_acks(sim)
    assert 32769 in client_acks(with_lock_early(sim, OUTCOME))


def test_the_take_alone_holds_the_second_packet_in_the_backlog() -> None:
    """Taken and held to the end of the instant, the second packet waits in the backlog
    and one ACK (59908) covers both: the capture needs the release before it."""
    take = frozenset({(1, "client", 32769, "take")})
    assert 32769 not in client_acks(with_lock_early(model(), take))

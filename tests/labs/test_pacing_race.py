"""Where a sender's GSO packets end is a race on the host's round trip (Segment.psh_race),
and it decides more than PSH flags: a packet of one segment is not cut in software, so
the receiver queues the sender's own clone, which skb_try_coalesce refuses to grow. Met
where the receiver's tail skb is full (MAX_SKB_FRAGS), the next segment starts a skb of
its own: one more head for the rest of the answer, every other window a unit lower.

Seen on this host (6.18, NFQUEUE): fastopen invalid-cookie, 1 MB read whole at MTU 1280,
D = 11.4 ms, three runs alike. From about 99 kB into iteration 1's answer the kernel's
packets end one segment earlier than the model's (its srtt is 2D plus ~0.2 ms), so the
model's 5 + 1 segments at 135081..142449 were 5 + 3 in the kernel, no clone; from the
ACK of 147361 on, the kernel advertised 1071 where the model said 1070. The comparison
takes the senders' pacing with part of the host's excess (simulation.slower_pacings)."""

from __future__ import annotations

from collections.abc import Callable

from tests.captured_from_model import as_captured
from tests.labs import host_captures
from tfolab.lab import packets
from tfolab.lab.packet_rows import Row, captured_rows, model_rows, model_starts
from tfolab.lab.prediction import accuracy_for
from tfolab.model import Segment, Simulation
from tfolab.model.captured import CapturedRow
from tfolab.model.simulation import _again, slower_pacings

Against = Callable[[Simulation], tuple[list[packets.Pair], list[Row]]]
SETTINGS = {"client_fastopen": "sendto", "mtu": "1280", "read_whole": "true",
            "response_bytes": "1000000"}  # fmt: skip


def _model() -> Simulation:
    return host_captures.model(
        "fastopen", "invalid-cookie", SETTINGS, 1, 11.4, accuracy_for("nfqueue")
    )


def _window_at(sim: Simulation, ack: int) -> int | None:
    return next(
        e.window
        for e in sim.events
        if isinstance(e, Segment) and e.connection == 2 and e.sender == "client"
        and not e.length and e.ack == ack
    )  # fmt: skip


def _one_segment_packets(sim: Simulation, lo: int, hi: int) -> list[int]:
    data = [
        e for e in sim.events
        if isinstance(e, Segment) and e.connection == 2 and e.sender == "server" and e.length
    ]  # fmt: skip
    return [
        e.seq
        for i, e in enumerate(data)
        if lo <= e.seq < hi and e.starts_skb and (i + 1 == len(data) or data[i + 1].starts_skb)
    ]


def test_a_slower_pacing_moves_the_receivers_window() -> None:
    sim = _model()
    slower = _again(sim, pacing_excess_ms=0.2)
    assert _one_segment_packets(sim, 130_000, 150_000) == [141221]
    assert _one_segment_packets(slower, 130_000, 150_000) == []
    assert (_window_at(sim, 147361), _window_at(slower, 147361)) == (1070, 1071)  # kernel: 1071


def _against(kernel: list[CapturedRow]) -> Against:
    def against(sim: Simulation) -> tuple[list[packets.Pair], list[Row]]:
        model = model_rows(sim)
        aligned = packets.pairs(
            model, captured_rows(kernel), model_starts(sim), {0: 0.0}, same_instant=False
        )
        return aligned, model

    return against


def test_the_comparison_takes_the_slower_pacing_the_capture_shows() -> None:
    """packets.compare's last step (after its lock-point search, which finds nothing here:
    a 15 s search in a full comparison, left out)."""
    sim = _model()
    kernel = as_captured(model_rows(_again(sim, pacing_excess_ms=0.2)))
    against = _against(kernel)
    aligned, model = against(sim)
    assert any(p.disagreement for p in aligned)
    (chosen, aligned, _), taken = packets._slower_pacing((sim, aligned, model), against, kernel)
    assert taken and chosen.pacing_excess_ms == 0.2
    assert [p.disagreement for p in aligned if p.disagreement] == []


def test_no_pacing_race_without_a_delay_or_one_that_agrees() -> None:
    sim = _model()
    assert next(slower_pacings(_again(sim, pacing_excess_ms=0.0)), None) is not None
    at_once = host_captures.model("fastopen", "invalid-cookie", {}, 1, 0.0, accuracy_for("nfqueue"))
    assert list(slower_pacings(at_once)) == []
    own = as_captured(model_rows(sim))
    against = _against(own)
    (chosen, _, _), taken = packets._slower_pacing((sim, *against(sim)), against, own)
    assert not taken and chosen is sim

"""read_whole on Linux 6.1, captured in CI's VM (netem, D = 75 ms).

delack nodelay, three rounds on one connection, each answered with three full
segments (response_bytes=4344, MTU 1500), the client reading each answer whole
(SO_RCVLOWAT). In rounds 2 and 3 the client ACKs the answer's second segment at
once (ack 7241, 11585): its unread bytes are below the mark, and
__tcp_ack_snd_check sends the ACK for that alone, where on 6.1 the window's
right edge would not advance (two unread segments take half the free memory).
A client that reads as data arrives waits for its read instead (one ACK, 8689).
"""

from __future__ import annotations

from tests.labs.vm_captures import load, model
from tfolab.lab import packets
from tfolab.lab.disagreements import Arrival
from tfolab.model import Segment

NAME = "delack-nodelay-answer-4344-mtu1500-readwhole-d75-6.1"
SETTINGS = {"response_bytes": "4344", "mtu": "1500"}


def _client_acks(rows: list[tuple[int | None, int]]) -> list[int | None]:
    return [ack for ack, length in rows if not length]


def _about_tcp(comparison: packets.PacketComparison) -> list[str]:
    """Every disagreement but an arrival time: the emulated VM runs milliseconds late,
    which is why its runs judge no time (tests/netem)."""
    return [d.sentence() for d in comparison.disagreements if not isinstance(d, Arrival)]


def test_the_capture_agrees_packet_for_packet() -> None:
    delay_ms, rows = load(NAME)
    sim = model("delack", "nodelay", {**SETTINGS, "read_whole": "true"}, delay_ms=delay_ms)
    assert _about_tcp(packets.compare(sim, rows, {})) == []


def test_the_mark_is_what_acks_the_second_segment() -> None:
    delay_ms, rows = load(NAME)
    kernel = _client_acks(
        [(r.ack, r.length) for r in rows if r.sender == "client" and "SYN" not in r.flags]
    )
    assert 7241 in kernel and 11585 in kernel
    streaming = model("delack", "nodelay", {**SETTINGS, "read_whole": "false"}, delay_ms=delay_ms)
    predicted = _client_acks(
        [(e.ack, e.length) for e in streaming.events if isinstance(e, Segment)
         and e.sender == "client" and "SYN" not in e.flags]
    )  # fmt: skip
    assert 7241 not in predicted and 8689 in predicted
    assert _about_tcp(packets.compare(streaming, rows, {})) != []

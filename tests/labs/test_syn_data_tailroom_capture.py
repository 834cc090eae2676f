"""Before 6.5 a SYN's data sits in a linear head whose tailroom later data may fill for free.

fastopen large-data with fastopen_sysctl=621 (0x4: the client sends its SYN data
without a cookie; no 0x2: the server refuses it) at D = 0 in CI's VM (Debian's
6.1, netem). tcp_send_syn_data built the 1420 bytes into a kmalloc'd head of
4096 bytes (truesize 4352), leaving 2036 bytes of tailroom; the client resends
that skb alone (tcp_rcv_fastopen_synack), and the rest of the request is written
by the sendto() the SYN-ACK wakes, after the server's ACK of the 1420 bytes
reached the client, so the server's copy is no clone by then. The next 1448
bytes then join it through skb_try_coalesce's `len <= skb_tailroom(to)` branch:
copied, delta_truesize 0, and the server's ACK offers 495 (x 128), not 487. The
captures: in (a) connection 1's server read the 1420 bytes first (487, 486),
connections 2-4 did not (495, 495); in (b) accept() and recv() held the socket
as the last 132 bytes arrived, processed from the backlog with sk_backlog.len
charged (494).
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from tfolab.lab import packets
from tfolab.lab.catalog import find_lab
from tfolab.lab.plan import plan
from tfolab.model import Segment, Simulation, simulate
from tfolab.model.captured import CapturedRow
from tfolab.model.rcv_space import RcvSpace, linear_tailroom, receive_memory_for

CAPTURES = Path(__file__).parent / "captures"
RMEM = (4096, 131072, 6291456)  # Debian 6.1's tcp_rmem: window scale 7
NAMES = ["fastopen-621-large-data-d0-6.1-a", "fastopen-621-large-data-d0-6.1-b"]


def model() -> Simulation:
    lab = find_lab("fastopen")
    (scenario,) = plan(lab, "large-data", 4, {"fastopen_sysctl": "621"}, delay_ms=0).scenarios
    return simulate(
        scenario.config,
        one_way_delay_ms=0,
        iterations=4,
        hz=250,
        receive_space_bytes=RMEM[2],
        receive_memory=receive_memory_for((6, 1), RMEM[1], RMEM[2]),
    )


@pytest.mark.parametrize("name", NAMES)
def test_every_capture_agrees(name: str) -> None:
    rows = msgspec.convert(
        json.loads((CAPTURES / f"{name}.json").read_text())["captured"], list[CapturedRow]
    )
    comparison = packets.compare(model(), rows, {})
    assert comparison.sentences == []


def test_by_default_the_request_fills_the_tailroom_and_the_server_offers_495() -> None:
    acks = [
        (e.ack, e.window)
        for e in model().events
        if isinstance(e, Segment) and e.connection == 3 and e.sender == "server"
        and not e.length and "SYN" not in e.flags and "FIN" not in e.flags
    ]  # fmt: skip
    assert acks == [(1421, 498), (2869, 495), (3001, 495)]


def test_the_rest_of_the_request_leaves_after_the_servers_ack() -> None:
    """The woken sendto() writes it, after the server's ACK of the resent 1420 bytes."""
    client = [
        e.id
        for e in model().events
        if isinstance(e, Segment) and e.connection == 3 and e.sender == "client" and e.length
    ]
    server_ack = next(
        e.id
        for e in model().events
        if isinstance(e, Segment) and e.connection == 3 and e.sender == "server" and e.ack == 1421
    )
    assert client[1] < server_ack < client[2]  # SYN, resent 1420 | ACK | 1448, 132


def test_a_1420_byte_head_leaves_2036_bytes_that_cost_nothing_to_fill() -> None:
    assert linear_tailroom(1420) == 2036
    rules = receive_memory_for((6, 1), RMEM[1], RMEM[2])
    space = RcvSpace(rules, wscale=7, advmss=1448)
    space.queue(1420, 536, fresh=False, end=1421, syn_data=True)
    assert space.rmem == 4352
    space.release_tail(1421)  # the client freed its copy: no clone any more
    space.queue(1448, 1420, fresh=True, end=2869)
    space.queue(132, 1448, fresh=True, end=3001)
    assert space.rmem == 4352  # both copied into the head's tailroom
    space.queue(600, 1448, fresh=True, end=3601)
    assert space.rmem == 4352 + 600  # 456 bytes of room left: its frags, the payload

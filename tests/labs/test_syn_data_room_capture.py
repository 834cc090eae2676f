"""Before 6.5 a Fast Open SYN carries at most 3456 bytes of data (fastopen.syn_data_space).

tcp_send_syn_data limits the SYN's data to what one page's linear head holds ("limit
to order-0 allocations": SKB_MAX_HEAD(MAX_TCP_HEADER) = 4096 - 320 - 320); from 6.5
it copies them into the socket's page fragment. Captured in CI's VM (Debian's 6.1,
netem, window scale 7): fastopen cookie at MTU 9000 with an 8000-byte request at
D = 10 ms; the SYN carried 3456 bytes and the other 4544 followed the handshake.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from tfolab.lab import packets
from tfolab.lab.catalog import find_lab
from tfolab.lab.plan import plan
from tfolab.model import ModelInputError, Segment, Simulation, simulate
from tfolab.model.captured import CapturedRow
from tfolab.model.fastopen import syn_data_space
from tfolab.model.rcv_space import receive_memory_for

CAPTURE = Path(__file__).parent / "captures" / "fastopen-cookie-8000-mtu9000-d10-6.1.json"
RMEM = (4096, 131072, 6291456)


def model(release: tuple[int, int], scenario: str, settings: dict[str, str]) -> Simulation:
    (planned,) = plan(find_lab("fastopen"), scenario, 3, settings, delay_ms=10).scenarios
    return simulate(
        planned.config,
        one_way_delay_ms=10,
        iterations=3,
        hz=250,
        receive_space_bytes=RMEM[2],
        receive_memory=receive_memory_for(release, RMEM[1], RMEM[2]),
    )


def test_the_room_is_one_pages_head_before_6_5_and_the_mss_less_40_after() -> None:
    assert syn_data_space(9000, linear=True) == 3456
    assert syn_data_space(9000, linear=False) == 8920
    assert syn_data_space(1500, linear=True) == syn_data_space(1500, linear=False) == 1420


@pytest.mark.parametrize(("release", "in_syn"), [((6, 1), 3456), ((6, 18), 8000)])
def test_the_syn_carries_what_its_kernel_allows(release: tuple[int, int], in_syn: int) -> None:
    sim = model(release, "cookie", {"mtu": "9000", "request_bytes": "8000"})
    syns = [e for e in sim.events if isinstance(e, Segment) and e.flags == ("SYN",)]
    assert {s.length for s in syns if s.iteration >= 1} == {in_syn}


def test_the_capture_agrees() -> None:
    rows = msgspec.convert(json.loads(CAPTURE.read_text())["captured"], list[CapturedRow])
    sim = model((6, 1), "cookie", {"mtu": "9000", "request_bytes": "8000"})
    assert packets.compare(sim, rows, {}).sentences == []


def test_a_replay_of_a_request_longer_than_the_room_is_refused_before_6_5() -> None:
    settings = {"mtu": "9000", "request_bytes": "4000"}
    with pytest.raises(ModelInputError, match="at most 3456 bytes of data in a SYN"):
        model((6, 1), "replay", settings)
    assert model((6, 18), "replay", settings).predictions

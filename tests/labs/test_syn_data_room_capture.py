"""Before 6.5 a Fast Open SYN carries at most 3456 bytes of data (fastopen.syn_data_space).

tcp_send_syn_data limits the SYN's data to what one page's linear head holds ("limit
to order-0 allocations": SKB_MAX_HEAD(MAX_TCP_HEADER) = 4096 - 320 - 320); from 6.5
it copies them into the socket's page fragment. Captured in CI's VM (Debian's 6.1,
netem, window scale 7): fastopen cookie at MTU 9000 with an 8000-byte request at
D = 10 ms; the SYN carried 3456 bytes and the other 4544 followed the handshake.
"""

from __future__ import annotations

import pytest

from tests.labs import vm_captures
from tfolab.lab import packets
from tfolab.model import ModelInputError, Segment, Simulation
from tfolab.model.fastopen import syn_data_space

CAPTURE = "fastopen-cookie-8000-mtu9000-d10-6.1"


def model(release: tuple[int, int], scenario: str, settings: dict[str, str]) -> Simulation:
    return vm_captures.model("fastopen", scenario, settings, delay_ms=10, release=release)


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
    _, rows = vm_captures.load(CAPTURE)
    sim = model((6, 1), "cookie", {"mtu": "9000", "request_bytes": "8000"})
    assert packets.compare(sim, rows, {}).sentences == []


def test_a_replay_of_a_request_longer_than_the_room_is_refused_before_6_5() -> None:
    settings = {"mtu": "9000", "request_bytes": "4000"}
    with pytest.raises(ModelInputError, match="at most 3456 bytes of data in a SYN"):
        model((6, 1), "replay", settings)
    assert model((6, 18), "replay", settings).predictions

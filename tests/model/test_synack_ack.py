"""The client's ACK of a SYN-ACK: at once unless a write is still waiting for the connection.

tcp_rcv_synsent_state_process holds the ACK only while sk_write_pending is
set; tcp_send_syn_data clears fastopen_req->data when the whole request fits
in the SYN, so then nothing is pending and the ACK leaves at once.
"""

from __future__ import annotations

import pytest

from tests.model.scenarios import scenario
from tfolab.model import Segment, simulate


def _client_segments_after_synack(lab: str, name: str) -> list[Segment]:
    item = scenario(lab, name)
    sim = simulate(item.config, one_way_delay_ms=10, iterations=1)
    segments = [e for e in sim.events if isinstance(e, Segment) and e.iteration == 1]
    synack = next(s for s in segments if s.sender == "server" and "SYN" in s.flags)
    return [s for s in segments if s.sender == "client" and s.sent_ms >= synack.arrived_ms]


@pytest.mark.parametrize("name", ["cookie", "no-cookie"])
def test_a_request_that_fits_in_the_syn_gets_a_pure_ack_at_once(name: str) -> None:
    first, second = _client_segments_after_synack("fastopen", name)[:2]
    assert first.flags == ("ACK",) and first.length == 0 and first.ack == 1
    assert "tcp_rcv_synsent_state_process" in first.explanation
    assert second.flags == ("ACK",) and second.ack is not None and second.ack > 1  # the response


@pytest.mark.parametrize("name", ["cookie-request", "large-data"])
def test_data_still_waiting_carries_the_ack(name: str) -> None:
    first = _client_segments_after_synack("fastopen", name)[0]
    assert "ACK" in first.flags and first.length > 0


def test_a_socket_that_received_nothing_is_never_interactive() -> None:
    """tcp_event_data_sent compares (u32)(now - lrcvtime) < ato: with ato 0, never."""
    item = scenario("fastopen", "no-cookie")
    sim = simulate(item.config, one_way_delay_ms=10, iterations=1)
    notes = [e for e in sim.events if type(e).__name__ == "Note" and e.side == "client"]
    assert not any("pingpong" in n.text and n.time_ms == 0 for n in notes)

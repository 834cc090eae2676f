"""response_bytes: the server answers each line with N bytes, not the echo.

The answer is one send() of N bytes (tfo-echo-server --response-bytes N), so
it is cut into segments by the same rules as any write; the headline runs to
the answer's last byte (ScenarioConfig.headline_to_last_byte); an answer
beyond the initial congestion window or the client's first window is refused
up front, naming response_bytes. A Fast Open child may send its whole initial
window before its SYN-ACK is acknowledged (TcpSock.cwnd_packets_out).
"""

from __future__ import annotations

import dataclasses

import pytest

from tests.model.scenarios import DELACK, FASTOPEN
from tfolab.model import ModelInputError, ScenarioConfig, Segment, Simulation, simulate
from tfolab.model.events import AppCall

MTU = 1500
MSS = 1448


def run(config: ScenarioConfig, delay_ms: float = 10.0, iterations: int = 1) -> Simulation:
    return simulate(config, one_way_delay_ms=delay_ms, iterations=iterations, hz=250)


def server_data(sim: Simulation, connection: int) -> list[Segment]:
    return [
        e
        for e in sim.events
        if isinstance(e, Segment) and e.connection == connection and e.sender == "server"
        and e.length
    ]  # fmt: skip


def headline_end(sim: Simulation) -> AppCall:
    (prediction,) = sim.predictions
    end = next(e for e in sim.events if e.id == prediction.path[-1])
    assert isinstance(end, AppCall)
    return end


def test_the_server_sends_response_bytes_and_the_headline_ends_at_its_last_byte() -> None:
    sim = run(ScenarioConfig(mtu=MTU, response_bytes=5000))
    sent = server_data(sim, 1)
    assert sum(s.length for s in sent) == 5000
    assert [s.length for s in sent] == [MSS, MSS, MSS, 5000 - 3 * MSS]
    end = headline_end(sim)
    assert end.side == "client" and end.call == "read" and "response complete" in end.detail
    assert sim.predictions[0].predicted_ms == pytest.approx(40.0)  # 2 RTT: it fits one flight


def test_without_response_bytes_the_headline_still_ends_at_the_first_byte() -> None:
    sim = run(ScenarioConfig(mtu=MTU, request_bytes=5000))
    assert sum(s.length for s in server_data(sim, 1)) == 5000  # the echo
    assert "first response byte" in headline_end(sim).detail


def test_a_write_write_read_round_reads_the_whole_answer() -> None:
    config = dataclasses.replace(DELACK, mtu=MTU, response_bytes=3000)
    sim = run(config, iterations=2)
    assert sum(s.length for s in server_data(sim, 1)) == 2 * 3000
    assert all(
        "response complete" in next(e for e in sim.events if e.id == p.path[-1]).detail
        for p in sim.predictions
    )


def test_a_fast_open_child_sends_its_whole_initial_window_before_the_ack() -> None:
    """tcp_fastopen_create_child leaves the SYN-ACK to the request sock: the child's
    packets_out is 0, so tcp_cwnd_test lets 10 segments go at once (6.1 and 6.18)."""
    mss = 524  # MTU 576: ten segments stay inside domain.reader_race_refusal's bound
    config = dataclasses.replace(FASTOPEN, cookie_cache="warm", mtu=576, response_bytes=10 * mss)
    sim = run(config)
    measured = 2  # connection 1 is the warm-up that learns the cookie
    sent = server_data(sim, measured)
    assert [s.length for s in sent] == [mss] * 10
    synack = next(
        e for e in sim.events
        if isinstance(e, Segment) and e.connection == measured and e.flags == ("SYN", "ACK")
    )  # fmt: skip
    assert {s.sent_ms for s in sent} == {synack.sent_ms}  # with the SYN-ACK, before any ACK


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"response_bytes": 10 * MSS + 1}, "response_bytes = 14481 takes 11 segments"),
        ({"response_bytes": 70_000, "mtu": 65536}, "response_bytes = 70000 is more than"),
    ],
)
def test_an_answer_beyond_the_first_flight_is_refused_naming_response_bytes(
    changes: dict[str, int], says: str
) -> None:
    config = dataclasses.replace(ScenarioConfig(mtu=MTU), **changes)
    with pytest.raises(ModelInputError, match=says):
        run(config)


@pytest.mark.parametrize(
    ("changes", "delay_ms", "refused"),
    [
        ({"request_bytes": 8688, "mtu": 1500}, 0.0, "2 GSO packets of 6 segments"),
        ({"response_bytes": 14480, "mtu": 1500}, 1.0, "GSO packets of 10 segments"),
        ({"response_bytes": 60000, "mtu": 9000}, 0.0, "GSO packets of 7 segments"),
        ({"request_bytes": 7240, "mtu": 1500}, 0.0, None),  # five, one GSO packet
        ({"response_bytes": 5000, "mtu": 576}, 0.0, None),  # ten small segments
        ({"request_bytes": 60000, "mtu": 65536}, 0.0, None),  # one segment per skb
    ],
)
def test_a_burst_the_woken_reader_races_is_refused(
    changes: dict[str, int], delay_ms: float, refused: str | None
) -> None:
    """domain.reader_race_refusal: the bound measured on 6.18 (its docstring)."""
    config = dataclasses.replace(ScenarioConfig(), **changes)
    if refused is None:
        assert run(config, delay_ms).predictions
        return
    with pytest.raises(ModelInputError, match=refused):
        run(config, delay_ms)

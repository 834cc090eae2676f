"""The tail-loss probe after a lone lost data segment (loss_probe.py).

The kernel's figures (this host, 6.18, NFQUEUE) are in docs/TCP-NOTES.md, "A lost
request or response: the tail-loss probe"; tests/labs/test_loss_probe_real.py runs them.
"""

from __future__ import annotations

import pytest

from tfolab.lab.catalog import find_lab
from tfolab.model import Segment, Simulation, Timer
from tfolab.model.rcv_space import receive_memory_for
from tfolab.model.scenario import parse_settings
from tfolab.model.simulation import ModelInputError, simulate

LINUX_6_18 = (6, 18)


def _sim(drop: str, delay_ms: float = 13.0, *, iterations: int = 1, **settings: str) -> Simulation:
    config = find_lab("handshake").scenario("plain").config
    config = config.with_typed(parse_settings({"drop": drop, **settings}))
    return simulate(
        config,
        one_way_delay_ms=delay_ms,
        iterations=iterations,
        hz=250,
        receive_memory=receive_memory_for(LINUX_6_18, 131072, 6291456),
    )


def _probe(sim: Simulation) -> tuple[Segment, Timer, Segment]:
    """The lost segment, the probe timer that fired, and the probe."""
    [lost] = [e for e in sim.events if isinstance(e, Segment) and e.lost]
    [fired] = [e for e in sim.events if isinstance(e, Timer) and e.name == "tlp"]
    [probe] = [e for e in sim.events if isinstance(e, Segment) and e.caused_by == fired.id]
    return lost, fired, probe


@pytest.mark.parametrize(
    ("delay_ms", "jiffies"),
    [
        # m = 2D: RTO = m + max(2m, 200 ms); the probe min(2m + 200 ms, RTO), in 4 ms ticks
        (13.0, 57),  # 226 ms -> 57 ticks (TCP-NOTES: (228, 232] ms after the request)
        (5.5, 53),  # 211 ms -> 53 ticks
    ],
)
def test_a_lost_request_is_probed_at_the_rto_s_own_tick(delay_ms: float, jiffies: int) -> None:
    sim = _sim("client:3", delay_ms)
    lost, fired, probe = _probe(sim)
    assert lost.what == "request" and lost.sender == "client"
    waited = fired.time_ms - lost.time_ms
    assert jiffies * 4.0 < waited <= (jiffies + 1) * 4.0  # the tick after expiry (level 0)
    assert (probe.seq, probe.length, probe.flags) == (lost.seq, lost.length, lost.flags)
    assert probe.what == "request again" and not probe.lost
    assert "tcp_send_loss_probe" in probe.explanation
    assert sim.counters.get("TCPLossProbes") == 1
    assert "TCPTimeouts" not in sim.counters  # a probe is no timeout


def test_the_first_ack_beyond_the_probe_counts_the_recovery() -> None:
    """The probe's own ACK (at tlp_high_seq) matches no branch of tcp_process_tlp_ack; the
    ACK of the client's FIN, beyond it, counts TCPLossProbeRecovery (and cuts cwnd 10 -> 7)."""
    sim = _sim("client:3")
    assert sim.counters.get("TCPLossProbeRecovery") == 1


def test_the_headline_takes_the_probe_and_says_so() -> None:
    sim = _sim("client:3")
    [prediction] = sim.predictions
    # connect, SYN, SYN-ACK, request lost at 2D, the probe 57 ticks later, request, response
    assert "loss probe" in prediction.explanation
    assert prediction.timer_names == ("tlp",)
    assert 26 + 228 + 26 < prediction.predicted_ms <= 26 + 232 + 26


def test_a_lost_response_is_probed_by_the_server() -> None:
    sim = _sim("server:3")
    lost, fired, probe = _probe(sim)
    assert lost.sender == probe.sender == "server" and lost.length == probe.length == 16
    assert fired.side == "server"
    assert sim.counters.get("TCPLossProbes") == 1
    assert sim.counters.get("TCPLossProbeRecovery") == 1  # the client's ACK of the server's FIN


def test_a_rounding_the_host_can_move_spreads_the_probe_by_a_tick() -> None:
    """The kernel's sample is the round trip plus microseconds of host time (up to the
    round trip's excess, 0.4 ms here). D = 9.9 ms: 2D + 200 ms is 219.8 ms, 54.95 ticks,
    so the RTO is 55 ticks or 56: the band takes both. D = 10 ms: exactly 55 ticks, so
    the kernel's few microseconds always make it 56."""
    _, fired, _ = _probe(_sim("client:3", 9.9))
    assert fired.spread_ticks == 2
    assert "(or 224 ms" in fired.explanation
    lost, exact, _ = _probe(_sim("client:3", 10.0))
    assert exact.spread_ticks == 1
    assert 56 * 4.0 < exact.time_ms - lost.time_ms <= 57 * 4.0


def test_past_the_wheel_s_level_zero_the_probe_takes_its_bucket() -> None:
    """D = 50 ms: 300 ms is 75 ticks, on level 1 (buckets of 8 ticks)."""
    _, fired, _ = _probe(_sim("client:3", 50.0))
    assert fired.spread_ticks == 8


@pytest.mark.parametrize(
    ("drop", "settings", "says"),
    [
        ("server:4", {}, "probe races this one"),  # the FIN that acknowledged the client's
        ("client:3", {"pattern": "wwr", "nodelay": "true"}, "more data left before"),
    ],
)
def test_what_the_probe_does_not_cover_is_refused(
    drop: str, settings: dict[str, str], says: str
) -> None:
    with pytest.raises(ModelInputError, match=says):
        _sim(drop, **settings)


@pytest.mark.parametrize("delay_ms", [0.0, 0.4, 13.0])
def test_a_lost_segment_is_stamped_when_its_delay_ends(delay_ms: float) -> None:
    """The delayer drops a packet when its delay ends (native/delay/hold.c), so the lost
    request is stamped D after it left, after the handshake's ACK sent just before it, in
    the order they left. (Stamped as sent, at D = 0 it came before that ACK, stamped as
    released 10 us later, in two connections of three: the model refused D < 0.5 ms.)"""
    sim = _sim("client:3", delay_ms)
    client = [e for e in sim.events if isinstance(e, Segment) and e.sender == "client"]
    ack, lost = client[1], client[2]
    assert lost.lost and ack.flags == ("ACK",) and not ack.length
    assert lost.arrived_ms == pytest.approx(lost.sent_ms + delay_ms)
    assert ack.arrived_ms <= lost.arrived_ms


def test_a_lost_fin_is_probed_as_data_is() -> None:
    """The client's FIN alone in flight (FIN_WAIT1): tcp_schedule_loss_probe asks nothing
    of the state, and the probe sends the FIN again on the RTO's tick. The client had two
    samples of 26 ms (the handshake's, the request's): the RTO is still srtt + 200 ms."""
    sim = _sim("client:5")
    lost, fired, probe = _probe(sim)
    assert lost.what == "FIN" and lost.flags == probe.flags == ("FIN", "ACK")
    assert (probe.seq, probe.length) == (lost.seq, 0) and probe.what == "FIN again"
    assert 57 * 4.0 < fired.time_ms - lost.time_ms <= 58 * 4.0
    assert sim.counters.get("TCPLossProbes") == 1
    assert "TCPLossProbeRecovery" not in sim.counters  # the server's FIN acks exactly the probe


def test_a_lost_last_ack_has_the_server_probe_its_fin_and_time_wait_answer() -> None:
    """The client's last ACK lost: the server's FIN, alone in flight in LAST_ACK, is probed
    on the RTO's tick after it left (not after the ACK was lost); the client's TIME_WAIT
    answers the FIN with its last ACK again (tcp_timewait_state_process)."""
    sim = _sim("client:6")
    segments = [e for e in sim.events if isinstance(e, Segment) and e.connection == 1]
    [lost] = [e for e in segments if e.lost]
    assert lost.sender == "client" and lost.flags == ("ACK",)
    [fin] = [e for e in segments if e.sender == "server" and e.what == "FIN"]
    [fired] = [e for e in sim.events if isinstance(e, Timer) and e.name == "tlp"]
    assert fired.side == "server" and 57 * 4.0 < fired.time_ms - fin.time_ms <= 58 * 4.0
    [probe] = [e for e in segments if e.caused_by == fired.id]
    assert (probe.flags, probe.seq, probe.ack) == (fin.flags, fin.seq, fin.ack)
    [again] = [e for e in segments if e.caused_by == probe.id]
    assert (again.sender, again.flags, again.seq, again.ack) == ("client", *_numbers(lost))
    assert again.window == lost.window
    assert "tcp_timewait_state_process" in again.explanation
    assert sim.counters == {"TCPLossProbes": 1}


def _numbers(segment: Segment) -> tuple[tuple[str, ...], int, int | None]:
    return segment.flags, segment.seq, segment.ack

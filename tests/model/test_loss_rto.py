"""The RTO after a lost tail-loss probe, and its backoff (loss_rto.py).

The kernel's figures (this host, 6.18, NFQUEUE) are in docs/TCP-NOTES.md, "A lost probe:
the RTO"; tests/labs/test_loss_probe_real.py runs them.
"""

from __future__ import annotations

import pytest

from tfolab.lab.catalog import find_lab
from tfolab.model import Segment, Simulation, Timer
from tfolab.model.rcv_space import receive_memory_for
from tfolab.model.scenario import parse_settings
from tfolab.model.simulation import ModelInputError, simulate

LINUX_6_18 = (6, 18)
TICK_MS = 4.0


def _sim(drop: str, delay_ms: float = 13.0, **settings: str) -> Simulation:
    config = find_lab("handshake").scenario("plain").config
    config = config.with_typed(parse_settings({"drop": drop, **settings}))
    return simulate(
        config,
        one_way_delay_ms=delay_ms,
        iterations=1,
        hz=250,
        receive_memory=receive_memory_for(LINUX_6_18, 131072, 6291456),
    )


def _segments(sim: Simulation, sender: str) -> list[Segment]:
    return [e for e in sim.events if isinstance(e, Segment) and e.sender == sender]


def _timers(sim: Simulation, name: str) -> list[Timer]:
    return [e for e in sim.events if isinstance(e, Timer) and e.name == name]


def test_a_lost_probe_waits_out_the_rto_from_the_probe() -> None:
    """D = 13: srtt 26 ms, RTO 226 ms = 57 ticks. The probe leaves on the RTO's tick after
    the request; tcp_send_loss_probe restarts the RTO from the probe, 57 ticks more."""
    sim = _sim("client:3,client:4")
    request, probe, again = [s for s in _segments(sim, "client") if s.length == 16]
    assert request.lost and probe.lost and not again.lost
    [rto] = _timers(sim, "rto")
    assert 57 * TICK_MS < rto.time_ms - probe.time_ms <= 58 * TICK_MS  # level 0: exact
    assert rto.spread_ticks == 1
    assert again.caused_by == rto.id and again.time_ms == rto.time_ms
    assert (again.seq, again.flags, again.what) == (request.seq, request.flags, "request again")
    assert "tcp_retransmit_timer" in again.explanation and "cwnd 1, ssthresh 7" in again.explanation
    # no TCPLossProbeRecovery: tcp_enter_loss forgot the probe (tlp_high_seq = 0)
    assert sim.counters == {"TCPLossProbes": 1, "TCPTimeouts": 1, "TcpTimeoutRehash": 1}


def test_a_lost_retransmission_doubles_the_rto_and_counts_a_lost_retransmit() -> None:
    """The second timeout: icsk_rto << 1 = 114 ticks, on level 1; the first RTO fired on a
    level-0 tick, so the new bucket's edges are the real jiffies' (8 ticks of spread)."""
    sim = _sim("client:3,client:4,client:5")
    first, second = _timers(sim, "rto")
    assert 114 * TICK_MS < second.time_ms - first.time_ms <= (114 + 8) * TICK_MS
    assert second.spread_ticks == 8
    assert "doubled 1 time(s)" in second.explanation
    assert sim.counters == {
        "TCPLossProbes": 1,
        "TCPTimeouts": 2,
        "TcpTimeoutRehash": 2,
        "TCPLostRetransmit": 1,
    }
    [prediction] = sim.predictions
    assert prediction.timer_names == ("tlp", "rto", "rto")


def test_a_lost_response_and_its_probe_the_server_s_rto() -> None:
    sim = _sim("server:3,server:4")
    response, probe, again = [s for s in _segments(sim, "server") if s.length == 16]
    assert response.lost and probe.lost and again.what == "response again"
    [rto] = _timers(sim, "rto")
    assert rto.side == "server" and 57 * TICK_MS < rto.time_ms - probe.time_ms <= 58 * TICK_MS


def test_after_the_rto_a_further_loss_is_refused() -> None:
    """Karn's rule: the ACK of the retransmission samples only its TSecr, in whole
    milliseconds; the timers after it are not followed."""
    with pytest.raises(ModelInputError, match="after a retransmission"):
        _sim("client:3,client:4,client:7")  # the FIN


def test_only_tcp_retransmit_timer_rehashes() -> None:
    """tcp_write_timeout's sk_rethink_txhash runs for the client's SYN timer and the RTO,
    not for a request's SYN-ACK timer (reqsk_timer_handler): measured, synack-lost at D =
    13 counts two timeouts and one rehash."""
    sim = _sim("server:1")
    assert sim.counters["TCPTimeouts"] == 2 and sim.counters["TcpTimeoutRehash"] == 1


def test_two_lost_syns_count_a_lost_retransmit() -> None:
    """tcp_timeout_mark_lost at the second SYN timeout finds the SYN lost and sent again."""
    sim = _sim("client:1,client:2")
    assert sim.counters.get("TCPLostRetransmit") == 1
    assert "TCPLostRetransmit" not in _sim("client:1").counters


def test_time_wait_s_answer_lost_the_server_s_rto_sends_its_fin_again() -> None:
    """The client's last ACK lost, then TIME_WAIT's answer to the server's FIN probe: the
    server's FIN waits for the RTO that tcp_send_loss_probe restarted as the probe left,
    57 ticks at D = 13, and TIME_WAIT answers the third FIN (never rate-limited)."""
    sim = _sim("client:6,client:7")
    fins = [s for s in _segments(sim, "server") if "FIN" in s.flags]
    assert [f.what for f in fins] == ["FIN", "FIN again", "FIN again"]
    [probe] = [t for t in _timers(sim, "tlp") if t.side == "server"]
    [rto] = _timers(sim, "rto")
    assert rto.side == "server" and fins[2].caused_by == rto.id
    assert fins[1].caused_by == probe.id
    assert 57 * TICK_MS < rto.time_ms - fins[1].time_ms <= 58 * TICK_MS + 1e-9
    answers = [s for s in _segments(sim, "client") if s.what == "TIME_WAIT ACK"]
    assert [a.lost for a in answers] == [True, False]
    assert sim.counters == {"TCPLossProbes": 1, "TCPTimeouts": 1, "TcpTimeoutRehash": 1}

"""A lost request or response for real: the NFQUEUE delayer drops it, the kernel's
tail-loss probe sends it again, and the capture, the counters and the headline agree with
the model (loss_probe.py; TCP-NOTES "A lost request or response: the tail-loss probe").

Under the timing lock, like every real run. Skips with the reason where there is no lab
namespace or no NFQUEUE delayer.
"""

from __future__ import annotations

from typing import Any

from tests.conftest import TIMING, LabMachine
from tests.labs.lossy_runs import lossy_run
from tests.physics import HOST_MS, PER_PACKET_MS
from tests.timing import assert_in_band

TICK_MS = 4.0  # HZ 250


def _resent(scenario: dict[str, Any], sender: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The lost data segment of connection 1 and its probe."""
    rows = [
        r for r in scenario["captured"]
        if r["connection"] == 1 and r["sender"] == sender and r["length"]
    ]  # fmt: skip
    lost, probe = rows[0], rows[1]
    assert lost.get("lost") and not probe.get("lost")
    assert (lost["seq"], lost["length"], lost["flags"]) == (
        probe["seq"],
        probe["length"],
        probe["flags"],
    )
    return lost, probe


@TIMING
def test_a_lost_request_is_probed_on_the_rto_s_own_tick(lab_machine: LabMachine) -> None:
    """D = 13 ms: the first sample 26 ms and some microseconds, the RTO 226 ms rounded up
    to 57 ticks; the probe, armed for the same tick, sends the request again 228-232 ms
    after it left (the capture stamps both when their delay ends: the probe as it
    arrives, the lost one as the delayer drops it)."""
    scenario = lossy_run("--delay", "13", "--iterations", "2", lab="loss", scenario="request-lost")
    lost, probe = _resent(scenario, "client")
    assert scenario["counters"]["TCPLossProbes"] == 1
    assert scenario["counters"]["TCPLossProbeRecovery"] == 1  # at the ACK of the FIN
    assert "TCPTimeouts" not in scenario["counters"]
    assert scenario["counter_diff"] == []
    one, two = scenario["iterations"]
    assert one["predicted_ms"] > 228 + 4 * 13 and two["predicted_ms"] < 4 * 13 + 5
    waited = probe["t_ms"] - lost["t_ms"]
    assert_in_band(waited, 57 * TICK_MS - 1, 58 * TICK_MS + 1, "the probe after the request")


@TIMING
def test_a_lost_request_without_a_delay_keeps_its_place_in_the_capture(
    lab_machine: LabMachine,
) -> None:
    """D = 0: the delayer drops the request when its (zero) delay ends, after releasing
    the handshake's ACK the client sent just before it, so the capture has them in the
    order they left (stamped as sent, the lost request came first in two connections of
    three, and the model refused D < 0.5 ms). Probed at the RTO's tick, 200 ms on."""
    scenario = lossy_run("--delay", "0", "--iterations", "3", lab="loss", scenario="request-lost")
    client = [r for r in scenario["captured"] if r["connection"] == 1 and r["sender"] == "client"]
    handshake_ack, lost = client[1], client[2]
    assert lost.get("lost") and not handshake_ack["length"]
    assert handshake_ack["t_ms"] <= lost["t_ms"]
    lost, probe = _resent(scenario, "client")
    assert scenario["counter_diff"] == []
    waited = probe["t_ms"] - lost["t_ms"]
    assert_in_band(waited, 50 * TICK_MS - 1, 52 * TICK_MS + 1, "the probe after the request")


@TIMING
def test_a_lost_response_is_probed_by_the_server(lab_machine: LabMachine) -> None:
    scenario = lossy_run("--delay", "10", "--iterations", "1", lab="loss", scenario="response-lost")
    lost, probe = _resent(scenario, "server")
    assert scenario["counters"]["TCPLossProbes"] == 1
    assert scenario["counter_diff"] == []
    waited = probe["t_ms"] - lost["t_ms"]  # 2D + 200 ms: 56 ticks
    assert_in_band(waited, 56 * TICK_MS - 1, 57 * TICK_MS + 1, "the probe after the response")


def _fin_and_probe(scenario: dict[str, Any], sender: str) -> tuple[float, float]:
    """When connection 1's first FIN from `sender` and its probe were stamped: each when
    its delay ended (the probe's arrival, the lost one's drop)."""
    fins = [
        r for r in scenario["captured"]
        if r["connection"] == 1 and r["sender"] == sender and "FIN" in r["flags"]
    ]  # fmt: skip
    first, probe = fins
    assert (first["seq"], first["ack"]) == (probe["seq"], probe["ack"])
    return first["t_ms"], probe["t_ms"]


@TIMING
def test_a_lost_fin_is_probed_and_the_headline_does_not_move(lab_machine: LabMachine) -> None:
    """D = 13 ms: the client's FIN alone in flight after two samples of 26 ms; the RTO
    stays srtt + 200 ms (tcp_rtt_estimator), so the probe leaves on its 57th tick."""
    scenario = lossy_run("--delay", "13", "--iterations", "2", lab="loss", scenario="fin-lost")
    lost_ms, probe_ms = _fin_and_probe(scenario, "client")
    waited = probe_ms - lost_ms  # both stamped when their delay ended
    slack = PER_PACKET_MS["nfqueue"] + HOST_MS
    assert scenario["counters"]["TCPLossProbes"] == 1
    assert "TCPLossProbeRecovery" not in scenario["counters"]  # its ACK is exactly the probe's
    assert scenario["counter_diff"] == []
    one, two = scenario["iterations"]
    assert abs(one["predicted_ms"] - two["predicted_ms"]) < 1
    assert_in_band(waited, 57 * TICK_MS - slack, 58 * TICK_MS + slack, "the FIN's probe")


@TIMING
def test_a_lost_last_ack_is_answered_again_from_time_wait(lab_machine: LabMachine) -> None:
    """D = 13 ms: the server, in LAST_ACK, probes its FIN 228-232 ms after it left; the
    client's TIME_WAIT answers with its last ACK again (tcp_timewait_state_process)."""
    scenario = lossy_run("--delay", "13", "--iterations", "2", lab="loss", scenario="last-ack-lost")
    sent_ms, probe_ms = _fin_and_probe(scenario, "server")
    waited = probe_ms - sent_ms  # both stamped on arrival: each the delayer's error late
    slack = PER_PACKET_MS["nfqueue"] + HOST_MS  # and the timer's softirq after its tick
    last_acks = [
        r for r in scenario["captured"]
        if r["connection"] == 1 and r["sender"] == "client" and r["ack"] == 18
        and r["flags"] == ["ACK"]
    ]  # fmt: skip
    assert [bool(r.get("lost")) for r in last_acks] == [True, False]
    assert scenario["counters"]["TCPLossProbes"] == 1
    assert scenario["counter_diff"] == []
    assert_in_band(waited, 57 * TICK_MS - slack, 58 * TICK_MS + slack, "the FIN's probe")
    answer = last_acks[1]["t_ms"] - probe_ms
    assert_in_band(answer, 13 - 1.5, 13 + 1.5, "TIME_WAIT's ACK after the probe")


@TIMING
def test_a_lost_probe_waits_out_the_rto_from_the_probe(lab_machine: LabMachine) -> None:
    """D = 10 ms: the request and its probe lost; tcp_send_loss_probe restarted the RTO
    from the probe, 56 ticks (srtt 20 ms + 200 ms, rounded up), and tcp_retransmit_timer
    sends the request a third time: a timeout now, rehashed, and the probe forgotten."""
    scenario = lossy_run("--delay", "10", "--iterations", "2", lab="loss", scenario="probe-lost")
    requests = [
        r for r in scenario["captured"]
        if r["connection"] == 1 and r["sender"] == "client" and r["length"]
    ]  # fmt: skip
    assert [bool(r.get("lost")) for r in requests] == [True, True, False]
    probe, again = requests[1], requests[2]
    waited = again["t_ms"] - probe["t_ms"]  # both stamped when their delay ended
    slack = PER_PACKET_MS["nfqueue"] + HOST_MS
    counters = scenario["counters"]
    assert counters["TCPLossProbes"] == counters["TCPTimeouts"] == 1
    assert counters["TcpTimeoutRehash"] == 1
    assert "TCPLossProbeRecovery" not in counters  # tcp_enter_loss: tlp_high_seq = 0
    assert scenario["counter_diff"] == []
    assert_in_band(waited, 56 * TICK_MS - slack, 57 * TICK_MS + slack, "the request again")

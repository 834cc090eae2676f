"""The run report: table verdicts, counters and the two-line conclusion."""

from __future__ import annotations

import dataclasses

from tfolab.lab import counters
from tfolab.lab.catalog import find_lab
from tfolab.lab.plan import plan
from tfolab.lab.prediction import predict
from tfolab.lab.results import LabResult
from tfolab.model.events import Timer
from tfolab.view import report


def graded_fastopen(cookie_measured_ms: float) -> LabResult:
    lab = find_lab("fastopen")
    planned = plan(lab, "cookie", iterations=2, delay_ms=10.0)
    result = predict(planned, hz=250)
    result.measured = True
    result.backend = "nfqueue"
    first, second = result.scenarios[0].measurements
    first.measured_ms = 20.3
    second.measured_ms = cookie_measured_ms
    result.scenarios[0].counters = {"TCPFastOpenActive": 2, "TCPFastOpenPassive": 2}
    return result


def test_inside_the_band_reads_as_agreement() -> None:
    result = graded_fastopen(20.4)
    assert not result.failures
    text = report.conclusion(result)
    assert text.count("\n") == 1
    assert "All 2 measurements fell inside" in text
    assert "cookie 1 RTT each" in text  # one round trip, in plain words
    assert "TCPFastOpenActive +2" in report.counters_text(result)


def test_outside_the_band_says_which_and_by_how_much() -> None:
    result = graded_fastopen(27.0)
    [(name, miss)] = result.failures
    assert name == "cookie" and miss.i == 2
    band_top = miss.predicted_ms + miss.tolerance_ms
    assert abs(miss.off_by_ms - (27.0 - band_top)) < 1e-9
    table = report.results_table(result)
    assert f"OUTSIDE by {27.0 - band_top:.1f} ms" in table
    assert "cookie #2 measured 27.0 ms" in report.conclusion(result)
    assert result.to_json()["scenarios"][0]["iterations"][1]["ok"] is False


def test_round_trips_are_whole_per_iteration_never_a_median_of_mixed_ones() -> None:
    lab = find_lab("fastopen")
    planned = plan(lab, "invalid-cookie", delay_ms=10.0)
    result = predict(planned, hz=250)
    result.measured = True
    first, second = result.scenarios[0].measurements
    first.measured_ms, second.measured_ms = 41.7, 20.8
    line = report.round_trips_line(result)
    assert "invalid-cookie #1 2 RTT (41.7 ms), #2 1 RTT (20.8 ms)" in line
    assert "1.5" not in line


def test_delack_rounds_read_as_round_trips_plus_a_delayed_ack() -> None:
    lab = find_lab("delack")
    planned = plan(lab, "nagle", delay_ms=10.0)
    result = predict(planned, hz=250)
    result.measured = True
    values = [40.5, 84.1, 84.0, 84.2, 84.0]
    for m, value in zip(result.scenarios[0].measurements, values, strict=True):
        m.measured_ms = value
    line = report.round_trips_line(result)
    assert "nagle #1 2 RTT (40.5 ms), #2-5 2 RTT + delayed ACK (84.0 ms)" in line


def test_counters_are_judged_against_the_model() -> None:
    lab = find_lab("delack")
    planned = plan(lab, "nagle", delay_ms=10.0)
    result = predict(planned, hz=250)
    scenario = result.scenarios[0]
    assert scenario.simulation.counters == {"DelayedACKs": 4}
    assert counters.counter_diff(scenario.simulation, {"DelayedACKs": 4, "TW": 1}) == []
    [sentence] = counters.counter_diff(scenario.simulation, {"DelayedACKs": 5})
    assert sentence == "TcpExt DelayedACKs moved by 5; the model predicted 4"
    scenario.counters = {"DelayedACKs": 4, "TCPPureAcks": 3}
    text = report.counters_text(result)
    assert "DelayedACKs +4 (model +4)" in text and "TCPPureAcks +3" in text
    assert "DISAGREES" not in text


def test_the_application_counts_are_judged_too() -> None:
    lab = find_lab("fastopen")
    planned = plan(lab, "replay", delay_ms=10.0)
    result = predict(planned, hz=250)
    sim = result.scenarios[0].simulation
    assert sim.app == {"accepted": 2, "requests": 2}
    measured = {"TCPFastOpenActive": 1, "TCPFastOpenPassive": 2}
    assert counters.counter_diff(sim, measured, {"accepted": 2, "requests": 2}) == []
    assert counters.counter_diff(sim, measured, {"accepted": 1, "requests": 1}) == [
        "the server application accepted 1 connections; the model predicted 2",
        "the server application received 1 requests; the model predicted 2",
    ]


def test_a_timer_that_fires_unless_its_burst_merged_may_count_one_less() -> None:
    """Timer.unless_merged: in the merged outcome that timer was never armed."""
    lab = find_lab("delack")
    sim = predict(plan(lab, "nagle", delay_ms=10.0), hz=250).scenarios[0].simulation
    fired = next(
        e for e in sim.events if isinstance(e, Timer) and e.action == "fired" and e.iteration >= 1
    )
    events = tuple(
        dataclasses.replace(e, unless_merged=True) if e is fired else e for e in sim.events
    )
    merged = dataclasses.replace(sim, events=events)
    assert counters.counter_diff(merged, {"DelayedACKs": 3}) == []
    assert counters.counter_diff(merged, {"DelayedACKs": 4}) == []
    assert counters.counter_diff(merged, {"DelayedACKs": 2}) == [
        "TcpExt DelayedACKs moved by 2; the model predicted 3 to 4"
    ]
    assert counters.counter_diff(sim, {"DelayedACKs": 3}) == [
        "TcpExt DelayedACKs moved by 3; the model predicted 4"
    ]

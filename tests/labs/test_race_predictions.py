"""A race's other outcome, once the capture shows it, carries its own headline predictions
(ScenarioResult.compare_packets): each iteration is judged against the timeline the kernel
followed, not the one the model drew first.

No real run: the "capture" is the model's own segments in the race's other outcome.
"""

from __future__ import annotations

from tests.captured_from_model import as_captured
from tfolab.lab import packet_rows
from tfolab.lab.catalog import find_lab
from tfolab.lab.plan import plan
from tfolab.lab.prediction import predict
from tfolab.model.simulation import other_buckets


def test_the_iterations_follow_the_wheel_position_the_capture_chose() -> None:
    """Fuzzer seed 5390: a lost SYN-ACK at D = 55.3 ms, where the model's own position has
    the server's timer resend it before the client's SYN arrives (two resent SYN-ACKs: a
    first window of 1, 1554.9 ms) and the kernel's had the SYN first (one: a window of
    10, 1338 ms). The packets matched the other position; the band must too."""
    settings = {"drop": "server:1", "mtu": "128", "response_bytes": "835"}
    result = predict(plan(find_lab("transfer"), "slow-start", 1, settings, delay_ms=55.3), hz=250)
    scenario = result.scenarios[0]
    drawn = scenario.simulation
    kernel = next(
        o for o in other_buckets(drawn, 1)
        if o.predictions[0].predicted_ms < drawn.predictions[0].predicted_ms - 100
    )  # fmt: skip
    starts = packet_rows.model_starts(kernel)
    rows = [r for r in packet_rows.model_rows(kernel) if not r.optional]
    scenario.captured = as_captured(rows, origin_ms=starts[0])
    [measurement] = scenario.measurements
    measurement.measured_ms = kernel.predictions[0].predicted_ms
    measurement.start_ms = 0.0
    assert measurement.ok is False  # against the drawn timeline's band
    scenario.compare_packets()
    assert scenario.packet_diff == [] and scenario.races[1] == 1
    assert measurement.predicted_ms == kernel.predictions[0].predicted_ms
    assert measurement.ok is True

"""The native client's per-call bound comes from the model's span of the scenario
(session.call_timeout_ms), so no valid run times out. Fuzzer seed 5399 found the fixed
10 s too short: a 300 kB answer read whole at D = 815.8 ms after a lost SYN-ACK arrives
15.7 s after connect(), in one call (the read), and the run failed with ETIMEDOUT."""

from __future__ import annotations

from tfolab.lab.catalog import find_lab
from tfolab.lab.plan import plan
from tfolab.lab.run_plan import for_real
from tfolab.lab.session import CALL_TIMEOUT_FLOOR_MS, call_timeout_ms


def _bound(lab: str, scenario: str, delay_ms: float, **settings: str) -> tuple[int, float]:
    run_plan = for_real(plan(find_lab(lab), scenario, 1, settings, delay_ms=delay_ms), "auto")
    [predicted] = run_plan.prediction.scenarios
    return call_timeout_ms(run_plan, scenario), predicted.simulation.predictions[0].predicted_ms


def test_a_long_lossy_transfer_gets_twice_its_span_beyond_the_floor() -> None:
    bound, headline = _bound("transfer", "long", 815.8, drop="server:1", nodelay="true")
    assert headline > 15_000
    assert bound > CALL_TIMEOUT_FLOOR_MS + 2 * headline


def test_a_short_exchange_keeps_about_the_floor() -> None:
    bound, _ = _bound("handshake", "plain", 10.0)
    assert CALL_TIMEOUT_FLOOR_MS < bound < CALL_TIMEOUT_FLOOR_MS + 1000

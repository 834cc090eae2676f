"""The timer-wheel search's order (packets._wheel_order): the racing connections that
disagree first, then those that agree, the latest first, each one's turn ended by the
first position that leaves it agreeing. Two captures from this host's fuzzer:

- seed 5398: four connections racing their SYN timers at D = 520.87 ms, the third and
  fourth disagreeing. Searched in connection order, the whole budget went to the first
  (which agreed), 25 s, and the third stayed wrong.
- seed 5400: four at D = 602.22 ms after an unmeasured warm-up connection, the
  capture's third (the model's fourth) disagreeing; its own position 8 ticks later
  explains it.
- seed 5412: four at D = 679.5 ms after a warm-up, the capture's second (the model's
  third) disagreeing. The search looked for it by the rows' numbers, one lower than the
  model's after a warm-up, so it moved the model's second, spent its 98 simulations
  there and stopped with the disagreement (packets._of_connection).
"""

from __future__ import annotations

import pytest

from tests.labs import host_captures
from tests.labs.search_spies import wheel_searches
from tfolab.lab import packets
from tfolab.lab.disagreements import Arrival
from tfolab.lab.prediction import accuracy_for

BUDGET = "transfer-long-d520.87-4it-6.18-wheel-budget"
WARM = "transfer-long-d679.5-3it-6.18-warm-wheel"
EARLIER = "handshake-plain-d602.22-4it-6.18-wheel-earlier-connection"


def _about_tcp(name: str, lab: str, scenario: str, settings: dict[str, str]) -> list[str]:
    delay, rows = host_captures.load(name)
    sim = host_captures.model(lab, scenario, settings, 4, delay, accuracy_for("nfqueue"))
    comparison = packets.compare(sim, rows, {})
    assert comparison.races_used >= 1
    return [d.sentence() for d in comparison.disagreements if not isinstance(d, Arrival)]


def test_the_connections_that_disagree_are_searched_first() -> None:
    settings = {"client_fastopen": "off", "cork": "true", "single_write": "false"}
    assert _about_tcp(BUDGET, "transfer", "long", settings) == []


def test_a_warm_up_connection_does_not_shift_the_search() -> None:
    settings = {
        "cookie_cache": "warm",
        "cork": "true",
        "first_write_bytes": "19530",
        "nodelay": "false",
        "pattern": "rr",
    }
    assert _about_tcp(EARLIER, "handshake", "plain", settings) == []


def test_the_disagreeing_connection_is_found_by_the_model_s_own_number(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tried = wheel_searches(monkeypatch)
    delay, rows = host_captures.load(WARM)
    sim = host_captures.model(
        "transfer", "long", {"cookie_cache": "warm"}, 3, delay, accuracy_for("nfqueue")
    )
    comparison = packets.compare(sim, rows, {})
    assert [d.sentence() for d in comparison.disagreements if not isinstance(d, Arrival)] == []
    assert comparison.simulation.wheel_offsets == ((3, 8),)
    assert tried == [3, 3]  # its own positions first: the second one explains it

"""The timer-wheel search's order (packets._wheel_order): the racing connections that
disagree first, then those that agree, the latest first, each one's turn ended by the
first position that leaves it agreeing. Two captures from this host's fuzzer:

- seed 5398: four connections racing their SYN timers at D = 520.87 ms, the third and
  fourth disagreeing. Searched in connection order, the whole budget went to the first
  (which agreed), 25 s, and the third stayed wrong.
- seed 5400: four at D = 602.22 ms, the third disagreeing; none of its own positions
  explains it, moving the second's does (its end is where the third begins).
"""

from __future__ import annotations

from tests.labs import host_captures
from tfolab.lab import packets
from tfolab.lab.disagreements import Arrival
from tfolab.lab.prediction import accuracy_for

BUDGET = "transfer-long-d520.87-4it-6.18-wheel-budget"
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


def test_an_agreeing_connection_before_is_searched_next() -> None:
    settings = {
        "cookie_cache": "warm",
        "cork": "true",
        "first_write_bytes": "19530",
        "nodelay": "false",
        "pattern": "rr",
    }
    assert _about_tcp(EARLIER, "handshake", "plain", settings) == []

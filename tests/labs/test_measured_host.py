"""The host's own timing, measured, given to the model where its on-time timers and instant
applications cannot show what the kernel did (tfolab.lab.measured_host).

Real captures from this project's 6.18 host (HZ 250) of the suite's fuzz case
`loss synack-lost --delay 926.46` (the client's SYN retransmitted twice, the path losing the
server's first SYN-ACK): the client's SYN timer ran 0.4-5.2 ms after its tick, a CPU waking
from a second's idle, which put a retransmitted SYN after the server's SYN-ACK timer's tick
where the model's on-time timers put it before: the server answered twice. Taken from what
the run measured (each retransmitted SYN's departure, the client's stamped write), the
model agrees packet for packet; without it, no bucket position does.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from tests.labs import host_captures
from tfolab.lab import packets
from tfolab.lab.prediction import accuracy_for
from tfolab.model import Simulation
from tfolab.model.captured import CapturedCall, CapturedRow
from tfolab.model.clock import ms_to_ns
from tfolab.model.simulation import other_buckets

CAPTURES = Path(__file__).parent / "captures"
SETTINGS = {
    "middlebox": "drop-tfo-syn",
    "msg_more": "false",
    "mtu": "54800",
    "pingpong_thresh": "255",
    "server_quickack": "true",
}


def _load(name: str) -> tuple[float, list[CapturedRow], list[CapturedCall], dict[int, float]]:
    data = json.loads((CAPTURES / f"{name}.json").read_text())
    rows = msgspec.convert(data["captured"], list[CapturedRow])
    calls = msgspec.convert(data["calls"], list[CapturedCall])
    starts = {int(i): t for i, t in data["starts"].items()}
    return data["delay_ms"], rows, calls, starts


def _model(delay_ms: float) -> Simulation:
    return host_captures.model(
        "loss", "synack-lost", SETTINGS, 1, delay_ms, accuracy=accuracy_for("nfqueue")
    )


def test_a_syn_timer_run_late_is_measured_and_the_kernel_agrees() -> None:
    """The second retransmission left 5.18 ms after its tick, after the server's own timer
    had answered: two SYN-ACKs 2.5 ms apart, which no on-time position sends."""
    delay_ms, rows, calls, starts = _load("loss-synack-lost-d926.46-6.18-syn-timers-late")
    comparison = packets.compare(_model(delay_ms), rows, starts, calls=calls)
    assert comparison.sentences == []
    chosen = comparison.simulation
    assert [k for _, k, _ in chosen.timers_late] == [0, 1]
    late = [ns for _, _, ns in chosen.timers_late]
    tick_ns = ms_to_ns(1000 / chosen.hz)
    assert 0 <= late[0] < tick_ns and tick_ns <= late[1] < 8 * tick_ns  # 1.41 and 5.18 ms
    assert comparison.races_used >= 1


def test_without_the_measured_timers_no_position_agrees() -> None:
    """The same capture against the model's own positions only: the extra SYN-ACK."""
    delay_ms, rows, _, starts = _load("loss-synack-lost-d926.46-6.18-syn-timers-late")
    sim = _model(delay_ms)
    kernel = packets.captured_rows(rows)
    aligned = packets.pairs(packets.model_rows(sim), kernel, packets.model_starts(sim), starts)
    assert packets._cost(aligned)[0] > 0
    for other in other_buckets(sim, 1):
        other_aligned = packets.pairs(
            packets.model_rows(other), kernel, packets.model_starts(other), starts
        )
        assert packets._cost(other_aligned)[0] > 0, other.wheel_offsets


@pytest.mark.parametrize("stamped", [True, False])
def test_a_slow_wake_lets_the_second_syn_ack_draw_its_challenge_first(stamped: bool) -> None:
    """The suite's CI capture: the two SYN-ACKs 0.54 ms apart, and the client's write after
    connect() 1.53 ms after the first (a wake after 2.8 s blocked): the second SYN-ACK's
    challenge ACK (seq 1) left before the request. With the write stamped the model takes
    the turn that late and agrees; without the stamp nothing says the application was
    slow, and the request's order stays a disagreement."""
    delay_ms, rows, calls, starts = _load("loss-synack-lost-d926.46-6.18-slow-connect-wake")
    comparison = packets.compare(_model(delay_ms), rows, starts, calls=calls if stamped else [])
    if not stamped:
        assert any("seq 17 ack 1" in s for s in comparison.sentences), comparison.sentences
        return
    assert comparison.sentences == []
    ((connection, side, turn, ns),) = comparison.simulation.slow_wakes
    assert (connection, side, turn) == (1, "client", 0)
    assert ns == pytest.approx(ms_to_ns(1.53), abs=ms_to_ns(0.02))

"""Each lab's headlines from physics, written here and not asked of the model.

Rules:
- An iteration's headline is a number of one-way trips (D each) plus, for
  each delayed ACK on its path, the delayed-ACK timer: 40 ms (ato = HZ/25
  jiffies), fired up to two ticks later (the timer wheel and the jiffies
  phase). A plain request waits two round trips (4D), a Fast Open request
  with a valid cookie one (2D), a Nagle-held second write the server's
  delayed ACK (4D + 40..48 ms at HZ=250).
- A lost SYN or SYN-ACK adds its timeouts (TIMEOUT_MS: the first anywhere in
  its wheel bucket, the next ones on the grid), at HZ 250 and Linux 6.5+.
- A lost request or response adds its tail-loss probe (PROBES): the first RTT
  sample is the handshake's 2D and some microseconds, so the probe waits
  2D + 200 ms rounded up past it to whole ticks, and fires within the next
  tick (up to a level-1 bucket's 8 more from 63 ticks on).
- The slack a real run may add is the model's stated accuracy, re-derived here
  from its constants: PER_PACKET_MS per packet on the path (the delay
  backend's error) and HOST_MS once; TICK_MS per timer is inside 40..48 ms.
- These are the numbers the tolerance formula in tfolab/model/predict.py and
  tfolab/lab/prediction.accuracy_for must reproduce; tests pin both.
"""

from __future__ import annotations

from typing import Any

from tests.timing import TimingMiss

HZ = 250
TICK_MS = 1000.0 / HZ
PER_PACKET_MS = {"nfqueue": 0.4, "netem": 0.3, "none": 0.1}
HOST_MS = 1.0  # realtime scheduling; 4.0 under normal scheduling

# (lab, scenario) -> per iteration: (one-way trips, delayed ACKs on the path, SYN or
# SYN-ACK timeouts on the path), at D > 0.
_4D, _2D, _4D_DELACK = (4, 0, 0), (2, 0, 0), (4, 1, 0)
HEADLINES: dict[tuple[str, str], list[tuple[int, int, int]]] = {
    ("handshake", "plain"): [_4D] * 3,
    ("fastopen", "cookie-request"): [_4D],
    ("fastopen", "cookie"): [_2D] * 3,
    ("fastopen", "plain"): [_4D] * 3,
    ("fastopen", "invalid-cookie"): [_4D, _2D],
    ("fastopen", "server-off"): [_4D] * 2,
    ("fastopen", "large-data"): [_4D] * 2,
    ("fastopen", "no-cookie"): [_2D] * 2,
    ("fastopen", "replay"): [_2D] * 2,
    # the SYN-data lost: the bare SYN after the timer, then SYN-ACK, data, answer
    ("fastopen", "syn-data-lost"): [(4, 0, 1), _2D],
    ("fastopen", "middlebox-drops-syn-data"): [(4, 0, 1)] * 2,
    ("fastopen", "middlebox-strips-option"): [_4D] * 2,
    ("delack", "nagle"): [_4D] + [_4D_DELACK] * 4,
    ("delack", "nodelay"): [_2D] * 5,
    ("delack", "single-write"): [_2D] * 5,
    ("delack", "cork"): [_2D] * 5,
    ("delack", "quickack"): [_4D] * 5,
    # slow start from ten segments: the k-th further flight one more round trip (2D) each
    ("transfer", "first-flight"): [_4D] * 3,
    ("transfer", "slow-start"): [(8, 0, 0)] * 3,  # flights of 10, 20, 12
    ("transfer", "long"): [(12, 0, 0)] * 3,  # 10, 20, 40, 80, 58
    # a lost SYN: 4D after the timer; a lost SYN-ACK: the SYN timer's SYN-ACK after 4D
    # too, or the server's own timer (armed D later) and 3D more: 4D after a timeout
    # either way; iteration 2 loses nothing
    ("loss", "syn-lost"): [(4, 0, 1), _4D],
    ("loss", "two-syns-lost"): [(4, 0, 2), _4D],
    ("loss", "synack-lost"): [(4, 0, 1), _4D],
    # a lost request or response: 4D after its probe (PROBES); iteration 2 loses nothing
    ("loss", "request-lost"): [_4D, _4D],
    ("loss", "probe-lost"): [_4D, _4D],
    ("loss", "response-lost"): [_4D, _4D],
    # a lost FIN or last ACK: after the response, so the headline does not move
    ("loss", "fin-lost"): [_4D, _4D],
    ("loss", "last-ack-lost"): [_4D, _4D],
}
# (lab, scenario) -> per iteration: the waits of an RTO's length on the path (0 where not
# listed): a tail-loss probe, and the RTO after a lost probe (restarted from the probe:
# the same ticks, its srtt unchanged)
PROBES = {
    ("loss", "request-lost"): [1, 0],
    ("loss", "probe-lost"): [2, 0],
    ("loss", "response-lost"): [1, 0],
}
# TCP_TIMEOUT_INIT: 250 ticks at HZ 250, on the wheel's level 1 (buckets of 8 ticks),
# so the first fires 1000 < t <= 1032 ms after it was armed; the next, armed as the
# first fires, on the grid: 1024 ms later on Linux 6.5+ (tcp_syn_linear_timeouts).
TIMEOUT_MS, TIMEOUT_BUCKET_MS, LINEAR_TIMEOUT_MS = 1000.0, 32.0, 1024.0


def headline_range(
    lab: str, scenario: str, i: int, delay_ms: float, hz: int = HZ
) -> tuple[float, float]:
    """Where iteration i (1-based) must fall by physics alone, without any slack.
    The delayed-ACK timer is HZ/25 jiffies (40 ms at any HZ that 25 divides), late
    by up to two ticks."""
    trips, delacks, timeouts = HEADLINES[(lab, scenario)][i - 1]
    delack_ms = (hz // 25) * 1000.0 / hz
    late_ms = 2 * 1000.0 / hz
    base = trips * delay_ms
    low, high = base + delacks * delack_ms, base + delacks * (delack_ms + late_ms)
    if timeouts:
        waits = TIMEOUT_MS + (timeouts - 1) * LINEAR_TIMEOUT_MS
        low, high = low + waits, high + waits + TIMEOUT_BUCKET_MS + 1000.0 / hz
    waits = PROBES.get((lab, scenario), [0] * i)[i - 1]
    if waits:
        ticks, spread = probe_ticks(delay_ms, hz)
        tick_ms = 1000.0 / hz
        low, high = low + waits * ticks * tick_ms, high + waits * (ticks + spread) * tick_ms
    return low, high


def probe_ticks(delay_ms: float, hz: int = HZ) -> tuple[int, int]:
    """A lone lost segment's probe after the handshake's sample (2D and some microseconds,
    under 200 ms): (ticks it waits past, ticks it may fire within): 2D + 200 ms rounded up
    past, then the next tick, or a level-1 bucket of 8 from 63 ticks on."""
    tick_ms = 1000.0 / hz
    ticks = int((2 * delay_ms + 200.0) // tick_ms) + 1
    return ticks, (1 if ticks < 63 else 8)


def measured_range(
    lab: str, scenario: str, i: int, delay_ms: float, backend: str, hz: int = HZ
) -> tuple[float, float]:
    """Where a real measurement must fall: physics, plus the backend's and host's slack."""
    low, high = headline_range(lab, scenario, i, delay_ms, hz)
    return low - 0.1, high + 4 * PER_PACKET_MS[backend] + HOST_MS  # four packets at most


def check_physics(result: dict[str, Any]) -> None:
    """Every measured iteration of a `tfolab run --json` result inside its physics range."""
    lab, delay_ms, backend = result["lab"], result["delay_ms"], result["backend"]
    outside = []
    for scenario in result["scenarios"]:
        for iteration in scenario["iterations"]:
            low, high = measured_range(
                lab, scenario["name"], iteration["i"], delay_ms, backend, result["hz"]
            )
            if not low <= iteration["measured_ms"] <= high:
                outside.append(
                    f"{scenario['name']} #{iteration['i']}: measured "
                    f"{iteration['measured_ms']:.2f} ms, physics says {low:.2f}..{high:.2f}"
                )
    if outside:
        raise TimingMiss("\n".join(outside))

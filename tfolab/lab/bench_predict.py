"""The bench's predicted gain: the model's handshake timings plus two measured terms.

What it is, exactly. The pure model (tfolab.model.simulate) gives the latency
of one fresh-connection request at one-way delay D and the packets on its
critical path: plain 4D over 4 packets (SYN, SYN-ACK, the request after the
handshake, the response), TFO with a cached cookie 2D over 2 (the request
rides in the SYN). The model has no CPU and an exact link. Two terms measured
in the same bench fill that in:

- s, the CPU per request: total time / N of the bundled server's run at D = 0
  (client, server and kernel together, under load), plain and TFO apiece;
- the delay backend's lateness per packet (the delayer's own median, from its
  statistics; 0 for netem and at D = 0).

The C requests in flight start together and their answers arrive together,
so each round trip's batch is handled one request after another: N requests
take N x ((model(D) + packets x lateness) / C + s). The predicted gain is
plain / TFO - 1, as the field report computed it. At D = 0 that is s_plain /
s_tfo - 1, the measured gain itself ("cpu"); without a D = 0 run there is no
CPU term and the prediction is the model's alone ("model"). Pure: no I/O, no
clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from tfolab.model import Accuracy, ScenarioConfig, simulate

# The bench's request, byte for byte as tfo-bench-client sends it to 127.0.0.1.
REQUEST_BYTES = len(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
FASTOPEN_QUEUE = 256


@dataclass(frozen=True)
class CpuTerm:
    """Seconds of CPU per request, plain and TFO, measured at D = 0."""

    plain_s: float
    tfo_s: float


@cache
def model_path(delay_ms: float, fastopen: bool) -> tuple[float, int]:
    """The model's connect-to-response time of one fresh request at one-way delay D,
    and the number of packets on its critical path."""
    config = ScenarioConfig(
        pattern="rr",
        client_fastopen="sendto" if fastopen else "off",
        server_fastopen_qlen=FASTOPEN_QUEUE,
        fastopen_sysctl=3,
        cookie_cache="warm",
        request_bytes=REQUEST_BYTES,
    )
    simulation = simulate(
        config, one_way_delay_ms=delay_ms, iterations=1, accuracy=Accuracy(host_overhead_ms=0.0)
    )
    prediction = simulation.predictions[0]
    return prediction.predicted_ms, prediction.packets_on_path


def predicted_total_s(
    delay_ms: float,
    fastopen: bool,
    requests: int,
    concurrency: int,
    cpu_s: float,
    late_ms: float = 0.0,
) -> float:
    """N requests, C in flight: the model's path plus the lateness, then the CPU term."""
    path_ms, packets = model_path(delay_ms, fastopen)
    round_trip_s = (path_ms + packets * late_ms) / 1000
    return requests * (round_trip_s / concurrency + cpu_s)


def predicted_gain_pct(
    delay_ms: float,
    requests: int,
    concurrency: int,
    cpu: CpuTerm | None,
    late_ms: float = 0.0,
) -> tuple[float | None, str]:
    """(the predicted gain in %, or None where nothing predicts it; what it rests on)."""
    plain_cpu, tfo_cpu = (cpu.plain_s, cpu.tfo_s) if cpu is not None else (0.0, 0.0)
    plain = predicted_total_s(delay_ms, False, requests, concurrency, plain_cpu, late_ms)
    tfo = predicted_total_s(delay_ms, True, requests, concurrency, tfo_cpu, late_ms)
    if tfo <= 0:
        return None, "none: no delay and no CPU term"
    basis = "model" if cpu is None else "cpu" if delay_ms == 0 else "model+cpu"
    return round((plain / tfo - 1) * 100, 1), basis

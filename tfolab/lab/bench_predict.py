"""The bench's predicted gain: the model's handshake timings plus a measured CPU term.

What it is, exactly. The pure model (tfolab.model.simulate) gives the latency
of one fresh-connection request at one-way delay D: plain 4D (SYN, SYN-ACK,
the request after the handshake, the response), TFO with a cached cookie 2D
(the request rides in the SYN). The model has no CPU: at D = 0 both are 0. The
CPU term is measured: s = total time / N of the bundled server's run at D = 0
(client, server and kernel together, per request, under load). With C requests
in flight, N requests take

    N x max((model(D) + s) / C, s)

(latency-bound when C requests share one round trip, CPU-bound when not), and
the predicted gain is plain / TFO - 1, as the field report computed it. At
D = 0 that is the CPU term alone, that is the measured gain itself ("cpu");
without a D = 0 run there is no CPU term and the prediction is the model's
alone ("model"). Pure: no I/O, no clock.
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
def model_latency_ms(delay_ms: float, fastopen: bool) -> float:
    """The model's connect-to-response time of one fresh request at one-way delay D."""
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
    return simulation.predictions[0].predicted_ms


def predicted_total_s(
    delay_ms: float, fastopen: bool, requests: int, concurrency: int, cpu_s: float
) -> float:
    latency_s = model_latency_ms(delay_ms, fastopen) / 1000 + cpu_s
    return requests * max(latency_s / concurrency, cpu_s)


def predicted_gain_pct(
    delay_ms: float, requests: int, concurrency: int, cpu: CpuTerm | None
) -> tuple[float | None, str]:
    """(the predicted gain in %, or None where nothing predicts it; what it rests on)."""
    plain_cpu, tfo_cpu = (cpu.plain_s, cpu.tfo_s) if cpu is not None else (0.0, 0.0)
    plain = predicted_total_s(delay_ms, False, requests, concurrency, plain_cpu)
    tfo = predicted_total_s(delay_ms, True, requests, concurrency, tfo_cpu)
    if tfo <= 0:
        return None, "none: no delay and no CPU term"
    basis = "model" if cpu is None else "cpu" if delay_ms == 0 else "model+cpu"
    return round((plain / tfo - 1) * 100, 1), basis

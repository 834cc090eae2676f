"""What a bench will run, checked whole before anything starts.

Rules: every refusal is a UserError raised here, from cheap looks only (no
namespace, no process): the delays, the request count, the concurrency
against the lab namespace's port range and this process's file limit, the
peer (nginx found or not), the delay backend. `plan_bench` returns the one
BenchPlan the runs follow; the concurrency rule lives here and is printed
with every result.
"""

from __future__ import annotations

import math
import resource
from dataclasses import dataclass
from typing import Literal

from tfolab.core import native
from tfolab.core.errors import UserError
from tfolab.lab.delay import parse_delay
from tfolab.model.domain import HANDSHAKE_MARGIN_MS, TCP_TIMEOUT_INIT_MS
from tfolab.runner.backends import likely_backend
from tfolab.runner.nginx import INSTALL_FIX, find_nginx

Peer = Literal["auto", "nginx", "none"]
PEERS: tuple[str, ...] = ("auto", "nginx", "none")
DEFAULT_DELAYS = "0,1,10,75"
DEFAULT_REQUESTS = 1024
MAX_REQUESTS = 100_000
MAX_DELAYS = 16
# Past this every connection's SYN timer fires before its SYN-ACK arrives, and each
# connection puts a SYN and two SYN-ACKs more on the wire: CPU the bench's term,
# measured at D = 0 where no timer fires, does not hold (bench_predict.py).
MAX_BENCH_DELAY_MS = (TCP_TIMEOUT_INIT_MS - HANDSHAKE_MARGIN_MS) / 2
# The automatic concurrency. A plain request takes 4D (two round trips), so N of
# them one at a time take N x 4D: 5 minutes at D = 75 ms. The rule keeps each
# plain run near PLAIN_RUN_BUDGET_S: C = the power of two >= N x 4D / budget.
# At D = 0 there is no round trip to wait for: the load is CPU, and C =
# CPU_CONCURRENCY keeps client and server busy at once (the issue's "D = 0
# with concurrency", where the two servers' requests/s are compared).
PLAIN_RUN_BUDGET_S = 5.0
CPU_CONCURRENCY = 8
# A fresh network namespace's net.ipv4.ip_local_port_range (the kernel's default,
# not the host's): every connection in flight holds one of these client ports.
NAMESPACE_PORTS = 60999 - 32768 + 1
FD_RESERVE = 16  # tfo-bench-client's descriptors beside its sockets


@dataclass(frozen=True)
class BenchPlan:
    delays: tuple[float, ...]
    requests: int
    concurrency: int | None  # as given; None = the automatic rule per delay
    servers: tuple[str, ...]  # "tfolab", then "nginx" where it runs
    nginx: str = ""
    peer_note: str = ""  # why nginx is not run, where it is not

    def concurrency_for(self, delay_ms: float) -> int:
        if self.concurrency is not None:
            return min(self.concurrency, self.requests)  # never more in flight than requests
        return auto_concurrency(delay_ms, self.requests)

    @property
    def concurrency_rule(self) -> str:
        if self.concurrency is not None:
            return f"--concurrency {self.concurrency} at every delay"
        return (
            f"automatic: {CPU_CONCURRENCY} at D = 0 (CPU-bound); else the power of two "
            f">= N x 4D / {PLAIN_RUN_BUDGET_S:g} s, so a plain run takes about "
            f"{PLAIN_RUN_BUDGET_S:g} s"
        )


def auto_concurrency(delay_ms: float, requests: int) -> int:
    if delay_ms == 0:
        return min(CPU_CONCURRENCY, requests)
    wanted = requests * 4 * delay_ms / 1000 / PLAIN_RUN_BUDGET_S
    if wanted <= 1:
        return 1
    power: int = 2 ** math.ceil(math.log2(wanted))
    return min(power, requests)


def parse_delays(text: str) -> tuple[float, ...]:
    parts = [part.strip() for part in text.split(",")]
    if not text.strip() or any(not part for part in parts):
        raise UserError(
            f"--delays {text!r} is not a list of delays",
            f"give one-way delays in ms separated by commas, e.g. --delays {DEFAULT_DELAYS}",
        )
    delays = tuple(parse_delay(part, f"--delays {DEFAULT_DELAYS}") for part in parts)
    if len(delays) > MAX_DELAYS:
        raise UserError(f"--delays gives {len(delays)} delays", f"give at most {MAX_DELAYS}")
    if len(set(delays)) != len(delays):
        raise UserError(f"--delays {text!r} repeats a delay", "give each delay once")
    beyond = [d for d in delays if d > MAX_BENCH_DELAY_MS]
    if beyond:
        raise UserError(
            f"--delays {beyond[0]:g} ms is beyond the bench's prediction: each "
            f"connection's SYN-ACK would come at or after the SYN's 1 s retransmission "
            f"timer (TCP_TIMEOUT_INIT), and the SYNs and SYN-ACKs sent again cost CPU "
            f"that its term, measured at D = 0, leaves out",
            f"give one-way delays up to {MAX_BENCH_DELAY_MS:g} ms (tfolab run follows "
            f"a single connection at any delay up to 1000 ms)",
        )
    return delays


def check_requests(requests: int) -> int:
    if not 1 <= requests <= MAX_REQUESTS:
        raise UserError(
            f"--requests {requests} is out of range",
            f"give 1 to {MAX_REQUESTS} requests per delay and mode, e.g. --requests 1024",
        )
    return requests


def file_limit() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else 1 << 30


def check_concurrency(concurrency: int) -> int:
    if concurrency < 1:
        raise UserError(f"--concurrency {concurrency} is out of range", "give 1 or more")
    if concurrency > NAMESPACE_PORTS:
        raise UserError(
            f"--concurrency {concurrency} is more than the lab namespace's "
            f"{NAMESPACE_PORTS} client ports (32768-60999)",
            f"give at most {NAMESPACE_PORTS}",
        )
    files = file_limit()
    if concurrency + FD_RESERVE > files:
        raise UserError(
            f"--concurrency {concurrency} needs {concurrency + FD_RESERVE} open files, "
            f"but this process may open {files} (RLIMIT_NOFILE)",
            f"give at most {files - FD_RESERVE}, or raise `ulimit -n`",
        )
    return concurrency


def choose_peer(peer: str) -> tuple[str, str]:
    """(the nginx executable or "", the note saying why it is not run)."""
    if peer == "none":
        return "", "nginx not run (--peer none)"
    found = find_nginx()
    if found is not None:
        return found, ""
    if peer == "nginx":
        raise UserError("--peer nginx: nginx is not installed", INSTALL_FIX)
    return "", "nginx is not installed, so the bench runs without its peer; get it with " \
        "`apt-get install nginx`"  # fmt: skip


def plan_bench(delays: str, requests: int, concurrency: int | None, peer: str) -> BenchPlan:
    """Every check of `tfolab bench`'s input, before anything runs."""
    parsed = parse_delays(delays)
    check_requests(requests)
    if concurrency is not None:
        check_concurrency(concurrency)
    else:
        for delay in parsed:
            check_concurrency(auto_concurrency(delay, requests))
    if peer not in PEERS:
        raise UserError(f"--peer {peer!r} is not a peer", "use auto, nginx or none")
    nginx, note = choose_peer(peer)
    try:
        native.executable_path("tfo-bench-client")
        native.executable_path("tfo-echo-server")
    except native.NativeError as err:
        raise UserError(str(err), "reinstall tfolab: pip install -e .") from None
    delayer = native.optional_executable("tfo-delay")
    for delay in parsed:
        likely_backend("auto", delay, delayer)
    servers = ("tfolab", "nginx") if nginx else ("tfolab",)
    return BenchPlan(parsed, requests, concurrency, servers, nginx, note)

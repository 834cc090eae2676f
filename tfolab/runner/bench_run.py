"""One delay of the bench, inside the lab namespace: each server, plain then TFO.

Rules: called only by the bench runner (bench_main.py), after the namespace and
the delay are in place. Both servers listen with the same TCP_FASTOPEN queue
and answer the same body. Every (server, mode) run is: one unmeasured warm-up
request (with TFO it learns the cookie), then the TcpExt counters and the
server's CPU time, then the measured requests by tfo-bench-client, then both
again, so the deltas belong to the measured requests alone. With several
rounds the servers alternate run by run, so a burst of load elsewhere on the
machine hits both alike.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tfolab.core.errors import UserError
from tfolab.runner import netstack
from tfolab.runner.nginx import BODY, FASTOPEN_QUEUE, NginxServer, start_nginx
from tfolab.runner.protocol import BenchJob, BenchMeasured, BenchProgress, Event, Note
from tfolab.runner.server import EchoServer, start_server_process

Emit = Callable[[Event], None]
CLIENT_TIMEOUT_MS = 10_000  # nothing at all happening for this long fails the run
PROGRESS_STEPS = 16  # progress lines per measured run


@dataclass
class BenchServers:
    """The servers of one delay, by name, and what stops them."""

    ports: dict[str, int] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)
    running: list[EchoServer | NginxServer] = field(default_factory=list)

    def stop(self) -> None:
        for server in self.running:
            server.stop()


def bundled_server_args(executable: str) -> list[str]:
    return [executable, "--bind", "127.0.0.1", "--port", "0", "--mode", "http",
            "--tfo", str(FASTOPEN_QUEUE), "--die-with-parent"]  # fmt: skip


def start_servers(job: BenchJob, server_executable: str) -> BenchServers:
    servers = BenchServers()
    try:
        for name in job.servers:
            if name == "tfolab":
                echo = start_server_process(bundled_server_args(server_executable))
                servers.running.append(echo)
                servers.ports[name] = echo.port
                servers.pids[name] = echo.process.pid
            elif name == "nginx":
                nginx = start_nginx(job.nginx, job.concurrency)
                servers.running.append(nginx)
                servers.ports[name] = nginx.port
                servers.pids[name] = nginx.process.pid
            else:
                raise UserError(f"unknown bench server {name!r}", "use tfolab or nginx")
    except BaseException:
        servers.stop()
        raise
    return servers


def client_args(
    executable: str,
    port: int,
    mode: str,
    requests: int,
    concurrency: int,
    warmup: int = 0,
    progress: bool = False,
) -> list[str]:
    """With `progress`, PROGRESS_STEPS lines per run; without (a CPU-bound run at D = 0,
    over in tens of ms), none: every line would wake two Python processes mid-measurement."""
    every = max(1, requests // PROGRESS_STEPS) if progress else 0
    args = [executable, "--connect", f"127.0.0.1:{port}", "--requests", str(requests),
            "--concurrency", str(concurrency), "--warmup", str(warmup),
            "--progress", str(every), "--timeout-ms", str(CLIENT_TIMEOUT_MS)]  # fmt: skip
    return [*args, "--tfo"] if mode == "tfo" else args


def run_client(args: list[str], on_progress: Callable[[int], None]) -> dict[str, object]:
    """Run tfo-bench-client; its progress lines go to on_progress, its JSON comes back."""
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stderr is not None
    last = ""
    for line in process.stdout:
        if line.startswith("progress "):
            on_progress(int(line.split()[1]))
        elif line.strip():
            last = line
    err = process.stderr.read()
    code = process.wait()
    if code != 0:
        said = err.strip().splitlines()
        raise UserError(
            f"the bench client failed: {said[-1] if said else f'exit {code}'}",
            "run `tfolab doctor`; lower --concurrency if the machine runs out of ports or files",
        )
    result: dict[str, object] = json.loads(last)
    return result


def curl_check(ports: dict[str, int]) -> list[str]:
    """`curl --tcp-fastopen` once against each server: the HTTP side, seen by another client."""
    curl = shutil.which("curl")
    if curl is None:
        return ["curl is not installed: the curl --tcp-fastopen check was skipped"]
    notes = []
    for name, port in ports.items():
        done = subprocess.run(
            [curl, "-s", "--tcp-fastopen", "--max-time", "5", f"http://127.0.0.1:{port}/"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        if done.returncode != 0 or done.stdout != BODY:
            raise UserError(
                f"curl --tcp-fastopen got no proper answer from {name} "
                f"(exit {done.returncode}, {len(done.stdout)} bytes)",
                "run `tfolab doctor`; the server's HTTP answer is wrong",
            )
        notes.append(f"curl --tcp-fastopen: {name} answered 200 with the {len(BODY)}-byte body")
    return notes


def cpu_ns(pid: int) -> int:
    """CPU time a process has used so far, ns (the first field of /proc/PID/schedstat)."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


def run_bench(job: BenchJob, servers: BenchServers, client_executable: str, emit: Emit) -> None:
    for note in curl_check(servers.ports):
        emit(Note("bench", note))
    for round_number in range(1, job.rounds + 1):
        for name, port in servers.ports.items():
            for mode in job.modes:
                emit(measure(job, name, port, mode, round_number, servers, client_executable, emit))


def measure(
    job: BenchJob,
    name: str,
    port: int,
    mode: str,
    round_number: int,
    servers: BenchServers,
    client_executable: str,
    emit: Emit,
) -> BenchMeasured:
    # Unmeasured: a first request (cold code paths; with TFO it learns the cookie).
    run_client(client_args(client_executable, port, mode, 1, 1), lambda _: None)
    before, cpu_before = netstack.read_tcpext(), cpu_ns(servers.pids[name])

    def progress(done: int) -> None:
        emit(BenchProgress(name, mode, done, job.requests))

    args = client_args(
        client_executable, port, mode, job.requests, job.concurrency, progress=job.delay_ms > 0
    )
    result = run_client(args, progress)
    cpu_after, after = cpu_ns(servers.pids[name]), netstack.read_tcpext()
    latencies, start, end = result["latency_us"], result["start_ns"], result["end_ns"]
    acked, client_cpu_us = result["syn_data_acked"], result["cpu_us"]
    assert isinstance(latencies, list) and isinstance(acked, int)
    assert isinstance(client_cpu_us, int | float)
    assert isinstance(start, int) and isinstance(end, int)
    return BenchMeasured(
        server=name,
        mode=mode,
        concurrency=job.concurrency,
        total_ms=round((end - start) / 1e6, 3),
        latencies_us=[float(v) for v in latencies],
        syn_data_acked=acked,
        counters=netstack.counter_deltas(before, after),
        round=round_number,
        server_cpu_ms=round((cpu_after - cpu_before) / 1e6, 3),
        client_cpu_ms=round(client_cpu_us / 1000, 3),
    )

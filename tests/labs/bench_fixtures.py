"""A BenchResult built by hand, for the tests of presentation and shape (never a
measurement: the real-run tests measure)."""

from __future__ import annotations

from tfolab.lab.bench import BenchResult, BenchRow, ModeFigures
from tfolab.lab.bench_plan import BenchPlan

ACTIVE = {"TCPFastOpenActive": 8, "TCPFastOpenPassive": 8}


def figures(total_s: float, latency_ms: float, acked: int) -> ModeFigures:
    latencies = tuple(latency_ms + 0.01 * i for i in range(8))
    counters = ACTIVE if acked else {"TCPFastOpenActive": 0, "TCPFastOpenPassive": 0}
    return ModeFigures(total_s, latencies, acked, dict(counters), server_cpu_ms=0.2)


def made_result(servers: tuple[str, ...] = ("tfolab", "nginx")) -> BenchResult:
    plan = BenchPlan((0.0, 10.0), 8, None, servers, "/usr/sbin/nginx" if "nginx" in servers else "")
    result = BenchResult(plan, kernel_release="6.1", runtime_s=3.0)
    for delay, backend, concurrency in ((0.0, "none", 8), (10.0, "nfqueue", 1)):
        for server in servers:
            row = BenchRow(delay, server, backend, concurrency, 9 if delay == 0 else 1)
            if delay == 0:
                slower = 1.1 if server == "nginx" else 1.0
                row.modes["plain"] = figures(0.0008 * slower, 0.3, 0)
                row.modes["tfo"] = figures(0.0006 * slower, 0.25, 8)
            else:
                row.modes["plain"] = figures(0.33, 41.0, 0)
                row.modes["tfo"] = figures(0.17, 21.0, 8)
            result.rows.append(row)
    result.predict()
    return result

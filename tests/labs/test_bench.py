"""The bench's pure parts: the plan's rules, the predicted gain, nginx's config,
the JSON contract and the report (table, closing lines, plots)."""

from __future__ import annotations

import math
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tests.labs.bench_fixtures import made_result
from tfolab.lab.bench_plan import CPU_CONCURRENCY, MAX_BENCH_DELAY_MS, auto_concurrency
from tfolab.lab.bench_predict import REQUEST_BYTES, CpuTerm, model_path, predicted_gain_pct
from tfolab.runner.nginx import BODY, nginx_config
from tfolab.view.bench_report import closing, plots, table


def test_the_model_path_is_four_one_way_delays_plain_and_two_with_fastopen() -> None:
    for delay in (0.5, 1.0, 10.0, 75.0):
        assert model_path(delay, False) == (4 * delay, 4)
        assert model_path(delay, True) == (2 * delay, 2)


def test_the_request_is_the_clients_get() -> None:
    assert REQUEST_BYTES == 54


@given(
    delay=st.floats(0.1, MAX_BENCH_DELAY_MS),
    plain_us=st.floats(5, 500),
    ratio=st.floats(1.0, 2.0),
    concurrency=st.sampled_from([1, 4, 16, 64]),
)
def test_the_gain_tends_to_100_percent_and_never_exceeds_it(
    delay: float, plain_us: float, ratio: float, concurrency: int
) -> None:
    """TFO saves one of two round trips; with TFO's CPU at most plain's and at least half
    of it, nothing can save more."""
    cpu = CpuTerm(plain_us / 1e6, plain_us / ratio / 1e6)
    gain, basis = predicted_gain_pct(delay, 1024, concurrency, cpu)
    assert basis == "model+cpu"
    assert gain is not None and 0 <= gain <= 100.0


def test_the_gain_grows_with_the_delay_towards_100() -> None:
    cpu = CpuTerm(60e-6, 45e-6)
    gains = [predicted_gain_pct(d, 1024, 1, cpu)[0] for d in (0.0, 0.1, 1.0, 10.0, 75.0, 450.0)]
    assert gains == sorted(gains)
    assert gains[0] == round((60 / 45 - 1) * 100, 1)  # D = 0: the CPU term alone
    assert gains[-1] is not None and gains[-1] > 99.9


def test_at_zero_delay_the_prediction_is_the_cpu_term_and_says_so() -> None:
    assert predicted_gain_pct(0.0, 1024, 8, CpuTerm(50e-6, 40e-6)) == (25.0, "cpu")
    assert predicted_gain_pct(0.0, 1024, 8, None) == (None, "none: no delay and no CPU term")
    assert predicted_gain_pct(10.0, 1024, 8, None) == (100.0, "model")


def test_the_delayers_lateness_counts_per_packet_on_the_path() -> None:
    # plain: 4 packets, TFO: 2, each late by 1 ms at D = 1: (4 + 4) / (2 + 2) - 1
    assert predicted_gain_pct(1.0, 10, 1, None, late_ms=1.0) == (100.0, "model")
    assert predicted_gain_pct(1.0, 10, 1, CpuTerm(1e-3, 1e-3), late_ms=1.0)[0] == round(
        (9 / 5 - 1) * 100, 1
    )


def test_auto_concurrency_keeps_a_plain_run_near_five_seconds() -> None:
    assert auto_concurrency(0.0, 1024) == CPU_CONCURRENCY
    assert auto_concurrency(0.0, 4) == 4
    assert auto_concurrency(1.0, 1024) == 1
    assert auto_concurrency(10.0, 1024) == 16
    assert auto_concurrency(75.0, 1024) == 64
    assert auto_concurrency(1000.0, 16) == 16  # never more than the requests
    for delay in (1.0, 10.0, 75.0, 300.0):
        c = auto_concurrency(delay, 1024)
        assert 1024 * 4 * delay / 1000 / c <= 5.0
        assert math.log2(c).is_integer()


def test_nginx_config_is_one_process_writing_only_into_its_folder(tmp_path: Path) -> None:
    text = nginx_config(tmp_path, 8123, 64)
    for line in (
        "daemon off;",
        "master_process off;",
        "worker_processes 1;",
        "access_log off;",
        "listen 127.0.0.1:8123 fastopen=256 backlog=4096;",
        f'return 200 "{BODY.strip()}\\n";',
    ):
        assert line in text, line
    paths = [
        w.rstrip(";") for w in text.split() if w.startswith("/") and w != "/"
    ]  # not `location /`
    assert paths and all(Path(p).is_relative_to(tmp_path) for p in paths), paths
    assert "worker_connections 1024;" in text
    assert "worker_connections 4064;" in nginx_config(tmp_path, 1, 2000)


def test_json_has_the_issues_shape() -> None:
    data = made_result().to_json()
    assert data["requests"] == 8 and data["concurrency"] == "auto"
    assert data["backend"] == "nfqueue"
    assert isinstance(data["concurrency_rule"], str)
    results = data["results"]
    assert isinstance(results, list) and len(results) == 4
    first = results[0]
    assert {"delay_ms", "server", "plain", "tfo", "gain_pct", "predicted_gain_pct",
            "counters", "concurrency", "backend"} <= set(first)  # fmt: skip
    for mode in ("plain", "tfo"):
        assert {"total_s", "req_per_s", "p50_ms", "p99_ms"} <= set(first[mode])
    assert [(r["delay_ms"], r["server"]) for r in results] == [
        (0.0, "tfolab"), (0.0, "nginx"), (10.0, "tfolab"), (10.0, "nginx"),
    ]  # fmt: skip
    assert results[2]["gain_pct"] == round((0.33 / 0.17 - 1) * 100, 1)
    assert data["server_vs_nginx"] == {"plain": 1.1, "tfo": 1.1}
    assert first["counters"]["tfo"]["TCPFastOpenActive"] == 8


def test_without_nginx_there_is_no_ratio_and_the_report_says_why() -> None:
    result = made_result(("tfolab",))
    result.plan = result.plan.__class__(
        (0.0, 10.0), 8, None, ("tfolab",), "", "nginx not run (--peer none)"
    )
    assert result.to_json()["server_vs_nginx"] is None
    assert "nginx not run (--peer none)" in closing(result)


def test_the_report_and_its_plots() -> None:
    result = made_result()
    text = table(result)
    assert "Active 8 Passive 8 (plain 0)" in text
    assert "+94.1%" in text  # 0.33 / 0.17 - 1
    words = "\n".join(closing(result))
    assert "bundled server vs nginx at D = 0 (req/s / req/s): plain 1.10, tfo 1.10" in words
    drawn = plots(result, width=80, height=16)
    assert "TFO gain vs RTT" in drawn
    assert "measured" in drawn and "predicted" in drawn and "nginx" in drawn
    assert "latency: tfolab, RTT 20 ms, C 1" in drawn
    assert "\x1b[" not in drawn  # no colours unless asked for

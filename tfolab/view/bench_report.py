"""The bench in words and plots: the table, the closing lines, and two plotext plots.

Rules: presentation only, no I/O. The plots are plotext figures drawn into
strings (`plt.build()`), for the CLI; the UI's widget draws the same series
(`gain_series`, `latency_series`) with textual-plotext. Plot axes are the RTT
(2 x the one-way delay), the way people quote a path's latency.
"""

from __future__ import annotations

from dataclasses import dataclass

import plotext as plt

from tfolab.lab.bench import BUNDLED, MODES, BenchResult, BenchRow
from tfolab.view.plot_target import PlotTarget


def _ms(value: float) -> str:
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f}%"


def header(result: BenchResult) -> list[str]:
    plan = result.plan
    return [
        f"tfolab bench: {plan.requests} fresh connections per server, delay and mode, "
        "each one HTTP GET and its response",
        f"  delay backend {result.backend}, kernel {result.kernel_release or '?'}, "
        f"runtime {result.runtime_s:.1f} s",
        f"  concurrency: {plan.concurrency_rule}",
    ]


def table(result: BenchResult) -> str:
    head = (
        f"{'D ms':>6} {'RTT':>5} {'server':<7} {'C':>4} | {'plain s':>8} {'req/s':>7} "
        f"{'p50 ms':>7} {'p99 ms':>7} | {'TFO s':>8} {'req/s':>7} {'p50 ms':>7} "
        f"{'p99 ms':>7} | {'gain':>7} {'model':>7} | TFO proof"
    )
    lines = [head, "-" * len(head)]
    for row in result.rows:
        cells = [f"{row.delay_ms:>6g} {2 * row.delay_ms:>5g} {row.server:<7} {row.concurrency:>4}"]
        for mode in MODES:
            figures = row.modes.get(mode)
            if figures is None:
                cells.append(f"{'-':>8} {'-':>7} {'-':>7} {'-':>7}")
                continue
            cells.append(
                f"{figures.total_s:>8.3f} {figures.req_per_s:>7.0f} "
                f"{_ms(figures.percentile_ms(50)):>7} {_ms(figures.percentile_ms(99)):>7}"
            )
        cells.append(f"{_pct(row.gain_pct):>7} {_pct(row.predicted_gain_pct):>7}")
        cells.append(proof(row))
        lines.append(" | ".join(cells))
    return "\n".join(lines)


def proof(row: BenchRow) -> str:
    """The counters that say TFO happened: the TFO run's Active/Passive, the plain run's."""
    tfo = row.modes.get("tfo")
    plain = row.modes.get("plain")
    if tfo is None:
        return "-"
    active = tfo.counters.get("TCPFastOpenActive", 0)
    passive = tfo.counters.get("TCPFastOpenPassive", 0)
    plain_active = plain.counters.get("TCPFastOpenActive", 0) if plain else 0
    return f"Active {active} Passive {passive} (plain {plain_active})"


def closing(result: BenchResult) -> list[str]:
    lines = []
    ratio = result.server_vs_nginx()
    if ratio:
        words = ", ".join(f"{mode} {value:.2f}" for mode, value in ratio.items())
        lines.append(f"bundled server vs nginx at D = 0 (req/s / req/s): {words}")
        ours, theirs = result.row(0.0, BUNDLED), result.row(0.0, "nginx")
        if ours is not None and theirs is not None:
            lines.append(
                f"gain at D = 0 (only CPU is saved): tfolab {_pct(ours.gain_pct)}, "
                f"nginx {_pct(theirs.gain_pct)} (median of {ours.rounds} alternating rounds)"
            )
            cpu = ", ".join(
                f"{mode} {ours.modes[mode].server_cpu_us_per_request:.1f} vs "
                f"{theirs.modes[mode].server_cpu_us_per_request:.1f}"
                for mode in MODES
                if mode in ours.modes and mode in theirs.modes
            )
            lines.append(f"server CPU per request at D = 0, us (tfolab vs nginx): {cpu}")
            client = ", ".join(
                f"{mode} {ours.modes[mode].client_cpu_us_per_request:.1f} / "
                f"{theirs.modes[mode].client_cpu_us_per_request:.1f}"
                for mode in MODES
                if mode in ours.modes and mode in theirs.modes
            )
            lines.append(
                f"client CPU per request at D = 0, us (against tfolab / nginx): {client}: "
                "on loopback the connecting process carries most of the handshake, so the "
                "client, not the server, bounds the requests/s"
            )
    elif "nginx" not in result.plan.servers:
        lines.append(result.plan.peer_note)
    else:
        lines.append("no D = 0 run, so no bundled-vs-nginx ratio (add 0 to --delays)")
    bases = {row.predicted_from for row in result.rows}
    if "model" in bases:
        lines.append("model: the model's handshake alone (no D = 0 run measured the CPU term)")
    else:
        lines.append(
            "model: the model's 4D (plain) and 2D (TFO) plus the CPU per request measured "
            "at D = 0; at D = 0 it is that CPU term alone"
        )
    return lines


# One marker per series, so the plots read without colours too.
MARKERS = {"measured": "hd", "predicted": "x", "nginx": "o", "plain": "hd", "tfo": "x"}


@dataclass(frozen=True)
class Series:
    label: str
    x: list[float]
    y: list[float]


def rtt_labels(result: BenchResult) -> list[str]:
    return [f"{2 * d:g}" for d in result.plan.delays]


def gain_series(result: BenchResult) -> list[Series]:
    """Gain (%) by delay position: measured (bundled), predicted, nginx."""
    positions = {d: i for i, d in enumerate(result.plan.delays)}
    series = []
    for label, server, value in (
        ("measured", BUNDLED, "gain"),
        ("predicted", BUNDLED, "predicted"),
        ("nginx", "nginx", "gain"),
    ):
        xs, ys = [], []
        for row in result.rows:
            number = row.gain_pct if value == "gain" else row.predicted_gain_pct
            if row.server == server and number is not None:
                xs.append(float(positions[row.delay_ms]))
                ys.append(number)
        if xs:
            series.append(Series(label, xs, ys))
    return series


def latency_series(row: BenchRow) -> list[Series]:
    """Per-request latencies (ms) of one row, plain and TFO."""
    return [
        Series(mode, [], list(figures.latencies_ms))
        for mode, figures in row.modes.items()
        if figures.latencies_ms
    ]


def latency_row(result: BenchResult) -> BenchRow | None:
    """The row whose latency distribution the CLI shows: the bundled server's largest delay."""
    ours = [row for row in result.rows if row.server == BUNDLED]
    return max(ours, key=lambda row: row.delay_ms) if ours else None


def draw_gain(p: PlotTarget, result: BenchResult) -> None:
    """Draw gain vs RTT on a plotext figure (the module, or textual-plotext's `plt`)."""
    labels = rtt_labels(result)
    for series in gain_series(result):
        p.plot(series.x, series.y, label=series.label, marker=MARKERS[series.label])
    p.xticks(list(range(len(labels))), labels)
    p.hline(100.0)
    p.title("TFO gain vs RTT")
    p.xlabel("RTT ms")
    p.ylabel("gain %")


def draw_latency(p: PlotTarget, row: BenchRow, bins: int = 40) -> None:
    for series in latency_series(row):
        p.hist(series.y, bins, label=series.label, marker=MARKERS[series.label])
    p.title(f"latency: {row.server}, RTT {2 * row.delay_ms:g} ms, C {row.concurrency}")
    p.xlabel("ms, connect() to the response's last byte")
    p.ylabel("requests")


def plots(result: BenchResult, width: int = 100, height: int = 20, color: bool = False) -> str:
    """Both plots as one string for the terminal."""
    out = []
    plt.clear_figure()
    plt.plotsize(width, height)
    draw_gain(plt, result)
    out.append(plt.build())
    row = latency_row(result)
    if row is not None:
        plt.clear_figure()
        plt.plotsize(width, height)
        draw_latency(plt, row)
        out.append(plt.build())
    plt.clear_figure()
    text = "\n\n".join(out)
    return text if color else plt.uncolorize(text)

"""Text reports for the command line: the lab list, the results table, the conclusion.

Rules: pure functions from results to strings; no printing, no I/O.
"""

from __future__ import annotations

import statistics

from tfolab.labrun import LabResult
from tfolab.labs import Lab


def lab_list(labs: list[Lab]) -> str:
    lines = []
    for lab in labs:
        lines.append(f"{lab.name:<10} {lab.title}: {lab.summary}")
        width = max(len(s.name) for s in lab.scenarios)
        for scenario in lab.scenarios:
            lines.append(f"  {scenario.name:<{width}}  {scenario.summary}")
        lines.append("")
    lines.append("Model only: tfolab simulate LAB [--scenario NAME] [--delay MS]")
    lines.append("Real run:   tfolab run LAB [--scenario NAME] [--delay MS]")
    return "\n".join(lines)


def delay_words(delay_ms: float) -> str:
    return f"one-way delay D = {delay_ms:g} ms (RTT = {2 * delay_ms:g} ms)"


def results_table(result: LabResult) -> str:
    header = f"{'scenario':<16} {'#':>2}  {'predicted':>16}  {'measured':>9}  verdict"
    lines = [header, "-" * len(header)]
    for scenario in result.scenarios:
        for m in scenario.measurements:
            band = f"{m.predicted_ms:7.1f} ± {m.tolerance_ms:4.1f} ms"
            if m.measured_ms is None:
                measured, verdict = "-", "not measured"
            else:
                measured = f"{m.measured_ms:6.1f} ms"
                verdict = "ok" if m.ok else f"OUTSIDE by {m.off_by_ms:.1f} ms"
            lines.append(
                f"{scenario.planned.name:<16} {m.i:>2}  {band:>16}  {measured:>9}  {verdict}"
            )
    return "\n".join(lines)


def counters_text(result: LabResult) -> str:
    lines = ["TcpExt counters (deltas inside the lab namespace):"]
    for scenario in result.scenarios:
        moved = {k: v for k, v in scenario.counters.items() if v}
        text = ", ".join(f"{k} +{v}" for k, v in sorted(moved.items())) or "none moved"
        lines.append(f"  {scenario.planned.name:<16} {text}")
    return "\n".join(lines)


def conclusion(result: LabResult) -> str:
    measured = [m for s in result.scenarios for m in s.measurements if m.measured_ms is not None]
    failures = result.failures
    if not failures:
        first = (
            f"All {len(measured)} measurements fell inside their predicted bands: "
            f"the kernel agrees with the model ({result.backend}, {delay_words(result.delay_ms)})."
        )
    else:
        name, worst = max(failures, key=lambda f: f[1].off_by_ms)
        assert worst.measured_ms is not None
        side = "above" if worst.measured_ms > worst.predicted_ms else "below"
        first = (
            f"{len(failures)} of {len(measured)} measurements fell outside their bands; "
            f"worst: {name} #{worst.i} measured {worst.measured_ms:.1f} ms, "
            f"{worst.off_by_ms:.1f} ms {side} its band."
        )
    return first + "\n" + round_trips_line(result)


def round_trips_line(result: LabResult) -> str:
    rtt = 2 * result.delay_ms
    parts = []
    for scenario in result.scenarios:
        values = [m.measured_ms for m in scenario.measurements if m.measured_ms is not None]
        if not values:
            continue
        median = statistics.median(values)
        parts.append(
            f"{scenario.planned.name} {median / rtt:.1f}"
            if rtt
            else f"{scenario.planned.name} {median:.1f} ms"
        )
    if rtt:
        return f"Median time in round trips (RTT = {rtt:g} ms): " + ", ".join(parts) + "."
    return "With no added delay, what remains is timers and the host: " + ", ".join(parts) + "."

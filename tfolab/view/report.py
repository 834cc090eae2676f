"""Text reports for the command line: the lab list, the results table, the conclusion.

Rules: pure functions from results to strings; no printing, no I/O. A run's
verdict, misses, capture status and progress are worded once, in
view/run_summary.py; this module lays them out as the CLI's text.
"""

from __future__ import annotations

import statistics

from tfolab.lab.catalog import BrokenLab, Lab
from tfolab.lab.results import LabResult, ScenarioResult
from tfolab.model import IterationPrediction
from tfolab.view.run_summary import (
    Capture,
    capture_status,
    counter_rows,
    delay_words,
    summarize,
    verdict_words,
)


def lab_list(labs: list[Lab], broken: tuple[BrokenLab, ...] | list[BrokenLab] = ()) -> str:
    lines = []
    for lab in labs:
        lines.append(f"{lab.name:<10} {lab.title}: {lab.summary}")
        width = max(len(s.name) for s in lab.scenarios)
        for scenario in lab.scenarios:
            lines.append(f"  {scenario.name:<{width}}  {scenario.summary}")
        lines.append("")
    for bad in broken:
        lines.append(f"{bad.name:<10} BROKEN: {bad.message}")
        lines.append("")
    if not labs and not broken:
        lines += ["(no lab files here)", ""]
    lines.append("Model only: tfolab simulate LAB [--scenario NAME | --ladder] [--delay MS]")
    lines.append("Real run:   tfolab run LAB [--scenario NAME] [--delay MS]")
    return "\n".join(lines)


def simulation_summary(lab: Lab, result: LabResult) -> str:
    """`tfolab simulate` without a scenario: one line per scenario, its predicted headline."""
    rtt = 2 * result.delay_ms
    lines = [
        f"{lab.title} ({lab.name}), model only: {delay_words(result.delay_ms)}, HZ {result.hz}"
    ]
    headline = lab.headline_for(result.scenarios[0].planned.config) if result.scenarios else ""
    if headline:
        lines.append(f"Headline: {headline}")
    lines.append("")
    titles = ["scenario", "its", "predicted"]
    if rtt:
        titles.append(f"in round trips (RTT {rtt:g} ms)")
    rows = []
    for scenario in result.scenarios:
        predicted = [m.predicted_ms for m in scenario.measurements]
        row = [scenario.planned.name, str(len(predicted)), _per_iteration(predicted, 1.0, " ms")]
        if rtt:
            row.append(_per_iteration_words(scenario))
        rows.append(row)
    widths = [max(len(row[i]) for row in [titles, *rows]) for i in range(len(titles))]
    for row in [titles, ["-" * w for w in widths], *rows]:
        cells = [
            cell.rjust(width) if column == 1 else cell.ljust(width)
            for column, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    lines.append("")
    lines.append(
        f"Ladder diagrams: tfolab simulate {lab.name} --scenario NAME (or --ladder for all)."
    )
    return "\n".join(lines)


def _per_iteration(values_ms: list[float], unit_ms: float, suffix: str) -> str:
    """'20.4 ms', 'first 40.8 ms, later 20.4 ms' or every value when they all differ."""
    shown = [f"{value / unit_ms:.1f}" for value in values_ms]
    if not shown:
        return "-"
    if len(set(shown)) == 1:
        return shown[0] + suffix + (" each" if len(shown) > 1 else "")
    if len(set(shown[1:])) == 1:
        return f"first {shown[0]}{suffix}, later {shown[1]}{suffix}"
    return ", ".join(shown) + suffix


def path_words(prediction: IterationPrediction) -> str:
    """An iteration's critical path in whole round trips: '2 RTT', '2 RTT + delayed ACK'.

    From the model's path (one-way trips and timers on it), never from a time:
    an iteration takes whole round trips plus whole timers, and a median of
    iterations that took different paths (1.5 RTT) is a time no iteration took.
    """
    hops = prediction.packets_on_path
    words = f"{hops // 2} RTT" if hops % 2 == 0 else f"{hops}D"
    names = prediction.timer_names
    for name, one, many in (
        ("delack", "delayed ACK", "delayed ACKs"),
        ("syn", "SYN timeout", "SYN timeouts"),
        ("synack", "SYN-ACK timeout", "SYN-ACK timeouts"),
        ("rto", "retransmission timeout", "retransmission timeouts"),
        ("tlp", "loss probe", "loss probes"),
    ):
        count = names.count(name)
        if count:
            words += f" + {one}" if count == 1 else f" + {count} {many}"
    return words


def path_groups(scenario: ScenarioResult) -> list[tuple[list[int], str]]:
    """Runs of consecutive iterations that take the same path: ([1], '2 RTT'), ([2, 3], '1 RTT')."""
    groups: list[tuple[list[int], str]] = []
    for prediction in scenario.simulation.predictions:
        words = path_words(prediction)
        if groups and groups[-1][1] == words:
            groups[-1][0].append(prediction.i)
        else:
            groups.append(([prediction.i], words))
    return groups


def _per_iteration_words(scenario: ScenarioResult) -> str:
    """'1 RTT each', 'first 2 RTT, later 1 RTT', or '#1 2 RTT, #2 1 RTT, #3-4 ...'."""
    groups = path_groups(scenario)
    if len(groups) == 1:
        iterations, words = groups[0]
        return words + (" each" if len(iterations) > 1 else "")
    if len(groups) == 2 and len(groups[0][0]) == 1:
        return f"first {groups[0][1]}, later {groups[1][1]}"
    return ", ".join(f"{_span(its)} {words}" for its, words in groups)


def _span(iterations: list[int]) -> str:
    if len(iterations) == 1:
        return f"#{iterations[0]}"
    return f"#{iterations[0]}-{iterations[-1]}"


def scenario_heading(lab: Lab, scenario: ScenarioResult) -> str:
    return f"== {lab.name} / {scenario.planned.name}: {scenario.planned.summary}"


def results_table(result: LabResult) -> str:
    header = (
        f"{'scenario':<16} {'#':>2}  {'predicted':>16}  {'measured':>9}  {'packets':>13}  "
        f"{'app got':>7}  verdict"
    )
    lines = [header, "-" * len(header)]
    for scenario in result.scenarios:
        packets = packets_cell(scenario)
        requests = f"{scenario.app['requests']} req" if scenario.app else "-"
        for m in scenario.measurements:
            band = f"{m.predicted_ms:7.1f} ± {m.tolerance_ms:4.1f} ms"
            if m.measured_ms is None:
                measured, verdict = "-", "not measured"
            else:
                measured = f"{m.measured_ms:6.1f} ms"
                verdict = "ok" if m.ok else f"OUTSIDE by {m.off_by_ms:.1f} ms"
                if abs(m.backend_late_ms) >= 0.05:  # the band stood this much later
                    verdict += f" (delayer {m.backend_late_ms:.1f} ms late)"
                if abs(m.apps_late_ms) >= 0.05:  # the applications' measured wake-ups
                    verdict += f" (applications {m.apps_late_ms:.1f} ms slow)"
            lines.append(
                f"{scenario.planned.name:<16} {m.i:>2}  {band:>16}  {measured:>9}  "
                f"{packets:>13}  {requests:>7}  {verdict}"
            )
            packets = requests = ""  # once per scenario: the scenario's, not the round's
    return "\n".join(lines)


def packets_cell(scenario: ScenarioResult) -> str:
    """'14/14 match', '12/14 match', or '-' where nothing was captured."""
    if scenario.captured is None:
        return "-"
    agree, total = scenario.packets_matching
    return f"{agree}/{total} match"


def packet_lines(result: LabResult) -> list[str]:
    """The packet disagreements, one sentence each, or why there are none to show."""
    status = capture_status(result)
    if status.state is Capture.OFF:
        return [f"Packets not captured: {status.why}. Only the timings were compared."]
    lines = []
    for name, sentence in result.packet_failures:
        lines.append(f"  {name}: {sentence}")
    for scenario in result.scenarios:
        if scenario.comparison is not None and scenario.comparison.search_cut:
            lines.append(
                f"  {scenario.planned.name}: the search for the readers' races stopped at its"
                f" limit of {scenario.comparison.search_cut} re-simulations for a timeline this"
                " long; a disagreement above may be a race it did not reach"
            )
    if lines:
        return ["The kernel's packets disagree with the model's:", *lines]
    if any(s.captured is not None for s in result.scenarios):
        return [
            "Every captured packet matches the model's ladder (flags, seq/ack, length, options)."
        ]
    return []


def counters_text(result: LabResult) -> str:
    """The counters that moved, each beside the model's figure; then any disagreement."""
    lines = ["TcpExt counters (deltas inside the lab namespace; the model's in brackets):"]
    for scenario in result.scenarios:
        text = (
            ", ".join(
                f"{row.name} +{row.measured}"
                + (f" (model +{row.predicted})" if row.predicted is not None else "")
                for row in counter_rows(scenario)
            )
            or "none moved (model: none)"
        )
        lines.append(f"  {scenario.planned.name:<16} {text}")
    lines.append(
        "The server application (the echo server's own counts) accepted / received requests:"
    )
    for scenario in result.scenarios:
        lines.append(f"  {scenario.planned.name:<16} {app_words(scenario)}")
    for name, sentence in result.counter_failures:
        lines.append(f"  {name}: DISAGREES: {sentence}")
    return "\n".join(lines)


def app_words(scenario: ScenarioResult) -> str:
    """'2 connections, 2 requests (model 2, 2)'; the model alone when nothing was measured."""
    model = scenario.simulation.app
    predicted = f"{model.get('accepted', 0)}, {model.get('requests', 0)}"
    if not scenario.app:
        return f"model: {predicted}"
    accepted, requests = scenario.app["accepted"], scenario.app["requests"]
    return (
        f"{accepted} connection{'s' * (accepted != 1)}, "
        f"{requests} request{'s' * (requests != 1)} (model {predicted})"
    )


def conclusion(result: LabResult) -> str:
    """The run's verdict, then its round trips."""
    return verdict_words(summarize(result)) + "\n" + round_trips_line(result)


def round_trips_line(result: LabResult) -> str:
    """Each scenario in whole round trips per iteration, with the measured median of each kind."""
    rtt = 2 * result.delay_ms
    parts = []
    for scenario in result.scenarios:
        measured = {m.i: m.measured_ms for m in scenario.measurements if m.measured_ms is not None}
        if not measured:
            continue
        groups = path_groups(scenario)
        pieces = []
        for iterations, words in groups:
            values = [measured[i] for i in iterations if i in measured]
            if not values:
                continue
            if not rtt:
                words = words.removeprefix("0 RTT + ").replace("0 RTT", "no timer")
            label = "" if len(groups) == 1 else f"{_span(iterations)} "
            each = " each" if len(groups) == 1 and len(iterations) > 1 else ""
            pieces.append(f"{label}{words}{each} ({statistics.median(values):.1f} ms)")
        parts.append(f"{scenario.planned.name} " + ", ".join(pieces))
    if rtt:
        return (
            f"Round trips per iteration (RTT = {rtt:g} ms), the measured median of each: "
            + "; ".join(parts)
            + "."
        )
    return "With no added delay, what remains is timers and the host: " + "; ".join(parts) + "."

"""The machine's share of a run's time as the runner reads it: the hypervisor's steal
(tfolab.runner.cpu_wait.stolen_ns), and the delayer's own lateness.

The guest's kernel counts the time its CPUs waited for the host's in /proc/stat;
no thread of the guest sees that wait, so it is the repeat's second evidence
(tfolab.lab.repeats). Read from the real /proc/stat, and from files in its format.
"""

from __future__ import annotations

import os
from pathlib import Path

from tfolab.runner.backends.base import delayer_lateness
from tfolab.runner.cpu_wait import stolen_ns
from tfolab.runner.protocol import DelayerLateness

TICK_NS = 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def test_the_machine_s_own_figure_is_the_eighth_value_of_the_cpu_line() -> None:
    fields = Path("/proc/stat").read_text().splitlines()[0].split()
    assert fields[0] == "cpu"
    before = int(fields[8]) * TICK_NS
    read = stolen_ns()
    after = int(Path("/proc/stat").read_text().split()[8]) * TICK_NS
    assert before <= read <= after  # a running total: it only grows


def test_a_file_in_the_format_gives_its_ticks_in_ns(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 2 30 4000 5 0 6 250 0 0\ncpu0 50 1 15 2000 2 0 3 125 0 0\n")
    assert stolen_ns(stat) == 250 * TICK_NS


def test_what_cannot_be_read_counts_nothing(tmp_path: Path) -> None:
    garbled = tmp_path / "garbled"
    garbled.write_text("cpu  1 2 3\n")  # a kernel without the steal column
    assert stolen_ns(garbled) == 0
    assert stolen_ns(tmp_path / "absent") == 0
    (tmp_path / "other").write_text("intr 1 2 3 4 5 6 7 8 9\n")
    assert stolen_ns(tmp_path / "other") == 0


def test_the_delayer_s_lateness_is_read_from_its_statistics_line() -> None:
    """tfo-delay's JSON statistics (native/delay/stats.c) typed at the runner's edge; no
    line, another line, or one without the figures: None."""
    line = (
        '{"queue": 7, "delay_ms": 13.000000, "packets": 21, "late_median_us": 45, '
        '"late_p99_us": 122, "late_max_us": 122.7, "sched": "fifo:10"}'
    )
    assert delayer_lateness(line) == DelayerLateness(45, 122, 122.7)
    assert delayer_lateness("") is None
    assert delayer_lateness("tfo-delay: queue 7 delay 13 ms: packets 21") is None
    assert delayer_lateness('{"queue": 7}') is None
    assert delayer_lateness('{"late_median_us": "x", "late_p99_us": 1, "late_max_us": 1}') is None

"""The hypervisor's steal as the lab reads it (tfolab.runner.cpu_wait.stolen_ns).

The guest's kernel counts the time its CPUs waited for the host's in /proc/stat;
no thread of the guest sees that wait, so it is the repeat's second evidence
(tfolab.lab.repeats). Read from the real /proc/stat, and from files in its format.
"""

from __future__ import annotations

import os
from pathlib import Path

from tfolab.runner.cpu_wait import stolen_ns

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

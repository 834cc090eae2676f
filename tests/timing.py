"""Timing assertions: the only failures a test may be rerun for.

Rules:
- A real run's time on a shared machine can miss by a hypervisor hiccup; its
  packets, counters, losses and leftovers cannot. A timing check raises
  TimingMiss (an AssertionError) and nothing else does, and TIMING
  (tests/conftest.py) reruns a test only on TimingMiss.
- Check the things that cannot be timing first (exit code, counters,
  packets), then the times: a run that fails both is not rerun.
- Every sentence of an exit 1 is read. `timing_only` (call it first) fails at
  once on any exit but 0 or 1 and on any sentence that is not timing;
  `check_exit` (call it last) then turns an exit 1 whose every sentence is
  timing into a TimingMiss. On the CLI's stderr timing is a band missed ("#i
  measured ... its band") or a late arrival (" the model said "); in a run's
  JSON it is a disagreement of kind "arrival" (read by kind, never by words).
  Anything else is a disagreement and a plain AssertionError.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from typing import Any


class TimingMiss(AssertionError):
    """A measured time outside what the test allows; the one failure worth a rerun."""


def assert_in_band(measured: float, low: float, high: float, what: str) -> None:
    """low <= measured <= high, else TimingMiss naming `what`."""
    if not low <= measured <= high:
        raise TimingMiss(f"{what}: measured {measured:.3f} ms, outside [{low:.3f}, {high:.3f}]")


def assert_near(measured: float, expected: float, slack: float, what: str) -> None:
    """|measured - expected| <= slack, else TimingMiss."""
    assert_in_band(measured, expected - slack, expected + slack, what)


def is_timing_sentence(sentence: str) -> bool:
    """A CLI or packet_diff sentence about time alone: a missed band or a late arrival."""
    return (" measured " in sentence and " its band " in sentence) or (
        " the model said " in sentence
    )


def timing_only(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The timing sentences of a run that exited 0 (none) or 1 (one at least, and every
    sentence timing); any other exit, or any other sentence, is an AssertionError."""
    if done.returncode == 0:
        return []
    said = [line for line in done.stderr.splitlines() if line.startswith("tfolab: ")]
    if done.returncode == 1 and said and all(is_timing_sentence(line) for line in said):
        return said
    # The sentences that decided it first: a long run's stderr may hold a thousand late
    # arrivals around the one that is not timing.
    other = [line for line in said if not is_timing_sentence(line)]
    raise AssertionError(
        f"exit {done.returncode}, {len(other)} sentence(s) not about time:\n"
        + "\n".join(other[:20])
        + f"\n--- stdout (tail):\n{done.stdout[-2000:]}\n--- stderr (tail):\n{done.stderr[-2000:]}"
    )


def check_exit(done: subprocess.CompletedProcess[str]) -> None:
    """The run exited 0; an exit 1 whose every sentence is timing is a TimingMiss, any
    other exit or sentence an AssertionError (no exit 1 goes unread)."""
    said = timing_only(done)
    if said:
        raise TimingMiss("\n".join(said))


def check_packets(scenarios: Iterable[dict[str, Any]]) -> None:
    """Every packet disagreement that is not about time fails plainly; then the late ones."""
    found = [(s["name"], d) for s in scenarios for d in s.get("packet_disagreements", [])]
    wrong = [f"{name}: {d['sentence']}" for name, d in found if d["kind"] != "arrival"]
    assert not wrong, "\n".join(wrong)
    if found:
        raise TimingMiss("\n".join(f"{name}: {d['sentence']}" for name, d in found))


def check_bands(scenarios: Iterable[dict[str, Any]]) -> None:
    """Every iteration inside the model's band, else TimingMiss listing the misses."""
    outside = [
        f"{s['name']} #{i['i']}: measured {i['measured_ms']:.2f} ms, predicted "
        f"{i['predicted_ms']:.2f} ± {i['tolerance_ms']:.2f}"
        for s in scenarios
        for i in s["iterations"]
        if not i["ok"]
    ]
    if outside:
        raise TimingMiss("\n".join(outside))

"""How late a segment may arrive in the netem stage's VM: its own one-way trips, no more.

Rules:
- The VM's software emulation costs up to VM_TRIP_MS per one-way trip
  (docs/DESIGN.md, "The netem stage", where the figure is measured). A
  segment's allowance beyond the model's band is VM_TRIP_MS times the trips
  on its own causal path since its iteration began: the Segment events on its
  `caused_by` chain back to the iteration's start, itself included. Timer
  time on the chain (a delayed ACK's 40 ms) buys no allowance: the VM slows
  trips, not the kernel's timers.
- A late-arrival sentence (packet_diff) names the segment by its sender,
  iteration, words and the model's time into the iteration; it is found in
  the run's own timeline (its JSON), the iteration starting at the earliest
  event of that iteration. A sentence whose segment is not there fails
  plainly: an allowance that cannot be computed is never granted.
- Pure: a timeline and a sentence in, a verdict out; no VM needed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tfolab.lab.packets import comparable_options, segment_words

# The emulator's cost per one-way trip: worst measured 3.4 ms a trip over 330 iterations
# and 4.2 ms for one trip over 462 late segments (docs/DESIGN.md, "The netem stage").
VM_TRIP_MS = 5.0

ARRIVAL = re.compile(
    r"^connection \d+, (?P<sender>client|server): (?P<words>.+) arrived (?P<kernel>-?[\d.]+) ms "
    r"into iteration (?P<iteration>\d+); the model said (?P<model>-?[\d.]+) ms "
    r"± (?P<band>[\d.]+)$"
)
SAME_TIME_MS = 0.006  # the sentence states times to 0.01 ms

Timeline = list[dict[str, Any]]  # a scenario's "timeline" in `tfolab run --json`


@dataclass(frozen=True)
class Arrival:
    sender: str
    words: str
    iteration: int
    kernel_ms: float  # into the iteration, as captured
    model_ms: float  # into the iteration, as the model said
    band_ms: float


def parse_arrival(sentence: str) -> Arrival | None:
    """The late-arrival sentence's parts; None for any other sentence."""
    found = ARRIVAL.match(sentence)
    if found is None:
        return None
    return Arrival(
        found["sender"],
        found["words"],
        int(found["iteration"]),
        float(found["kernel"]),
        float(found["model"]),
        float(found["band"]),
    )


def _time(event: dict[str, Any]) -> float:
    return float(event["sent_ms"] if event["kind"] == "segment" else event["time_ms"])


def iteration_start(timeline: Timeline, iteration: int) -> float:
    """When the model starts an iteration: its earliest event."""
    return min(_time(e) for e in timeline if e["iteration"] == iteration)


def _words(segment: dict[str, Any]) -> str:
    options = comparable_options(segment["options"])
    return segment_words(
        segment["flags"], segment["seq"], segment["ack"], segment["length"], options
    )


def segments_of(arrival: Arrival, timeline: Timeline) -> list[dict[str, Any]]:
    """The timeline's segments the sentence can name: its sender and iteration, arriving
    when the model said, with its words where that tells same-time segments apart (a race's
    optional ACK is not in the timeline: it stands for the segment that carries it)."""
    start = iteration_start(timeline, arrival.iteration)
    same_time = [
        e
        for e in timeline
        if e["kind"] == "segment"
        and e["sender"] == arrival.sender
        and e["iteration"] == arrival.iteration
        and abs(e["arrived_ms"] - start - arrival.model_ms) < SAME_TIME_MS
    ]
    same_words = [e for e in same_time if _words(e) == arrival.words]
    return same_words or same_time


def trips_on_path(segment: dict[str, Any], timeline: Timeline) -> int:
    """The segment itself and every segment on its caused_by chain sent since its
    iteration began."""
    by_id = {e["id"]: e for e in timeline}
    start = iteration_start(timeline, segment["iteration"])
    trips = 1
    event = by_id.get(segment["caused_by"])
    while event is not None and _time(event) >= start:
        trips += event["kind"] == "segment"
        event = by_id.get(event["caused_by"])
    return trips


def beyond_the_vm(sentence: str, timeline: Timeline) -> str | None:
    """None when a late arrival is within the model's band plus the VM's cost of the trips
    on its path; else what to report as a TimingMiss. Any other sentence, an arrival
    earlier than the band, or a segment not in the timeline is an AssertionError."""
    arrival = parse_arrival(sentence)
    assert arrival is not None, f"not a late arrival: {sentence}"
    assert arrival.kernel_ms >= arrival.model_ms - arrival.band_ms, (
        f"earlier than the model's band: {sentence}"
    )
    named = segments_of(arrival, timeline)
    assert named, f"no segment of the model's timeline is the one this names: {sentence}"
    trips = max(trips_on_path(segment, timeline) for segment in named)
    allowed = arrival.model_ms + arrival.band_ms + trips * VM_TRIP_MS
    if arrival.kernel_ms <= allowed:
        return None
    return (
        f"{sentence} (the VM allows {trips} trip{'s' if trips > 1 else ''} x {VM_TRIP_MS:g} ms "
        f"more: {allowed:.2f} ms)"
    )

"""How late a segment may arrive in the netem stage's VM: its own one-way trips, no more.

Rules:
- The VM's software emulation costs up to VM_TRIP_MS per one-way trip
  (docs/DESIGN.md, "The netem stage", where the figure is measured). A
  segment's allowance beyond the model's band is VM_TRIP_MS times the trips
  on its own causal path since its iteration began: the Segment events on its
  `caused_by` chain back to the iteration's start, itself included. Timer
  time on the chain (a delayed ACK's 40 ms) buys no allowance: the VM slows
  trips, not the kernel's timers.
- A late arrival is read from the run's typed disagreements
  (`packet_disagreements`, kind "arrival"): its times and the model's event it
  is about (`event`, an id of the run's own timeline). An event that is not
  in the timeline fails plainly: an allowance that cannot be computed is
  never granted.
- Pure: a timeline and a disagreement in, a verdict out; no VM needed.
"""

from __future__ import annotations

from typing import Any

# The emulator's cost per one-way trip: worst measured 3.4 ms a trip over 330 iterations
# and 4.2 ms for one trip over 462 late segments (docs/DESIGN.md, "The netem stage").
VM_TRIP_MS = 5.0

Timeline = list[dict[str, Any]]  # a scenario's "timeline" in `tfolab run --json`


def _time(event: dict[str, Any]) -> float:
    return float(event["sent_ms"] if event["kind"] == "segment" else event["time_ms"])


def iteration_start(timeline: Timeline, iteration: int) -> float:
    """When the model starts an iteration: its earliest event."""
    return min(_time(e) for e in timeline if e["iteration"] == iteration)


def trips_on_path(segment: dict[str, Any], timeline: Timeline) -> int:
    """The segment itself and every segment on its caused_by chain sent since its
    iteration began (for a race's timer: its own ACK and the chain that armed it)."""
    by_id = {e["id"]: e for e in timeline}
    start = iteration_start(timeline, segment["iteration"])
    trips = 1
    event = by_id.get(segment["caused_by"])
    while event is not None and _time(event) >= start:
        trips += event["kind"] == "segment"
        event = by_id.get(event["caused_by"])
    return trips


def beyond_the_vm(disagreement: dict[str, Any], timeline: Timeline) -> str | None:
    """None when a late arrival is within the model's band plus the VM's cost of the trips
    on its path; else what to report as a TimingMiss. Any other kind, an arrival earlier
    than the band, or an event not in the timeline is an AssertionError."""
    sentence = disagreement["sentence"]
    assert disagreement["kind"] == "arrival", f"not a late arrival: {sentence}"
    kernel_ms, model_ms = disagreement["kernel_ms"], disagreement["model_ms"]
    band_ms = disagreement["band_ms"]
    assert kernel_ms >= model_ms - band_ms, f"earlier than the model's band: {sentence}"
    by_id = {e["id"]: e for e in timeline}
    event = by_id.get(disagreement["event"])
    assert event is not None, f"no event of the model's timeline is the one this names: {sentence}"
    trips = trips_on_path(event, timeline)
    allowed = model_ms + band_ms + trips * VM_TRIP_MS
    if kernel_ms <= allowed:
        return None
    return (
        f"{sentence} (the VM allows {trips} trip{'s' if trips > 1 else ''} x {VM_TRIP_MS:g} ms "
        f"more: {allowed:.2f} ms)"
    )

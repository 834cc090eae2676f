"""The netem stage's per-packet allowance (tests/netem/vm_allowance.py), without a VM.

Disagreements come from the product's own comparison (tfolab.lab.packets) of
the model's segments against the same segments with one made late, as a run's
JSON gives them (`packet_disagreements`). The allowance counts the trips on a segment's own
causal path: one trip's measured cost (4.2 ms) passes anywhere, while a
segment late by a round trip (2D) or by a 40 ms delayed-ACK stall fails,
however far into its iteration it arrives.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import pytest

from tests.netem.vm_allowance import VM_TRIP_MS, beyond_the_vm, iteration_start, trips_on_path
from tfolab.lab import packet_rows, packets
from tfolab.lab.catalog import find_lab
from tfolab.lab.plan import plan
from tfolab.lab.prediction import predict
from tfolab.model import Simulation

D = 10.0
HZ = 250
ONE_TRIP_MEASURED_MS = 4.2  # the worst one-trip lateness seen in the VM (DESIGN.md)


def predicted(lab: str, scenario: str) -> tuple[Simulation, list[dict[str, Any]]]:
    result = predict(plan(find_lab(lab), scenario, delay_ms=D), backend="netem", hz=HZ)
    (only,) = result.scenarios
    return only.simulation, only.to_json(measured=False)["timeline"]


Pick = Callable[[packet_rows.Row], bool]


def late_arrival(sim: Simulation, pick: Pick, beyond_band_ms: float) -> dict[str, Any]:
    """The comparison's one disagreement, as the run's JSON states it, when the picked
    segment arrives `beyond_band_ms` after the model's band ends (before it starts, when
    negative)."""
    model = packet_rows.model_rows(sim)
    (target,) = [row for row in model if pick(row) and not row.optional]
    late_by_ms = beyond_band_ms + math.copysign(target.band_ms, beyond_band_ms)
    kernel = [
        dataclasses.replace(row, arrived_ms=row.arrived_ms + late_by_ms * (row is target))
        for row in model
        if not row.optional
    ]
    starts = packet_rows.model_starts(sim)
    (pair,) = [p for p in packets.pairs(model, kernel, starts, starts) if p.disagreement]
    assert pair.disagreement is not None
    return pair.disagreement.to_json()


def row(sender: str, iteration: int, flags: tuple[str, ...], ack: int, length: int = 0) -> Pick:
    return lambda r: (r.sender, r.iteration, r.flags, r.ack, r.length) == (
        sender, iteration, flags, ack, length
    )  # fmt: skip


# delack/nagle, iteration 2 (starts at 60 ms): the 10 B write, the server's delayed ACK
# when its timer fires 40 ms later, the 6 B Nagle held until then, and the response.
TIMER_ACK = row("server", 2, ("ACK",), 27)  # 63.2 ms in, 2 trips on its path
RESPONSE = row("server", 2, ("ACK", "PSH"), 33, 16)  # 83.2 ms in, 4 trips on its path
# handshake/plain, iteration 1: the SYN-ACK, 20 ms in, 2 trips on its path.
SYN_ACK = row("server", 1, ("SYN", "ACK"), 1)


def test_trips_are_the_segments_on_the_causal_path_not_the_time_elapsed() -> None:
    _, timeline = predicted("delack", "nagle")
    trips = {}
    for segment in timeline:
        if segment["kind"] == "segment" and segment["iteration"] == 2:
            trips[segment["label"]] = trips_on_path(segment, timeline)
    assert trips == {
        "ACK,PSH seq=17 ack=17 len=10": 1,  # the first write
        "ACK seq=17 ack=27": 2,  # after the data and the server's timer (no trip)
        "ACK,PSH seq=27 ack=17 len=6": 3,  # Nagle's second write, released by that ACK
        "ACK seq=17 ack=33": 4,
        "ACK,PSH seq=17 ack=33 len=16": 4,  # the response: 4D + the timer on the headline
    }
    _, timeline = predicted("handshake", "plain")
    first = {
        s["label"]: trips_on_path(s, timeline)
        for s in timeline
        if s["kind"] == "segment" and s["iteration"] == 1 and s["length"] <= 16
    }
    assert first["SYN seq=0"] == 1 and first["SYN,ACK seq=0 ack=1"] == 2
    assert first["ACK seq=1 ack=1"] == 3 and first["ACK,PSH seq=1 ack=1 len=16"] == 3


@pytest.mark.parametrize("lab", ["handshake", "fastopen", "delack"])
def test_an_iteration_starts_at_its_earliest_event_as_the_comparison_says(lab: str) -> None:
    for scenario in find_lab(lab).scenarios:
        sim, timeline = predicted(lab, scenario.name)
        starts = packet_rows.model_starts(sim)
        compared = {row.iteration for row in packet_rows.model_rows(sim)}  # the setup's (0) too
        assert compared >= set(range(1, len(sim.predictions) + 1))
        for i in sorted(compared):
            assert iteration_start(timeline, i) == pytest.approx(starts[i]), (scenario.name, i)


@pytest.mark.parametrize(
    ("lab", "scenario", "pick", "trips"),
    [
        ("delack", "nagle", TIMER_ACK, 2),
        ("delack", "nagle", RESPONSE, 4),
        ("handshake", "plain", SYN_ACK, 2),
    ],
)
def test_one_trips_cost_passes_and_the_disagreement_names_its_segment(
    lab: str, scenario: str, pick: Pick, trips: int
) -> None:
    sim, timeline = predicted(lab, scenario)
    arrival = late_arrival(sim, pick, ONE_TRIP_MEASURED_MS)
    assert arrival["kind"] == "arrival", arrival
    (named,) = [e for e in timeline if e["id"] == arrival["event"]]
    assert pick(next(r for r in packet_rows.model_rows(sim) if r.event_id == named["id"]))
    assert trips_on_path(named, timeline) == trips
    assert beyond_the_vm(arrival, timeline) is None


@pytest.mark.parametrize(
    ("lab", "scenario", "pick", "beyond_band_ms"),
    [
        ("delack", "nagle", TIMER_ACK, 2 * D),  # a round trip late: 63 ms in (was 30 ms slack)
        ("handshake", "plain", SYN_ACK, 2 * D),  # a round trip late on the handshake
        ("delack", "nagle", RESPONSE, 40.0),  # a delayed-ACK stall: 83 ms in (was 40 ms slack)
        ("delack", "nagle", TIMER_ACK, 40.0),
    ],
)
def test_a_round_trip_or_a_delayed_ack_stall_late_fails(
    lab: str, scenario: str, pick: Pick, beyond_band_ms: float
) -> None:
    sim, timeline = predicted(lab, scenario)
    arrival = late_arrival(sim, pick, beyond_band_ms)
    said = beyond_the_vm(arrival, timeline)
    assert said is not None and f"x {VM_TRIP_MS:g} ms more" in said, arrival


def test_what_cannot_be_judged_is_never_allowed() -> None:
    sim, timeline = predicted("delack", "nagle")
    early = late_arrival(sim, TIMER_ACK, -10.0)
    with pytest.raises(AssertionError, match="earlier than the model's band"):
        beyond_the_vm(early, timeline)
    late = late_arrival(sim, TIMER_ACK, 20.0)
    elsewhere = late | {"event": max(e["id"] for e in timeline) + 1}
    with pytest.raises(AssertionError, match="no event of the model's timeline"):
        beyond_the_vm(elsewhere, timeline)
    missing = late | {"kind": "missing", "sentence": "the kernel sent no such segment"}
    with pytest.raises(AssertionError, match="not a late arrival"):
        beyond_the_vm(missing, timeline)

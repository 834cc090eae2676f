"""A connection that disagrees about TCP after the delay backend measured itself holding
its segments longer than its error allows: the comparison names the held link beside the
disagreement (LinkHeld), and excuses nothing.

The physics is CI's emulated VM (stop 49): netem released the client's last ACKs of a
300 kB answer about 31 ms after TCP sent them (D = 5.22 ms), and the server, without
them, sent a tail-loss probe the model's perfect link never lets fire. Here the capture
is the model's own; the client's request is held HELD_MS and the server sends its answer
twice.
"""

from __future__ import annotations

import msgspec

from tests.captured_from_model import as_captured
from tests.labs import host_captures
from tfolab.lab import packets
from tfolab.lab.disagreements import Extra, LinkHeld
from tfolab.lab.packet_rows import model_rows, model_starts
from tfolab.lab.prediction import accuracy_for
from tfolab.model import Simulation
from tfolab.model.captured import CapturedRow

DELAY_MS = 166.0
HELD_MS = 30.0


def _sim() -> Simulation:
    return host_captures.model(
        "handshake", "plain", {}, 1, DELAY_MS, accuracy=accuracy_for("nfqueue")
    )


def _capture(sim: Simulation, *, held: bool, probe: bool) -> list[CapturedRow]:
    """The model's rows; `held`: the client's request held HELD_MS (measured, late_ms)
    and everything after it that much later; `probe`: the server's answer sent again
    1 ms after the first."""
    rows = as_captured(model_rows(sim))
    request = next(k for k, r in enumerate(rows) if r.sender == "client" and r.length)
    out = []
    for k, row in enumerate(rows):
        moved = HELD_MS if held and k >= request else 0.0
        late = HELD_MS if held and k == request else 0.0
        out.append(msgspec.structs.replace(row, t_ms=row.t_ms + moved, late_ms=late))
    if probe:
        answer = next(r for r in out if r.sender == "server" and r.length)
        out.append(msgspec.structs.replace(answer, t_ms=answer.t_ms + 1.0))
        out.sort(key=lambda r: r.t_ms)
    return out


def _compare(sim: Simulation, rows: list[CapturedRow]) -> packets.PacketComparison:
    return packets.compare(sim, rows, {i: t for i, t in model_starts(sim).items() if i})


def test_a_disagreement_after_a_held_link_names_it() -> None:
    sim = _sim()
    found = _compare(sim, _capture(sim, held=True, probe=True)).disagreements
    assert any(isinstance(d, Extra) for d in found), [d.sentence() for d in found]
    named = [d for d in found if isinstance(d, LinkHeld)]
    assert len(named) == 1, [d.sentence() for d in found]
    held = named[0]
    assert (held.connection, held.sender, held.segments) == (1, "client", 1)
    assert held.most_ms == HELD_MS
    assert held.sentence().startswith(
        "connection 1, client: the delay backend held 1 of its segments up to 30.00 ms "
        "beyond the delay, the first arriving at "
    )
    assert "the link was not the one the model was asked for" in held.sentence()
    assert held.to_json()["kind"] == "link-held"


def test_a_held_link_without_a_tcp_disagreement_says_nothing() -> None:
    """Held and measured: the arrivals move by it, and the link is not named."""
    sim = _sim()
    assert _compare(sim, _capture(sim, held=True, probe=False)).disagreements == ()


def test_a_disagreement_on_a_link_on_time_names_no_link() -> None:
    sim = _sim()
    found = _compare(sim, _capture(sim, held=False, probe=True)).disagreements
    assert found and not any(isinstance(d, LinkHeld) for d in found)


def test_a_segment_held_after_the_disagreement_is_not_its_cause() -> None:
    """Only what the link held before the connection parted from the model is named."""
    sim = _sim()
    rows = _capture(sim, held=False, probe=True)
    last = max(range(len(rows)), key=lambda k: rows[k].t_ms)
    rows[last] = msgspec.structs.replace(rows[last], late_ms=HELD_MS)
    found = _compare(sim, rows).disagreements
    assert not any(isinstance(d, LinkHeld) for d in found), [d.sentence() for d in found]


def test_within_the_models_band_is_not_held() -> None:
    """A segment held less than its own band allows is one the model takes in: the VM's
    netem, 0.6 ms late on the server's side where the bands are 3.7 ms, is not named."""
    sim = _sim()
    model = model_rows(sim)
    rows = _capture(sim, held=False, probe=True)
    request = next(k for k, r in enumerate(rows) if r.sender == "client" and r.length)
    band = next(r.band_ms for r in model if r.sender == "client" and r.length)
    assert band > sim.accuracy.per_packet_delay_error_ms
    rows[request] = msgspec.structs.replace(rows[request], late_ms=band)
    found = _compare(sim, rows).disagreements
    assert not any(isinstance(d, LinkHeld) for d in found), [d.sentence() for d in found]
    rows[request] = msgspec.structs.replace(rows[request], late_ms=band + 0.5)
    found = _compare(sim, rows).disagreements
    assert any(isinstance(d, LinkHeld) for d in found), [d.sentence() for d in found]


def test_a_segment_held_across_the_disagreement_is_named() -> None:
    """The VM's case: the held ACKs arrive after the server's probe has arrived, yet they
    were sent before it (on the link when the kernel parted): arrival less lateness."""
    sim = _sim()
    rows = _capture(sim, held=False, probe=True)
    probe_at = max(r.t_ms for r in rows if r.sender == "server" and r.length)
    later = max(k for k, r in enumerate(rows) if r.sender == "client")
    assert rows[later].t_ms > probe_at
    held_ms = rows[later].t_ms - probe_at + 5.0  # sent 5 ms before the probe was
    rows[later] = msgspec.structs.replace(rows[later], late_ms=held_ms)
    found = _compare(sim, rows).disagreements
    named = [d for d in found if isinstance(d, LinkHeld)]
    assert len(named) == 1, [d.sentence() for d in found]
    held = named[0]
    assert (held.sender, held.segments, held.most_ms) == ("client", 1, held_ms)


def test_a_missing_segment_parts_where_the_capture_would_have_had_it() -> None:
    """The kernel never sent the model's answer: the connection parted when the answer
    was due (placed by the last pair before it). A request held before that is named; the
    client's last segment, held but sent after the answer was due, is not."""
    sim = _sim()
    rows = _capture(sim, held=False, probe=False)
    answer = next(k for k, r in enumerate(rows) if r.sender == "server" and r.length)
    due = rows[answer].t_ms
    without = rows[:answer] + rows[answer + 1 :]
    last = max(k for k, r in enumerate(without) if r.sender == "client")
    assert without[last].t_ms - 100.0 > due
    without[last] = msgspec.structs.replace(without[last], late_ms=100.0)
    found = _compare(sim, without).disagreements
    assert not any(isinstance(d, LinkHeld) for d in found), [d.sentence() for d in found]
    request = next(k for k, r in enumerate(without) if r.sender == "client" and r.length)
    without[request] = msgspec.structs.replace(without[request], late_ms=HELD_MS)
    found = _compare(sim, without).disagreements
    named = [d for d in found if isinstance(d, LinkHeld)]
    assert [(d.sender, d.segments) for d in named] == [("client", 1)], [d.sentence() for d in found]

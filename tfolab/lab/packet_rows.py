"""The segments both sides state, as rows the comparison aligns (tfolab.lab.packets).

Rules:
- A Row is one segment as both the model and the capture can state it:
  connection, sender, flags, relative seq and ack, payload length, the
  options in comparable form (tfolab.model.options.comparable: a cookie by
  its kind and length, never its bytes), the window field and the arrival.
- Only connections the measured part opened are compared: the model's
  connections that carry a measured iteration, the capture's connections whose
  SYN it saw. Both are numbered 1, 2, ... in the order their SYNs arrived.
- A row remembers where it came from, so nothing downstream finds it again by
  its values: a model row its Segment's `event_id` (None for a row the model
  names without an event of its own: a race's other outcome), a captured row
  its index in the scenario's captured list (`captured_index`).
- A captured row carries how late the delay backend released it, where the
  backend measured that (tfo-delay), and a model row the delayed segments on
  its path (model.predict.segment_paths): the comparison moves the model's
  arrival by what the backend measured along that path.
- The model's rows also carry what the comparison may forgive, each named by
  the kernel race behind it: an optional ACK (a timer that may win, or an ACK
  the kernel may merge away), other windows, a deferred race ACK's other
  acknowledgment number, a late outcome's rows taken all or none, and the
  peer's last ACK that a lost FIN never draws (model/late_ack.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from tfolab.model import AppCall, Segment, Simulation, Timer
from tfolab.model.captured import CapturedRow
from tfolab.model.events import Side
from tfolab.model.late_ack import late_arrivals
from tfolab.model.options import TcpOption, Timestamps, comparable, labels
from tfolab.model.predict import segment_paths

# A row of a delayed-ACK race with a late outcome (model/late_ack.py): "early" is the
# optional ACK before the FIN, "late" the ACK after it and "answer" what answers that.
RaceOutcome = Literal["", "early", "late", "answer"]


@dataclass(frozen=True)
class Row:
    """One segment as both sides can state it."""

    connection: int
    sender: Side
    flags: tuple[str, ...]
    seq: int
    ack: int | None
    length: int
    options: tuple[TcpOption, ...]  # comparable forms
    arrived_ms: float  # on the side's own clock (the model's, or the capture's)
    iteration: int = 0  # the model's; 0 for a captured segment
    # the model's: an ACK that leaves only if a timer wins a race, or that the
    # kernel may merge away (Segment.race)
    optional: bool = False
    window: int | None = None  # the header's window field; None: the model does not state it
    # the model's: other window fields a race may give it (model/burst.py)
    window_alternatives: tuple[int, ...] = ()
    band_ms: float = 0.0  # the model's: how far its arrival may be from the prediction
    # the model's: a race ACK deferred to its burst's end acknowledges this instead,
    # with one of merged_windows (model/delack_timer.py)
    merged_ack: int | None = None
    merged_windows: tuple[int, ...] = ()
    # the model's: a delayed-ACK race with a late outcome groups its rows by the timer's id
    race_group: int = 0
    race_outcome: RaceOutcome = ""
    # the model's: the race (its timer's id) whose lost-FIN outcome has no such segment
    lost_in: int = 0
    timed: bool = True  # False: the model does not state when it arrives (a late outcome)
    # the model's: its PSH may be either way (Segment.psh_race: where GSO skbs end)
    psh_either: bool = False
    event_id: int | None = None  # the model's Segment this row states
    captured_index: int | None = None  # the captured row this row states
    lost: bool = False  # the path lost it (the `drop` setting): stamped when its delay ended
    # the model's: the delayed segments whose measured lateness moves its arrival, by event
    # id (model.predict.segment_paths): later, those on its chain before it and not on its
    # iteration's start's; earlier, those on the start's only
    path_before: tuple[int, ...] = ()
    start_only: tuple[int, ...] = ()
    own_late: bool = True  # its own release too (False: it is on the start's chain)
    # the capture's: how late the delay backend released it (CapturedRow.late_ms)
    late_ms: float = 0.0

    @property
    def key(self) -> tuple[object, ...]:
        return (self.flags, self.seq, self.ack, self.length, self.options, self.lost)

    def stands_for(self, captured: Row) -> bool:
        """The model's row and a captured one are the same segment (a merged race's
        other acknowledgment number included)."""
        if self.key == captured.key:
            return True
        if self.psh_either and _without_psh(self.key) == _without_psh(captured.key):
            return True
        return self.merged_ack is not None and captured.key == (
            self.flags, self.seq, self.merged_ack, self.length, self.options, self.lost
        )  # fmt: skip

    def windows_for(self, captured: Row) -> tuple[int | None, ...]:
        """The window fields the model allows the captured segment it stands for."""
        if self.merged_ack is not None and captured.ack == self.merged_ack != self.ack:
            return self.merged_windows or (self.window,)
        return (self.window, *self.window_alternatives)

    def words(self) -> str:
        words = segment_words(self.flags, self.seq, self.ack, self.length, self.options)
        return f"{words} (lost)" if self.lost else words


def _without_psh(key: tuple[object, ...]) -> tuple[object, ...]:
    flags = key[0]
    assert isinstance(flags, tuple)
    return (tuple(f for f in flags if f != "PSH"), *key[1:])


def segment_words(
    flags: Sequence[str],
    seq: int,
    ack: int | None,
    length: int,
    options: Sequence[TcpOption],
) -> str:
    """A segment in the comparison's words: 'ACK,PSH seq 1 ack 17 len 16 <TS>'."""
    parts = [",".join(flags), f"seq {seq}"]
    if ack is not None:
        parts.append(f"ack {ack}")
    parts.append(f"len {length}")
    if options:
        parts.append(f"<{', '.join(labels(list(options)))}>")
    return " ".join(parts)


def row_numbers(sim: Simulation) -> dict[int, int]:
    """The simulation's own connection number -> its rows' (the connections a measured
    iteration used, numbered as the capture's are: an unmeasured warm-up has none)."""
    return _row_numbering(_measured_segments(sim))


def _measured_segments(sim: Simulation) -> list[Segment]:
    segments = [e for e in sim.events if isinstance(e, Segment)]
    measured = {s.connection for s in segments if s.iteration >= 1}
    return sorted((s for s in segments if s.connection in measured), key=lambda s: s.arrived_ms)


def _row_numbering(chosen: list[Segment]) -> dict[int, int]:
    return _numbering([(s.connection, s.sender, s.flags, s.arrived_ms) for s in chosen])


def model_rows(sim: Simulation) -> list[Row]:
    """The model's segments of the connections a measured iteration used, in arrival order,
    with each race's other outcomes beside the segments they race."""
    chosen = _measured_segments(sim)
    number = _row_numbering(chosen)
    delayed = segment_paths(sim.events, sim.predictions)
    rows = [
        Row(
            number[s.connection],
            s.sender,
            s.flags,
            s.seq,
            s.ack,
            s.length,
            tuple(comparable(o) for o in s.options),
            s.arrived_ms,
            iteration=s.iteration,
            optional=s.race,
            window=s.window,
            window_alternatives=s.window_alternatives,
            band_ms=sim.segment_bands.get(s.id, 0.0),
            merged_ack=s.merged_ack,
            merged_windows=s.merged_windows,
            psh_either=s.psh_race,
            event_id=s.id,
            lost=s.lost,
            path_before=tuple(i for i in delayed[s.id].on if i != s.id),
            start_only=delayed[s.id].start_only,
            own_late=s.id in delayed[s.id].on,
        )
        for s in chosen
        if s.connection in number
    ]
    return _with_late_arrivals(sim, _with_race_acks(sim, rows))


def captured_numbers(captured: Sequence[CapturedRow]) -> dict[int, int]:
    """The capture's connection number -> its rows' (connections whose SYN was seen)."""
    ordered = sorted(captured, key=lambda c: c.t_ms)
    return _numbering([(c.connection, c.sender, tuple(c.flags), c.t_ms) for c in ordered])


def captured_rows(captured: Sequence[CapturedRow]) -> list[Row]:
    """The captured segments of connections whose SYN was seen, in arrival order."""
    ordered = sorted(range(len(captured)), key=lambda k: captured[k].t_ms)
    number = captured_numbers(captured)
    return [
        Row(
            number[c.connection],
            c.sender,
            tuple(c.flags),
            c.seq,
            c.ack,
            c.length,
            tuple(comparable(o) for o in c.options),
            c.t_ms,
            window=c.window,
            captured_index=k,
            lost=c.lost,
            late_ms=c.late_ms,
        )
        for k, c in ((k, captured[k]) for k in ordered)
        if c.connection in number
    ]


def _numbering(rows: list[tuple[int, Side, tuple[str, ...], float]]) -> dict[int, int]:
    """Connection -> its number in the order the client SYNs arrived (rows in arrival order);
    a connection whose SYN is not among them gets none."""
    syn_at: dict[int, float] = {}
    for connection, sender, flags, arrived in rows:
        if "SYN" in flags and "ACK" not in flags and sender == "client":
            syn_at.setdefault(connection, arrived)
    return {old: new for new, old in enumerate(sorted(syn_at, key=syn_at.__getitem__), 1)}


def _with_race_acks(sim: Simulation, rows: list[Row]) -> list[Row]:
    """Add, before each segment that won a race against a delayed-ACK timer, the optional
    pure ACK the timer sends when it wins instead."""
    row_of = {row.event_id: row for row in rows}
    before: dict[int, Row] = {}
    for timer in (e for e in sim.events if isinstance(e, Timer) and e.race):
        carrier = row_of.get(timer.caused_by)
        if carrier is not None and carrier.event_id is not None:
            before[carrier.event_id] = dataclasses.replace(
                carrier,
                flags=("ACK",),
                length=0,
                options=(Timestamps(),),
                optional=True,
                band_ms=carrier.band_ms + 1000.0 / sim.hz,
                race_group=timer.id,
                race_outcome="early",
                event_id=None,
            )
    out: list[Row] = []
    for row in rows:
        if row.event_id in before:
            out.append(before[row.event_id])
        out.append(row)
    return out


def _with_late_arrivals(sim: Simulation, rows: list[Row]) -> list[Row]:
    """Add each race's late outcome (model/late_ack.py): its ACK after the FIN, what answers
    it after the peer's last ACK. Untimed: when the other CPU reaches its backlog is
    not the model's to say. The peer's last ACK is marked as absent from the race's
    lost-FIN outcome."""
    row_of = {row.event_id: row for row in rows if row.event_id is not None}
    after: dict[int, list[Row]] = {}
    lost_in: dict[int, int] = {}
    for late in late_arrivals(sim.events, sim.one_way_delay_ms):
        carrier = row_of.get(late.carrier)
        if carrier is None:
            continue
        if late.last_ack in row_of:
            lost_in[late.last_ack] = late.timer
        lead, *answers = (
            dataclasses.replace(
                carrier,
                sender=segment.sender,
                flags=segment.flags,
                seq=segment.seq,
                ack=segment.ack,
                length=0,
                options=segment.options,
                window=None,
                window_alternatives=(),
                optional=True,
                timed=False,
                race_group=late.timer,
                race_outcome="late" if n == 0 else "answer",
                event_id=None,
            )
            for n, segment in enumerate(late.after)
        )
        after.setdefault(late.carrier, []).append(lead)
        last_ack = late.last_ack if late.last_ack in row_of else late.carrier
        after.setdefault(last_ack, []).extend(answers)
    out: list[Row] = []
    for row in rows:
        if row.event_id in lost_in:
            row = dataclasses.replace(row, lost_in=lost_in[row.event_id])
        out.append(row)
        if row.event_id is not None:
            out += after.get(row.event_id, [])
    return out


def model_starts(sim: Simulation) -> dict[int, float]:
    """When the model starts each iteration (its headline's first call); 0 for the setup."""
    by_id = {e.id: e for e in sim.events}
    starts = {0: _setup_start(sim)}
    for prediction in sim.predictions:
        if prediction.path:
            starts[prediction.i] = by_id[prediction.path[0]].time_ms
    return starts


def _setup_start(sim: Simulation) -> float:
    """The first call on a measured connection: its connect (write-write-read's setup)."""
    segments = [e for e in sim.events if isinstance(e, Segment)]
    measured = {s.connection for s in segments if s.iteration >= 1}
    calls = [e for e in sim.events if isinstance(e, AppCall) and e.connection in measured]
    return calls[0].time_ms if calls else 0.0

"""The capture is the truth: the model's segments against the kernel's, in plain words.

What is compared, per connection and direction (client -> server, server ->
client), in order: flags, relative seq and ack, payload length, the options
the model claims (MSS, SACK permitted, timestamps, window scale, the Fast Open
option and its kind), the window field, and each arrival time within the
segment's own band.

Rules:
- Only connections the measured part opened are compared: the model's
  connections that carry a measured iteration, the capture's connections whose
  SYN it saw. Both are numbered 1, 2, ... in the order their SYNs left.
- Times are arrivals (the capture stamps a packet when it leaves the delay),
  each counted from the start of the iteration the model puts the segment in:
  the model's own start against the measured one, so host time between
  iterations does not add up. Each segment has its own band, what its own
  causal path can add (model.predict.segment_bands: ticks of the timers on
  it, packets x the backend's error, host overhead once).
- The window field is compared as on the wire wherever the model states it
  (Segment.window): a wrong receive-window rule shows here, not only in
  whether an ACK left.
- A cookie's bytes are the server's secret: the model names a cookie, the
  capture shows its bytes; only presence and option kind are compared.
- Where the model names a race it cannot decide (a delayed-ACK timer due
  within the application's reaction time, Timer.race), the ACK that leaves
  when the timer wins is an optional segment: the kernel may send it or not.
  So is an immediate ACK the kernel may merge away (Segment.race: at D = 0,
  the receiving application held the socket; see delack_timer.py). Each
  comparison counts the races it was offered and the ones it used (an
  optional segment the kernel did not send: `race_count`), so a race that
  hides a real disagreement shows as a figure. A race ACK deferred to its
  burst's end (Segment.merged_ack) is no optional segment: it leaves either
  way, acknowledging its own segment or the whole burst, with the window of
  that outcome.
- Without a delay, each run of one side's pure ACKs is compared in the order
  it was sent, not the order it arrived (`in_send_order`: two CPUs' backlogs).
- Every disagreement is one sentence; an empty list means they agree.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from tfolab.model import AppCall, Segment, Simulation, Timer
from tfolab.model.late_ack import late_arrivals
from tfolab.runner.protocol import CapturedRow


@dataclass(frozen=True)
class Row:
    """One segment as both sides can state it."""

    connection: int
    sender: str
    flags: tuple[str, ...]
    seq: int
    ack: int | None
    length: int
    options: tuple[str, ...]
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
    # the model's: a delayed-ACK race with a late outcome (model/late_ack.py) groups its
    # rows by the timer's id; "early" is the optional ACK before the FIN, "late" the
    # ACK after it and "answer" what answers that, taken all together or not at all
    race_group: int = 0
    race_outcome: str = ""
    timed: bool = True  # False: the model does not state when it arrives (a late outcome)

    @property
    def key(self) -> tuple[object, ...]:
        return (self.flags, self.seq, self.ack, self.length, self.options)

    def stands_for(self, captured: Row) -> bool:
        """The model's row and a captured one are the same segment (a merged race's
        other acknowledgment number included)."""
        if self.key == captured.key:
            return True
        return self.merged_ack is not None and captured.key == (
            self.flags, self.seq, self.merged_ack, self.length, self.options
        )  # fmt: skip

    def windows_for(self, captured: Row) -> tuple[int | None, ...]:
        """The window fields the model allows the captured segment it stands for."""
        if self.merged_ack is not None and captured.ack == self.merged_ack != self.ack:
            return self.merged_windows or (self.window,)
        return (self.window, *self.window_alternatives)

    def words(self) -> str:
        return segment_words(self.flags, self.seq, self.ack, self.length, self.options)


def segment_words(
    flags: Sequence[str], seq: int, ack: int | None, length: int, options: Sequence[str]
) -> str:
    """A segment in the comparison's words: 'ACK,PSH seq 1 ack 17 len 16 <TS>'."""
    parts = [",".join(flags), f"seq {seq}"]
    if ack is not None:
        parts.append(f"ack {ack}")
    parts.append(f"len {length}")
    if options:
        parts.append(f"<{', '.join(options)}>")
    return " ".join(parts)


# A cookie as the capture states it ("TFO cookie 0a1b...": its bytes in hex) or the
# model ("TFO cookie 8B": its length), either with the experimental kind's suffix.
_COOKIE = re.compile(
    r"TFO cookie (?:(?P<hex>[0-9a-f]+)|(?P<size>\d+)B)(?P<kind> \(exp\. kind \d+\))?"
)


def comparable_options(options: Sequence[str]) -> tuple[str, ...]:
    """The options both sides can state: a cookie keeps its length and kind, not its
    bytes (the server's secret); a cookie request stays a request, of its own kind."""
    kept = []
    for option in options:
        cookie = _COOKIE.fullmatch(option)
        if cookie is None:
            kept.append(option)
            continue
        size = len(cookie["hex"]) // 2 if cookie["hex"] is not None else int(cookie["size"])
        kept.append(f"TFO cookie {size}B{cookie['kind'] or ''}")
    return tuple(kept)


def model_rows(sim: Simulation) -> list[Row]:
    """The model's segments of the connections a measured iteration used."""
    segments = [e for e in sim.events if isinstance(e, Segment)]
    measured = {s.connection for s in segments if s.iteration >= 1}
    chosen = [s for s in segments if s.connection in measured]
    rows = _rows(
        [
            (
                s.connection,
                s.sender,
                s.flags,
                s.seq,
                s.ack,
                s.length,
                s.options,
                s.window,
                s.arrived_ms,
            )
            for s in chosen
        ]
    )
    rows = [
        dataclasses.replace(
            row,
            iteration=segment.iteration,
            optional=segment.race,
            window_alternatives=segment.window_alternatives,
            band_ms=sim.segment_bands.get(segment.id, 0.0),
            merged_ack=segment.merged_ack,
            merged_windows=segment.merged_windows,
        )
        for row, segment in zip(rows, sorted(chosen, key=lambda s: s.arrived_ms), strict=True)
    ]
    row_of = {
        s.id: row for s, row in zip(sorted(chosen, key=lambda s: s.arrived_ms), rows, strict=True)
    }
    return _with_late_arrivals(sim, _with_race_acks(sim, rows, row_of), row_of)


def _with_race_acks(sim: Simulation, rows: list[Row], row_of: dict[int, Row]) -> list[Row]:
    """Add, before each segment that won a race against a delayed-ACK timer, the optional
    pure ACK the timer sends when it wins instead."""
    optional: dict[int, Row] = {}
    for timer in (e for e in sim.events if isinstance(e, Timer) and e.race):
        carrier = row_of.get(timer.caused_by) if timer.caused_by is not None else None
        if carrier is not None:
            optional[id(carrier)] = dataclasses.replace(
                carrier,
                flags=("ACK",),
                length=0,
                options=("TS",),
                optional=True,
                band_ms=carrier.band_ms + 1000.0 / sim.hz,
                race_group=timer.id,
                race_outcome="early",
            )
    out: list[Row] = []
    for row in rows:
        if id(row) in optional:
            out.append(optional[id(row)])
        out.append(row)
    return out


def _with_late_arrivals(sim: Simulation, rows: list[Row], row_of: dict[int, Row]) -> list[Row]:
    """Add each race's late outcome (model/late_ack.py): its ACK after the FIN, what answers
    it after the peer's last ACK. Untimed: when the other CPU reaches its backlog is
    not the model's to say."""
    after: dict[int, list[Row]] = {}
    for late in late_arrivals(sim.events, sim.one_way_delay_ms):
        carrier = row_of.get(late.carrier)
        if carrier is None:
            continue
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
            )
            for n, segment in enumerate(late.after)
        )
        after.setdefault(id(carrier), []).append(lead)
        last_ack = row_of.get(late.last_ack, carrier)
        after.setdefault(id(last_ack), []).extend(answers)
    out: list[Row] = []
    for row in rows:
        out.append(row)
        out += after.get(id(row), [])
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


def captured_rows(captured: Sequence[CapturedRow]) -> list[Row]:
    return _rows(
        [
            (c.connection, c.sender, tuple(c.flags), c.seq, c.ack, c.length, tuple(c.options),
             c.window, c.t_ms)
            for c in captured
        ]
    )  # fmt: skip


_Raw = tuple[int, str, tuple[str, ...], int, int | None, int, tuple[str, ...], int | None, float]


def _rows(raw: list[_Raw]) -> list[Row]:
    """Connections renumbered in the order their SYNs arrived, rows in arrival order."""
    syn_at: dict[int, float] = {}
    for connection, sender, flags, *_rest, arrived in sorted(raw, key=lambda r: r[-1]):
        if "SYN" in flags and "ACK" not in flags and sender == "client":
            syn_at.setdefault(connection, arrived)
    number = {old: new for new, old in enumerate(sorted(syn_at, key=syn_at.__getitem__), 1)}
    return [
        Row(number[c], sender, flags, seq, ack, length, comparable_options(opts), t, window=window)
        for c, sender, flags, seq, ack, length, opts, window, t in sorted(raw, key=lambda r: r[-1])
        if c in number
    ]


@dataclass(frozen=True)
class Pair:
    """One step of the alignment: a model row, a kernel row, or both; and what is wrong."""

    model: Row | None
    kernel: Row | None
    sentence: str = ""  # "" where they agree


def pairs(
    model: list[Row],
    kernel: list[Row],
    model_start: dict[int, float],
    kernel_start: dict[int, float],
    *,
    same_instant: bool = False,
) -> list[Pair]:
    """The model's and the kernel's segments aligned, each pair with its disagreement.

    `model_start` and `kernel_start` give each iteration's start on each clock;
    an iteration missing from either is not timed. `same_instant` (no delay):
    the kernel's pure ACKs are compared in the order they were sent
    (`in_send_order`), not the order they arrived.
    """
    clocks = _Clocks(model_start, kernel_start)
    aligned: list[Pair] = []
    connections = sorted({r.connection for r in model} | {r.connection for r in kernel})
    for connection in connections:
        ours = [r for r in model if r.connection == connection]
        theirs = [r for r in kernel if r.connection == connection]
        if same_instant:
            theirs = in_send_order(theirs)
        aligned += min(
            (_connection(connection, rows, theirs, clocks) for rows in _outcomes(ours)),
            key=lambda pairs_: sum(1 for p in pairs_ if p.sentence),
        )
    return aligned


def in_send_order(rows: list[Row]) -> list[Row]:
    """Each run of consecutive pure ACKs one side sent, in the order it sent them.

    Without a delay, lo hands each packet to the receive backlog of the CPU
    that sent it (loopback_xmit -> __netif_rx -> enqueue_to_backlog): ACKs a
    socket sends from a softirq on one CPU and from its owner's release_sock
    on another can arrive, and be captured, in either order (seen at MTU 128,
    D = 0: ACK 685 before 457, 533 and 609). Within such a run the sequence
    number stands still and the acknowledgment number only grows as they are
    sent, so sorting the run by it gives back the sending order. Anything else
    keeps its arrival order.
    """
    out: list[Row] = []
    for sender in ("client", "server"):
        run: list[Row] = []
        for row in (r for r in rows if r.sender == sender):
            if row.flags == ("ACK",) and row.length == 0:
                run.append(row)
                continue
            out += sorted(run, key=lambda r: r.ack or 0)
            out.append(row)
            run = []
        out += sorted(run, key=lambda r: r.ack or 0)
    return out


def _outcomes(rows: list[Row]) -> list[list[Row]]:
    """The connection's rows under each combination of its races' late outcomes, the
    model's own first (min keeps the first of equals): a race taken late drops its early
    ACK and makes its late rows required; taken otherwise, drops them."""
    groups = sorted({r.race_group for r in rows if r.race_outcome == "late"})
    outcomes = []
    for late in itertools.product((False, True), repeat=len(groups)):
        taken = {g for g, is_late in zip(groups, late, strict=True) if is_late}
        outcomes.append(
            [
                dataclasses.replace(r, optional=False) if r.race_group in taken
                and r.race_outcome in ("late", "answer") else r
                for r in rows
                if not (r.race_group in taken and r.race_outcome == "early")
                and not (r.race_group not in taken and r.race_outcome in ("late", "answer"))
            ]
        )  # fmt: skip
    return outcomes


def _connection(
    connection: int, model: list[Row], kernel: list[Row], clocks: _Clocks
) -> list[Pair]:
    aligned: list[Pair] = []
    for sender in ("client", "server"):
        ours = [r for r in model if r.sender == sender]
        theirs = [r for r in kernel if r.sender == sender]
        aligned += _direction(f"connection {connection}, {sender}", ours, theirs, clocks)
    return aligned


def packet_diff(
    model: list[Row],
    kernel: list[Row],
    model_start: dict[int, float],
    kernel_start: dict[int, float],
    *,
    same_instant: bool = False,
) -> list[str]:
    """One sentence per disagreement between the model's and the kernel's segments."""
    aligned = pairs(model, kernel, model_start, kernel_start, same_instant=same_instant)
    return [p.sentence for p in aligned if p.sentence]


def race_count(pairs_: Sequence[Pair], model: Sequence[Row]) -> tuple[int, int]:
    """(races the model named, races used): optional rows and merged ACKs, and those the
    kernel took the other way (an optional row it did not send, a merged ACK it sent)."""
    named = sum(
        1
        for row in model
        if (row.optional and row.race_outcome not in ("late", "answer"))
        or row.merged_ack is not None
    )
    used = sum(
        1
        for p in pairs_
        if p.model is not None
        and (
            (p.model.optional and not p.kernel)
            or (p.model.race_outcome == "late" and p.kernel is not None)
            or (
                p.kernel is not None
                and p.model.merged_ack is not None
                and p.kernel.ack == p.model.merged_ack != p.model.ack
            )
        )
    )
    return named, used


@dataclass(frozen=True)
class _Clocks:
    model_start: dict[int, float]
    kernel_start: dict[int, float]

    def late(self, ours: Row, theirs: Row) -> tuple[float, float] | None:
        """(kernel, model) arrival from the iteration's start, where both starts are known."""
        if ours.iteration not in self.model_start or ours.iteration not in self.kernel_start:
            return None
        return (
            theirs.arrived_ms - self.kernel_start[ours.iteration],
            ours.arrived_ms - self.model_start[ours.iteration],
        )

    def when(self, row: Row, iteration: int | None, *, kernel: bool) -> str:
        """'12.34 ms into iteration 2' where the iteration's start is known, else 'at 123.45 ms'.

        A captured row has no iteration of its own: the model's row it stands
        against gives it; an unpaired one keeps the capture's clock.
        """
        starts = self.kernel_start if kernel else self.model_start
        if iteration is None or iteration not in starts:
            return f"at {row.arrived_ms:.2f} ms"
        return f"{row.arrived_ms - starts[iteration]:.2f} ms into iteration {iteration}"


def _direction(where: str, model: list[Row], kernel: list[Row], clocks: _Clocks) -> list[Pair]:
    """The alignment with the fewest disagreements; a race's optional row may go unmatched.

    An edit-distance alignment over the rows' keys: an equal pair costs
    nothing, an optional model row left out (the race went the other way)
    nothing, and a changed, missing or extra segment one each. Every step of
    the cheapest alignment becomes a Pair, with its sentence.
    """
    n, m = len(model), len(kernel)
    same = [[ours.stands_for(theirs) for theirs in kernel] for ours in model]
    cost = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n, -1, -1):
        for j in range(m, -1, -1):
            if i == n and j == m:
                continue
            options = []
            if i < n and j < m:
                options.append(cost[i + 1][j + 1] + (not same[i][j]))
            if i < n:
                options.append(cost[i + 1][j] + (not model[i].optional))
            if j < m:
                options.append(cost[i][j + 1] + 1)
            cost[i][j] = min(options)
    aligned: list[Pair] = []
    i = j = 0
    while i < n or j < m:
        if i < n and j < m and same[i][j] and cost[i][j] == cost[i + 1][j + 1]:
            aligned.append(
                Pair(model[i], kernel[j], _matched_sentence(where, model[i], kernel[j], clocks))
            )
            i, j = i + 1, j + 1
        elif i < n and model[i].optional and cost[i][j] == cost[i + 1][j]:
            aligned.append(Pair(model[i], None))
            i += 1
        elif i < n and j < m and cost[i][j] == cost[i + 1][j + 1] + 1:
            ours, theirs = model[i], kernel[j]
            aligned.append(
                Pair(
                    ours,
                    theirs,
                    f"{where}: the kernel sent {theirs.words()} "
                    f"{clocks.when(theirs, ours.iteration, kernel=True)} where the model has "
                    f"{ours.words()}",
                )
            )
            i, j = i + 1, j + 1
        elif i < n and cost[i][j] == cost[i + 1][j] + 1:
            ours = model[i]
            aligned.append(
                Pair(
                    ours,
                    None,
                    f"{where}: the model has {ours.words()} "
                    f"{clocks.when(ours, ours.iteration, kernel=False)}; "
                    "the kernel sent no such segment",
                )
            )
            i += 1
        else:
            theirs = kernel[j]
            aligned.append(
                Pair(
                    None,
                    theirs,
                    f"{where}: the kernel sent {theirs.words()} "
                    f"{clocks.when(theirs, None, kernel=True)}; the model has no such segment",
                )
            )
            j += 1
    return aligned


def _matched_sentence(where: str, ours: Row, theirs: Row, clocks: _Clocks) -> str:
    """What is wrong with a segment both sides sent alike: its window, or its arrival."""
    allowed = ours.windows_for(theirs)
    if ours.window is not None and theirs.window is not None and theirs.window not in allowed:
        said = " or ".join(str(w) for w in allowed)
        return (
            f"{where}: {ours.words()} advertised window {theirs.window} "
            f"{clocks.when(theirs, ours.iteration, kernel=True)}; the model says {said}"
        )
    times = clocks.late(ours, theirs) if ours.timed else None
    if times is not None and abs(times[0] - times[1]) > ours.band_ms:
        return (
            f"{where}: {ours.words()} arrived {times[0]:.2f} ms into iteration "
            f"{ours.iteration}; the model said {times[1]:.2f} ms ± {ours.band_ms:.2f}"
        )
    return ""

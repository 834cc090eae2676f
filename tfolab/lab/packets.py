"""The capture is the truth: the model's segments aligned with the kernel's, typed.

What is compared, per connection and direction (client -> server, server ->
client), in order: flags, relative seq and ack, payload length, the options
in comparable form (tfolab.lab.packet_rows), the window field, and each
arrival time within the segment's own band.

Rules:
- Times are arrivals (the capture stamps a packet when it leaves the delay),
  each counted from the start of the iteration the model puts the segment in:
  the model's own start against the measured one, so host time between
  iterations does not add up. Each segment has its own band, what its own
  causal path can add (model.predict.segment_bands: ticks of the timers on
  it, packets x the backend's error, host overhead once).
- The window field is compared as on the wire wherever the model states it
  (Segment.window): a wrong receive-window rule shows here, not only in
  whether an ACK left.
- Where the model names a race it cannot decide (a delayed-ACK timer due
  within the application's reaction time, Timer.race), the ACK that leaves
  when the timer wins is an optional segment: the kernel may send it or not.
  So is an immediate ACK the kernel may merge away (Segment.race: at D = 0,
  the receiving application held the socket; see delack_timer.py). Each
  comparison counts the races it was offered and the ones it used, so a race
  that hides a real disagreement shows as a figure. A race ACK deferred to
  its burst's end (Segment.merged_ack) is no optional segment: it leaves
  either way, acknowledging its own segment or the whole burst, with the
  window of that outcome. At D = 0 the other order of two applications woken
  at once is one more named race (model.simulation.other_app_order), and so is
  a replayed child's application answering before its SYN's softirq chain
  ends TIME_WAIT, in either of two ways (other_replay_orders). At any delay each lock point is one,
  where a woken reader (or accept()) may take its socket while its peer's
  segments still arrive (model/backlog.py): the comparison takes the ones that remove
  disagreements, one at a time (`_reader_races`), and counts them used. Each
  round tries the points up to the earliest disagreement about TCP; a late
  arrival alone (a slow host's first iteration) is no place to stop. The
  search runs while a disagreement about TCP is left: a hold is an instant in
  the model, so a lock point changes which ACKs leave then and their windows,
  and a time alone is the host's (CI's emulated VM, where every arrival is
  late, spent minutes searching for it), as for the pages and the wheel.
- A delayed-ACK race against a FIN at D = 0 ends one of three ways
  (model/late_ack.py): carried (the FIN carries the ACK, or the timer's ACK
  leaves just before), late (the timer's ACK arrives after the FIN, and what
  answers it), or lost (the FIN is lost under the timer's ACK: no last ACK).
  Every combination of a connection's races is tried, the model's own first.
- Where a sender's GSO skbs end is a race in a train of ACKs whose pacing rate
  lies within the host's round-trip excess of one more segment per skb
  (Segment.psh_race, model/output.py): such a segment matches the kernel's
  with PSH or without, and each one the kernel took the other way is counted.
  Where that leaves a disagreement (a one-segment packet is a clone the
  receiver cannot grow: its windows follow where packets end), the senders'
  slower pacings are tried, then the packets ending where the capture shows
  (simulation.captured_packet_ends), each end moved a race used.
- Whether a write's page is free is a race on 5.19+ (model/page_frag.py: a read
  skb freed on the CPU that allocated it). Each write whose segments the other
  outcome would cut into other fragments is a named race; where the capture
  still disagrees about TCP after the others, the writes held are found one at
  a time while that removes disagreements (`_held_pages`), each one used.
- Which of a timer and an arrival comes first, where the arrival falls inside
  the timer's wheel bucket (a SYN again against the server's SYN-ACK timer,
  a SYN-ACK against the client's SYN timer: Simulation.wheel_races), depends
  on where that connection's buckets sit. Each such connection is a named
  race; where the capture disagrees, its other bucket positions are tried one
  connection at a time (`_wheel_buckets`), each one moved counted as used.
- Without a delay, each run of one side's pure ACKs is compared in the order
  it was sent, not the order it arrived (`in_send_order`: two CPUs' backlogs).
- `compare` gives one PacketComparison: every pair of the alignment with its
  typed disagreement (tfolab.lab.disagreements), the simulation it was made
  against and the races. Everything else (packet_diff's sentences, the
  captured ladder, the step panel) is read from it, never worked out again.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from tfolab.lab import measured_host
from tfolab.lab.app_wakes import (
    KernelArrival,
    SlowWake,
    WakeHop,
    app_lateness,
    numbered_calls,
    slow_wakes,
    wake_hops,
)
from tfolab.lab.disagreements import (
    Arrival,
    CaptureLost,
    Changed,
    Disagreement,
    Extra,
    LinkHeld,
    Missing,
    Moment,
    WrongWindow,
)
from tfolab.lab.packet_rows import (
    Row,
    captured_numbers,
    captured_rows,
    model_rows,
    model_starts,
    row_numbers,
)
from tfolab.model import Simulation, Timer
from tfolab.model.captured import CapturedCall, CapturedRow
from tfolab.model.events import Side
from tfolab.model.loop import LockPoint, ReaderChoice
from tfolab.model.simulation import (
    WHEEL_LEVEL1_TICKS,
    ModelInputError,
    captured_packet_ends,
    held_pages,
    other_app_order,
    other_buckets,
    other_replay_orders,
    slower_pacings,
    with_lock_early,
)

# the most simulations the search for the readers' lock points may run (_reader_races):
# 160 missed a Fast Open child's 5-segment answer at MTU 9000, D = 0 (a capture that 300
# finds, in about 10 s; that scenario is refused now, loop.py's "ahead" point); a run that
# agrees at once never spends it
LOCK_SEARCH = 400
# of LOCK_SEARCH, the simulations kept for dropping the points not needed (_fewest)
FEWEST_RESERVE = 16
# the events the search may simulate in all: a simulation's cost grows with its events
# (about 80 us each with its alignment), so a timeline of more than
# SEARCH_EVENTS / LOCK_SEARCH events gets proportionally fewer simulations, at least
# SEARCH_MIN_SIMULATIONS; five 1 MB answers (12,546 events) ran 140 s of search before,
# 15 simulations now
SEARCH_EVENTS = 200_000
SEARCH_MIN_SIMULATIONS = 8
# the lock points a search may try on their own; the others only with a take
_OPENING = ("take", "split", "returned", "overtaken", "quickack", "ahead")
# the points that are not part of a take's hold (its release, detach, stopped, cleanup and
# split)
_NOT_HELD = ("take", "returned", "overtaken", "quickack", "ahead")


@dataclass(frozen=True)
class Pair:
    """One step of the alignment: a model row, a kernel row, or both; and what is wrong."""

    model: Row | None
    kernel: Row | None
    disagreement: Disagreement | None = None  # None where they agree

    @property
    def agrees(self) -> bool:
        return self.disagreement is None


@dataclass(frozen=True)
class PacketComparison:
    """A scenario's capture against its model, segment by segment."""

    simulation: Simulation  # the timeline compared (at D = 0 perhaps the other app order)
    pairs: tuple[Pair, ...]
    races_named: int
    races_used: int
    lost: int = 0  # segments the capture's ring dropped
    # where the search for the readers' lock points stopped at its limit with
    # disagreements left (some may be races it did not reach): that limit, in
    # simulations; else 0
    search_cut: int = 0
    # how much longer than the model the applications took to make each call a segment
    # woke them for, as they stamped it, by the call's event id (tfolab.lab.app_wakes)
    apps_late: dict[int, float] = field(default_factory=dict)
    # the links the delay backend held beside the TCP disagreements (links_held), found
    # once by compare()
    held: tuple[LinkHeld, ...] = ()

    @property
    def disagreements(self) -> tuple[Disagreement, ...]:
        found: list[Disagreement] = [p.disagreement for p in self.pairs if p.disagreement]
        if self.lost:
            found.append(CaptureLost(self.lost))
        return (*found, *self.held)

    @property
    def sentences(self) -> list[str]:
        return [d.sentence() for d in self.disagreements]

    @property
    def timing_only(self) -> bool:
        """Some disagreement, and every one about time alone."""
        found = self.disagreements
        return bool(found) and all(d.timing_only for d in found)

    @property
    def matching(self) -> tuple[int, int]:
        """(segments that agree, segments that had to: the model's required ones and any
        the kernel sent beyond them)."""
        required = [p for p in self.pairs if p.model is not None and not p.model.optional]
        extra = sum(1 for p in self.pairs if p.model is None)
        agree = sum(1 for p in required if p.agrees and p.kernel is not None)
        return agree, len(required) + extra


def compare(
    sim: Simulation,
    captured: Sequence[CapturedRow],
    measured_starts: dict[int, float],
    lost: int = 0,
    calls: Sequence[CapturedCall] = (),
) -> PacketComparison:
    """The capture against the model; at D = 0 against either order of two applications
    woken at once (the other is a named race: counted, and its timeline kept).

    `measured_starts` gives each measured iteration's start on the capture's clock;
    `calls`, the applications' stamped calls (their wake-ups move what follows them).
    """
    kernel = captured_rows(captured)
    starts = {0: 0.0, **measured_starts}
    stamped = numbered_calls(calls, captured_numbers(captured))

    def against(model_sim: Simulation) -> tuple[list[Pair], list[Row]]:
        model = model_rows(model_sim)
        apps = _Apps(wake_hops(model_sim, row_numbers(model_sim)), stamped) if stamped else None
        aligned = pairs(
            model,
            kernel,
            model_starts(model_sim),
            starts,
            same_instant=not model_sim.one_way_delay_ms,
            apps=apps,
        )
        return aligned, model

    cut: list[int] = []
    chosen, aligned, model = _wheel_buckets((sim, *against(sim)), against, cut)
    chosen, aligned, model = _reader_races(chosen, aligned, model, against, cut)
    orders_named = orders_used = 0
    for race in (_other_app_order, other_replay_orders):
        try:
            outcomes = race(chosen)
        except ModelInputError:  # that order leaves the model's domain: no race to offer
            continue
        if not outcomes:
            continue
        orders_named += 1  # one race, however many other outcomes it has
        better = False
        for other in outcomes:
            if not any(_cost(aligned)) and not chosen.lock_early:
                break
            tried = _reader_races(other, *against(other), against, cut)
            if _explains_better(tried, (chosen, aligned, model)):
                (chosen, aligned, model), better = tried, True
        orders_used += better
    (chosen, aligned, model), paced = _slower_pacing((chosen, aligned, model), against, captured)
    orders_used += paced
    chosen, aligned, model = _held_pages((chosen, aligned, model), against, cut)
    (chosen, aligned, model), host_named, host_used = _measured_host(
        (chosen, aligned, model), against, kernel, starts, stamped, cut
    )
    named, used = race_count(aligned, model)
    named += host_named
    used += host_used
    named += orders_named + len(chosen.lock_points) + len(chosen.page_races)
    named += len(chosen.wheel_races)
    used += orders_used + len(chosen.lock_early) + len(chosen.pages_held)
    used += len(chosen.wheel_offsets) + chosen.packet_ends_moved
    search_cut = max(cut, default=0) if any(_cost(aligned)) else 0
    woke = (
        _apps_late(aligned, _Apps(wake_hops(chosen, row_numbers(chosen)), stamped))
        if stamped
        else {}
    )
    held = tuple(links_held(aligned, chosen.accuracy.per_packet_delay_error_ms))
    return PacketComparison(chosen, tuple(aligned), named, used, lost, search_cut, woke, held)


_Explained = tuple[Simulation, list[Pair], list[Row]]


def _explains_better(other: _Explained, chosen: _Explained) -> bool:
    """Does the other order of a D = 0 race (itself one race) explain the capture better:
    fewer disagreements, or as few with fewer races than the lock points `chosen` took?
    Two explanations of the same segments are told apart by how many races they need."""
    other_cost, chosen_cost = _cost(other[1]), _cost(chosen[1])
    if other_cost != chosen_cost:
        return other_cost < chosen_cost
    return len(other[0].lock_early) + 1 < len(chosen[0].lock_early)


def _slower_pacing(
    chosen: _Explained,
    against: Callable[[Simulation], tuple[list[Pair], list[Row]]],
    captured: Sequence[CapturedRow],
) -> tuple[_Explained, bool]:
    """The GSO-size race (its segments are named races already, psh_either): where the
    capture still disagrees, the chosen timeline with the senders' tcp_tso_autosize
    seeing part of the host's round-trip excess (simulation.slower_pacings), the lock
    points kept; the one with the fewest disagreements, if fewer, and whether it was
    taken. Where one still disagrees, that timeline with the packets ending where the
    capture shows (simulation.captured_packet_ends: each end it moved is a race used,
    Simulation.packet_ends_moved), if that disagrees less. No lock-point search again:
    each outcome costs one simulation, four at most."""
    best = chosen
    if not any(_cost(best[1])):
        return best, False
    for other in slower_pacings(chosen[0]):
        other_aligned, other_model = against(other)
        if _cost(other_aligned) < _cost(best[1]):
            best = (other, other_aligned, other_model)
            if not any(_cost(other_aligned)):
                break
    paced = best is not chosen
    if any(_cost(best[1])):
        ended = captured_packet_ends(best[0], captured)
        if ended is not None:
            ended_aligned, ended_model = against(ended)
            if _cost(ended_aligned) < _cost(best[1]):
                best = (ended, ended_aligned, ended_model)
    return best, paced


def _measured_host(
    chosen: _Explained,
    against: Callable[[Simulation], tuple[list[Pair], list[Row]]],
    kernel: list[Row],
    kernel_starts: dict[int, float],
    stamped: tuple[CapturedCall, ...],
    cut: list[int],
) -> tuple[_Explained, int, int]:
    """The host's timing the capture measured (measured_host.py: a side's timers late
    after a long idle, an application that woke after the next segment): where the
    capture still disagrees about TCP, each such timeline, its readers' lock points
    searched again; the one that disagrees least about TCP, if it disagrees less.
    Returns it with the races named (1 where any was tried) and used (1 where taken)."""
    sim, aligned, _ = chosen
    if not _cost(aligned)[0] or not sim.one_way_delay_ms:
        return chosen, 0, 0
    slow: list[SlowWake] = []
    if stamped:
        slow = _slow(aligned, _Apps(wake_hops(sim, row_numbers(sim)), stamped))
    wrong = {
        p.kernel.connection if p.kernel is not None else p.model.connection  # type: ignore[union-attr]
        for p in aligned
        if p.disagreement is not None and not p.disagreement.timing_only
    }
    best: _Explained | None = None
    named = 0
    for other in measured_host.candidates(sim, kernel, kernel_starts, slow, wrong):
        named = 1
        other_aligned, other_model = against(other)
        if _cost(other_aligned)[0] > _cost((best or chosen)[1])[0]:
            continue
        tried = _reader_races(other, other_aligned, other_model, against, cut)
        if _cost(tried[1]) < _cost((best or chosen)[1]):
            best = tried
            if not _cost(best[1])[0]:
                break
    if best is None or _cost(best[1])[0] >= _cost(aligned)[0]:
        return chosen, named, 0
    return best, named, 1


def _slow(aligned: Sequence[Pair], apps: _Apps) -> list[SlowWake]:
    """app_wakes.slow_wakes over these pairs."""
    wake_arrivals, arrivals = _kernel_times(aligned)
    return slow_wakes(apps.hops, apps.calls, wake_arrivals, arrivals)


def _kernel_times(aligned: Sequence[Pair]) -> tuple[dict[int, float], list[KernelArrival]]:
    """The captured arrival of each model segment the kernel sent alike (by event id),
    and every captured segment's."""
    wake_arrivals = {
        p.model.event_id: p.kernel.arrived_ms
        for p in aligned
        if p.model is not None
        and p.kernel is not None
        and p.model.event_id is not None
        and not isinstance(p.disagreement, Changed)
    }
    arrivals = [
        KernelArrival(p.kernel.connection, p.kernel.sender, p.kernel.arrived_ms)
        for p in aligned
        if p.kernel is not None
    ]
    return wake_arrivals, arrivals


def _held_pages(
    chosen: _Explained,
    against: Callable[[Simulation], tuple[list[Pair], list[Row]]],
    cut: list[int],
) -> _Explained:
    """The page race (page_frag.py; each write where it could show is a named race,
    Simulation.page_races): where the capture still disagrees about TCP, the chosen
    timeline with one more write's page still held (simulation.held_pages), the other
    races kept; of those that disagree less about TCP, the fewest disagreements (the
    earliest of equals), and again from there for the next write, greedily, while that
    removes disagreements. A time alone is no fragment a page moved (CI's emulated VM
    runs late). Within _search_size simulations; `cut` gains that limit where it
    stopped with disagreements left."""
    size, _ = _search_size(chosen[0])
    budget = size
    best = chosen
    while _cost(best[1])[0]:
        found: _Explained | None = None
        for other in held_pages(best[0]):
            if budget <= 0:
                cut.append(size)
                return best
            budget -= 1
            other_aligned, other_model = against(other)
            cost = _cost(other_aligned)
            if cost[0] < _cost(best[1])[0] and (found is None or cost < _cost(found[1])):
                found = (other, other_aligned, other_model)
                if not cost[0]:
                    break
        if found is None:
            break
        best = found
    return best


def _wheel_buckets(
    chosen: _Explained,
    against: Callable[[Simulation], tuple[list[Pair], list[Row]]],
    cut: list[int],
) -> _Explained:
    """The timer-wheel races (Simulation.wheel_races): while the capture disagrees, each
    racing connection in turn (_wheel_order: those that disagree first), with its
    buckets at each other position (simulation.other_buckets: whole ticks, quarter
    ticks, late, coalesced), the others kept, until one leaves that connection agreeing;
    the one with the fewest disagreements, if fewer (the model's own position wins a
    tie). A connection an earlier choice made race joins the list. Within
    _search_size simulations in all, as the other searches: on a slow host every
    arrival is late, so the search would otherwise try every position of every racing
    connection (CI's emulated VM: over 3 minutes for two 300 kB answers at D = 574 ms);
    `cut` gains that limit where it stopped with disagreements left."""
    size, _ = _search_size(chosen[0])
    budget = size
    best = chosen
    tried: set[int] = set()
    while any(_cost(best[1])):
        todo = [c for c in _wheel_order(best[0], best[1]) if c not in tried]
        if not todo:
            break
        connection = todo[0]
        tried.add(connection)
        if not _wheel_may_explain(best[0], best[1], connection):
            continue
        for other in other_buckets(best[0], connection):
            if budget <= 0:
                cut.append(size)
                return best
            budget -= 1
            other_aligned, other_model = against(other)
            if _cost(other_aligned) < _cost(best[1]):
                best = (other, other_aligned, other_model)
                if not any(_cost(_of_connection(other, other_aligned, connection))):
                    break  # this connection agrees now: the next one's turn
    return best


def _wheel_order(sim: Simulation, aligned: list[Pair]) -> list[int]:
    """The racing connections that disagree, first seen first, then those that agree,
    the latest first: a connection's buckets move what it sends, and through its end
    the start of the next iteration's connection."""
    races = sim.wheel_races
    disagreeing = [c for c in races if any(_cost(_of_connection(sim, aligned, c)))]
    agreeing = sorted((c for c in races if c not in disagreeing), reverse=True)
    return disagreeing + agreeing


def _of_connection(sim: Simulation, aligned: list[Pair], connection: int) -> list[Pair]:
    """The pairs of the simulation's connection `connection` (its rows are numbered as the
    capture's: without an unmeasured warm-up connection, so one lower after it)."""
    number = row_numbers(sim).get(connection)
    return [p for p in aligned if (row := p.model or p.kernel) and row.connection == number]


def _wheel_may_explain(sim: Simulation, aligned: list[Pair], connection: int) -> bool:
    """Could another wheel position remove a disagreement by moving `connection`? Not
    where all of its own are about time and the first arrives before any of its timers
    is due (the earliest deadline less one level-1 bucket: a timer never runs before
    its deadline, and a position moves that by less than a bucket): nothing earlier
    depends on the wheel, so that lateness is the host's (on a slow or emulated host
    every arrival is late, and each position is a whole simulation)."""
    deadlines = [
        e.deadline_ms for e in sim.events if isinstance(e, Timer) and e.connection == connection
    ]
    if not deadlines:
        return False
    reach_ms = min(deadlines) - WHEEL_LEVEL1_TICKS * 1000 / sim.hz
    first: Pair | None = None
    for pair in _of_connection(sim, aligned, connection):
        if pair.disagreement is None:
            continue
        if not pair.disagreement.timing_only:
            return True
        first = first or pair
    return first is None or first.model is None or first.model.arrived_ms >= reach_ms


def _other_app_order(sim: Simulation) -> tuple[Simulation, ...]:
    other = other_app_order(sim)
    return () if other is None else (other,)


def _reader_races(
    sim: Simulation,
    aligned: list[Pair],
    model: list[Row],
    against: Callable[[Simulation], tuple[list[Pair], list[Row]]],
    cut: list[int],
) -> tuple[Simulation, list[Pair], list[Row]]:
    """Where the woken readers took their sockets and let them go
    (model/backlog.py): the lock points the capture shows, found by adding one at a
    time (a take alone, or with one of the release, detach, stopped, cleanup or split
    points it opens) while that removes disagreements, within _search_size simulations,
    of which the last few are kept for _fewest. Of the outcomes that remove the most
    at a step, the one that agrees furthest into the capture is followed: two points may
    explain the same segment, and only one of them the segments after it. Each lock
    point is a named race. Only while a disagreement about TCP is left: where times
    alone disagree, no lock point removes one (a hold is an instant in the model: a point
    changes which ACKs leave then, and their windows), so the search does not start.
    `cut` gains the limit where it stopped the search."""
    wrong = _cost(aligned)
    size, reserve = _search_size(sim)
    budget = [size]
    tried = {sim.lock_early}

    def attempt(choice: frozenset[ReaderChoice]) -> Simulation | None:
        if budget[0] <= reserve:
            cut.append(size)
            return None
        if choice in tried:
            return None
        tried.add(choice)
        budget[0] -= 1
        return _within_domain(sim, choice)

    while wrong[0] and budget[0] > reserve:
        found = _one_more_point((sim, aligned, model, wrong), attempt, against)
        better = [f for f in found if f[3] < wrong]
        if not better:
            break
        least = min(f[3] for f in better)
        # the first found of those that agree furthest (max keeps the first of equals)
        sim, aligned, model, wrong = max(
            (f for f in better if f[3] == least), key=lambda f: _agreeing_prefix(f[1])
        )
    if wrong[0] and budget[0] <= reserve:
        cut.append(size)
    return _fewest(sim, aligned, model, against, budget)


_Outcome = tuple[Simulation, list[Pair], list[Row], tuple[int, int]]


def _search_size(sim: Simulation) -> tuple[int, int]:
    """(the simulations the lock-point search may run for `sim`, of which kept for
    _fewest): LOCK_SEARCH and FEWEST_RESERVE, fewer in proportion where the timeline
    is long (SEARCH_EVENTS), so that its cost stays bounded whatever a student sets."""
    events = max(len(sim.events), 1)
    size = min(LOCK_SEARCH, max(SEARCH_MIN_SIMULATIONS, SEARCH_EVENTS // events))
    reserve = min(FEWEST_RESERVE, max(2, FEWEST_RESERVE * size // max(LOCK_SEARCH, 1)))
    return size, min(reserve, size)


def _within_domain(sim: Simulation, lock_early: frozenset[ReaderChoice]) -> Simulation | None:
    """`sim` with the readers taking their sockets at `lock_early`; None where that
    outcome leaves the model's domain on its way (say, a sender then waits on a closed
    window with nothing in flight): no race the model can offer."""
    try:
        return with_lock_early(sim, lock_early)
    except ModelInputError:
        return None


def _one_more_point(
    outcome: _Outcome,
    attempt: Callable[[frozenset[ReaderChoice]], Simulation | None],
    against: Callable[[Simulation], tuple[list[Pair], list[Row]]],
) -> list[_Outcome]:
    """The outcomes of `outcome`'s simulation with one more lock point (a take with one
    of the points its hold opens), each with its cost; only points at or before the
    earliest disagreement, which a later point cannot cause. The points of that
    disagreement's own connection come first, and if one of them removes
    disagreements the others are not tried: an earlier connection's reader changes a
    later connection only through its timing, and trying every connection's points at
    every step spent the whole search on the third of five connections that each
    needed two. Stops at one that agrees."""
    sim, aligned = outcome[0], outcome[1]
    first = _first_wrong_event(aligned)
    connection = _wrong_connection(sim, aligned)
    points = [p for p in sim.lock_points if p.event_id <= first]
    own = [p for p in points if p.connection == connection]
    found = _with_one_of(own, outcome, attempt, against)
    if any(f[3] < outcome[3] for f in found):
        return found
    others = [p for p in points if p.connection != connection]
    return found + _with_one_of(others, outcome, attempt, against)


def _later(connection: int | None, than: int | None) -> bool:
    """Is the earliest disagreement now in a later connection (or gone)?"""
    return connection is None or (than is not None and connection > than)


def _wrong_connection(sim: Simulation, aligned: Sequence[Pair]) -> int | None:
    """The simulation's own number of the connection its earliest disagreement is in
    (a row's number leaves out the unmeasured connections); None where all agree."""
    if not any(pair.disagreement for pair in aligned):
        return None
    first = _first_wrong_event(aligned)
    return next((e.connection for e in sim.events if e.id == first), None)


def _with_one_of(
    points: list[LockPoint],
    outcome: _Outcome,
    attempt: Callable[[frozenset[ReaderChoice]], Simulation | None],
    against: Callable[[Simulation], tuple[list[Pair], list[Row]]],
) -> list[_Outcome]:
    """_one_more_point's outcomes for these points, the latest first; it stops at one
    that leaves the connection of the earliest disagreement agreeing, as the search
    would follow it (an outcome that clears that connection agrees furthest)."""
    sim = outcome[0]
    connection = _wrong_connection(sim, outcome[1])
    holding = {(c[0], c[1]) for c in sim.lock_early if c[3] == "take"}
    found: list[_Outcome] = []
    for point in sorted(points, key=lambda p: -p.event_id):
        if point.kind not in _OPENING and (point.connection, point.side) not in holding:
            continue  # a release or detach point belongs with its take (below)
        taken = attempt(sim.lock_early | {point.key})
        if taken is None:
            continue
        candidates = [taken]
        if point.kind == "take":  # its reader may let go before any later segment
            reader = (point.connection, point.side)
            candidates += [
                c
                for r in taken.lock_points
                if r.kind not in _NOT_HELD and (r.connection, r.side) == reader
                and (c := attempt(taken.lock_early | {r.key})) is not None
            ]  # fmt: skip
        for candidate in candidates:
            if candidate.events == sim.events:
                continue
            candidate_aligned, candidate_model = against(candidate)
            found.append((candidate, candidate_aligned, candidate_model, _cost(candidate_aligned)))
            if not any(found[-1][3]):
                return found
            if found[-1][3] < outcome[3] and _later(
                _wrong_connection(candidate, candidate_aligned), connection
            ):
                return found
    return found


def _fewest(
    sim: Simulation,
    aligned: list[Pair],
    model: list[Row],
    against: Callable[[Simulation], tuple[list[Pair], list[Row]]],
    budget: list[int],
) -> tuple[Simulation, list[Pair], list[Row]]:
    """Drop each lock point the search took that the capture does not need (a take with
    the release, detach, stopped or cleanup points of its hold), while the outcome stays
    as good: the greedy search may take a point that helped only on the way, and every
    point taken is counted as a race the kernel went the other way in. Within what is
    left of the search's budget."""
    wrong = _cost(aligned)
    for choice in sorted(sim.lock_early, key=lambda c: (c[0], c[1], c[2], c[3] != "take")):
        if choice not in sim.lock_early:
            continue
        if budget[0] <= 0:
            break
        budget[0] -= 1
        drop = {choice} | _opened_by(sim.lock_early, choice)
        fewer = _within_domain(sim, sim.lock_early - drop)
        if fewer is None:
            continue
        fewer_aligned, fewer_model = against(fewer)
        if _cost(fewer_aligned) <= wrong:
            sim, aligned, model = fewer, fewer_aligned, fewer_model
    return sim, aligned, model


def _opened_by(chosen: frozenset[ReaderChoice], take: ReaderChoice) -> set[ReaderChoice]:
    """The release, detach, stopped and cleanup points of the hold a take point starts:
    the same reader's, after the take and before its next take."""
    if take[3] != "take":
        return set()
    later_takes = [c[2] for c in chosen if c[:2] == take[:2] and c[3] == "take" and c[2] > take[2]]
    until = min(later_takes, default=None)
    return {
        c
        for c in chosen
        if c[:2] == take[:2] and c[3] not in _NOT_HELD and c[2] >= take[2]
        and (until is None or c[2] <= until)
    }  # fmt: skip


def _agreeing_prefix(aligned: Sequence[Pair]) -> int:
    """How many of the kernel's segments come before the earliest disagreement about TCP
    (the same capture's rows, so comparable between outcomes)."""
    count = 0
    for pair in aligned:
        if pair.disagreement is not None and not pair.disagreement.timing_only:
            break
        count += pair.kernel is not None
    return count


def _first_wrong_event(aligned: Sequence[Pair]) -> int:
    """The model's event id of the earliest disagreement about TCP (of any, where only
    times disagree): its own row's, or for a segment only the kernel sent, the model's
    next row in that direction (the last of its connection where none follows): what
    made the kernel send it happened before that row, and may have come after the row
    before it (a segment the peer sent meanwhile; seen at a "quickack" point, whose
    extra ACK follows a client segment the server's previous row came before). A time is
    not a segment: on a slow host (CI's emulated VM) the first iterations arrive late,
    and anchoring there would keep the search from the lock point that explains a later
    window."""
    following: dict[int, int] = {}  # a kernel-only pair's index -> its anchor
    upcoming: dict[tuple[int, str], int] = {}
    last_of: dict[int, int] = {}
    for index in reversed(range(len(aligned))):
        pair = aligned[index]
        row = pair.model or pair.kernel
        assert row is not None
        direction = (row.connection, row.sender)
        if pair.model is not None and pair.model.event_id is not None:
            upcoming[direction] = pair.model.event_id
            last_of[row.connection] = max(last_of.get(row.connection, 0), pair.model.event_id)
        elif pair.disagreement is not None:
            following[index] = upcoming.get(direction, -1)
    first: dict[bool, int] = {}
    for index, pair in enumerate(aligned):
        if pair.disagreement is None:
            continue
        if pair.model is not None and pair.model.event_id is not None:
            anchor = pair.model.event_id
        else:
            row = pair.model or pair.kernel
            assert row is not None
            anchor = following.get(index, -1)
            if anchor < 0:
                anchor = last_of.get(row.connection, 0)
        timing = pair.disagreement.timing_only
        first[timing] = min(first.get(timing, anchor), anchor)
    return first.get(False, first.get(True, 0))


def _cost(aligned: Iterable[Pair]) -> tuple[int, int]:
    """(disagreements about TCP, arrivals outside their band): an outcome is chosen by what
    TCP sent first, and by time only between equals (a busy or emulated host moves times,
    never segments)."""
    tcp = timing = 0
    for pair in aligned:
        if pair.disagreement is not None:
            if pair.disagreement.timing_only:
                timing += 1
            else:
                tcp += 1
    return tcp, timing


def pairs(
    model: list[Row],
    kernel: list[Row],
    model_start: dict[int, float],
    kernel_start: dict[int, float],
    *,
    same_instant: bool = False,
    apps: _Apps | None = None,
) -> list[Pair]:
    """The model's and the kernel's segments aligned, each pair with its disagreement.

    `model_start` and `kernel_start` give each iteration's start on each clock;
    an iteration missing from either is not timed. `same_instant` (no delay):
    the kernel's pure ACKs are compared in the order they were sent
    (`in_send_order`), not the order they arrived. `apps`: the model's wake-ups and
    the applications' stamped calls, where they were stamped.
    """
    clocks = _Clocks(model_start, kernel_start, apps)
    aligned: list[Pair] = []
    connections = sorted({r.connection for r in model} | {r.connection for r in kernel})
    for connection in connections:
        ours = [r for r in model if r.connection == connection]
        theirs = [r for r in kernel if r.connection == connection]
        if same_instant:
            theirs = in_send_order(theirs)
        aligned += min(
            (_connection(rows, theirs, clocks) for rows in _outcomes(ours)),
            key=_cost,
        )
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
    return [p.disagreement.sentence() for p in aligned if p.disagreement]


def in_send_order(rows: list[Row]) -> list[Row]:
    """Each run of consecutive pure ACKs one side sent, in the order it sent them.

    Without a delay, lo hands each packet to the receive backlog of the CPU
    that sent it (loopback_xmit -> __netif_rx -> enqueue_to_backlog): ACKs a
    socket sends from a softirq on one CPU and from its owner's release_sock
    on another can arrive, and be captured, in either order. Within such a run
    the sequence number stands still and the acknowledgment number only grows
    as they are sent, so sorting the run by it gives back the sending order.
    Anything else keeps its arrival order.
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


RaceEnd = Literal["carried", "late", "lost"]


def _outcomes(rows: list[Row]) -> list[list[Row]]:
    """The connection's rows under each combination of its late-outcome races' ends, the
    model's own first (min keeps the first of equals): "carried" (the FIN carries the
    ACK, or the timer's early ACK leaves first) drops the late rows; "late" drops the
    early ACK and makes the late rows required; "lost" (model/late_ack.py: the FIN lost
    under the timer's ACK) makes the early ACK required and drops the late rows and the
    peer's last ACK."""
    groups = sorted({r.race_group for r in rows if r.race_outcome == "late"})
    ends: tuple[RaceEnd, ...] = ("carried", "late", "lost")
    combinations = (
        dict(zip(groups, chosen, strict=True))
        for chosen in itertools.product(ends, repeat=len(groups))
    )
    return [[_as_ended(r, ended) for r in rows if _kept(r, ended)] for ended in combinations]


def _kept(row: Row, ended: dict[int, RaceEnd]) -> bool:
    late_row = row.race_outcome in ("late", "answer")
    end = ended.get(row.race_group)
    if late_row and end != "late":
        return False
    if row.race_outcome == "early" and end == "late":
        return False
    return not (row.lost_in and ended.get(row.lost_in) == "lost")


def _as_ended(row: Row, ended: dict[int, RaceEnd]) -> Row:
    end = ended.get(row.race_group)
    required = (end == "late" and row.race_outcome in ("late", "answer")) or (
        end == "lost" and row.race_outcome == "early"
    )
    return dataclasses.replace(row, optional=False) if required else row


def _connection(model: list[Row], kernel: list[Row], clocks: _Clocks) -> list[Pair]:
    aligned: list[Pair] = []
    for sender in ("client", "server"):
        ours = [r for r in model if r.sender == sender]
        theirs = [r for r in kernel if r.sender == sender]
        aligned += _direction(ours, theirs, clocks)
    return _judged_with_lateness(aligned, clocks)


def _judged_with_lateness(aligned: list[Pair], clocks: _Clocks) -> list[Pair]:
    """The pairs again, each arrival judged with the delay backend's measured lateness
    and the applications' measured wake-ups on its path (both directions' segments, so
    only once the connection is aligned)."""
    late = backend_lateness(aligned)
    woke = _apps_late(aligned, clocks.apps) if clocks.apps is not None else {}
    if (
        not late
        and not woke
        and not any(p.kernel is not None and p.kernel.late_ms for p in aligned)
    ):
        return aligned
    return [
        Pair(p.model, p.kernel, _matched(p.model, p.kernel, clocks, late, woke))
        if p.model is not None and p.kernel is not None and not isinstance(p.disagreement, Changed)
        else p
        for p in aligned
    ]


def links_held(aligned: Sequence[Pair], error_ms: float) -> list[LinkHeld]:
    """For each connection that disagrees about TCP, each side whose segments the delay
    backend measured itself holding beyond the delay longer than the model can take in
    (the model's band for the segment each stands for, which holds the backend's error
    `error_ms`; that error alone where the model states no band), sent before the
    connection's first disagreement about TCP: on the link when the kernel parted from
    the model. Send times are arrivals less the measured lateness (D cancels); a segment
    the kernel did not send is placed on the capture's clock by the last pair before it
    that both sent (none: nothing was on the link before it)."""
    parted: dict[int, float] = {}
    for p in aligned:
        if p.disagreement is None or p.disagreement.timing_only:
            continue
        row = p.kernel or p.model
        assert row is not None
        if p.kernel is not None:
            at = p.kernel.arrived_ms - p.kernel.late_ms
        else:
            at = _on_the_capture_clock(row, aligned)
        parted[row.connection] = min(at, parted.get(row.connection, math.inf))
    held: dict[tuple[int, Side], list[Row]] = {}
    for p in aligned:
        k = p.kernel
        if k is None or k.late_ms <= max(error_ms, p.model.band_ms if p.model else 0.0):
            continue
        if k.arrived_ms - k.late_ms < parted.get(k.connection, -math.inf):
            held.setdefault((k.connection, k.sender), []).append(k)
    return [
        LinkHeld(
            connection,
            sender,
            len(rows),
            max(r.late_ms for r in rows),
            Moment(min(r.arrived_ms for r in rows)),
            error_ms,
        )
        for (connection, sender), rows in sorted(held.items())
    ]


def _on_the_capture_clock(missing: Row, aligned: Sequence[Pair]) -> float:
    """A model segment the kernel did not send, on the capture's clock: moved as the last
    segment of its connection before it that both sent (-inf where there is none)."""
    before = [
        p
        for p in aligned
        if p.model is not None
        and p.kernel is not None
        and p.model.connection == missing.connection
        and p.model.arrived_ms <= missing.arrived_ms
    ]
    if not before:
        return -math.inf
    last = max(before, key=lambda p: p.model.arrived_ms)  # type: ignore[union-attr]
    assert last.kernel is not None and last.model is not None
    return missing.arrived_ms + last.kernel.arrived_ms - last.model.arrived_ms


def backend_lateness(aligned: Iterable[Pair]) -> dict[int, float]:
    """How late the delay backend released each model segment the kernel sent alike, by
    the model's event id, as the backend measured it (0 or absent: not measured)."""
    return {
        p.model.event_id: p.kernel.late_ms
        for p in aligned
        if p.model is not None
        and p.kernel is not None
        and p.model.event_id is not None
        and p.kernel.late_ms
        and not isinstance(p.disagreement, Changed)
    }


@dataclass(frozen=True)
class _Apps:
    """The model's wake-ups (app_wakes.WakeHop) and the applications' stamped calls,
    numbered as the compared rows."""

    hops: tuple[WakeHop, ...]
    calls: tuple[CapturedCall, ...]


def _apps_late(aligned: Sequence[Pair], apps: _Apps) -> dict[int, float]:
    """app_wakes.app_lateness over these pairs: each hop's measured lateness by its
    call's event id."""
    connections = {p.kernel.connection for p in aligned if p.kernel is not None}
    wake_arrivals, arrivals = _kernel_times(aligned)
    hops = [h for h in apps.hops if h.connection in connections]
    return app_lateness(hops, apps.calls, wake_arrivals, arrivals)


def race_count(pairs_: Sequence[Pair], model: Sequence[Row]) -> tuple[int, int]:
    """(races the model named, races used): optional rows and merged ACKs, and those the
    kernel took the other way (an optional row it did not send, a late outcome, a FIN
    lost under its timer's ACK, a merged ACK it sent)."""
    paired = {p.model.event_id for p in pairs_ if p.model is not None}
    named = sum(
        1
        for row in model
        if (row.optional and row.race_outcome not in ("late", "answer"))
        or row.merged_ack is not None
        or row.psh_either
    )
    used = sum(
        1
        for p in pairs_
        if p.model is not None
        and (
            (p.model.optional and not p.kernel)
            or (p.model.race_outcome == "late" and p.kernel is not None)
            or (p.model.race_outcome == "early" and _fin_lost(p.model, paired, model))
            or (
                p.kernel is not None
                and p.model.merged_ack is not None
                and p.kernel.ack == p.model.merged_ack != p.model.ack
            )
            or (p.kernel is not None and p.model.psh_either and p.kernel.flags != p.model.flags)
        )
    )
    return named, used


def _fin_lost(early: Row, paired: set[int | None], model: Sequence[Row]) -> bool:
    """Was this early ACK's race taken as the lost FIN: its peer's last ACK is a model row
    but in no pair (`paired`: the event ids of the pairs' model rows)?"""
    last = {r.event_id for r in model if r.lost_in and r.lost_in == early.race_group}
    return bool(last) and not last & paired


@dataclass(frozen=True)
class _Clocks:
    model_start: dict[int, float]
    kernel_start: dict[int, float]
    apps: _Apps | None = None  # where the applications stamped their calls

    def into(self, ours: Row, theirs: Row) -> tuple[float, float] | None:
        """(kernel, model) arrival from the iteration's start, where both starts are known."""
        if ours.iteration not in self.model_start or ours.iteration not in self.kernel_start:
            return None
        return (
            theirs.arrived_ms - self.kernel_start[ours.iteration],
            ours.arrived_ms - self.model_start[ours.iteration],
        )

    def moment(self, row: Row, iteration: int | None, *, kernel: bool) -> Moment:
        """The row's arrival from its iteration's start where that is known, else on its
        own clock. A captured row has no iteration of its own: the model's row it stands
        against gives it; an unpaired one keeps the capture's clock."""
        starts = self.kernel_start if kernel else self.model_start
        if iteration is None or iteration not in starts:
            return Moment(row.arrived_ms)
        return Moment(row.arrived_ms - starts[iteration], iteration)


def _direction(model: list[Row], kernel: list[Row], clocks: _Clocks) -> list[Pair]:
    """The alignment with the fewest disagreements; a race's optional row may go unmatched.

    An edit-distance alignment over the rows' keys: an equal pair costs
    nothing, an optional model row left out (the race went the other way)
    nothing, and a changed, missing or extra segment one each. Every step of
    the cheapest alignment becomes a Pair, with its disagreement.

    The rows both sides state alike from the start are paired first, without
    the quadratic table: where the first model row (no optional one) stands for
    the first captured row, some cheapest alignment pairs them (pairing them
    instead of any other choice costs no more), and the table's own walk would
    pair them too. A big answer's thousands of segments then cost a walk, not
    millions of comparisons.
    """
    head = 0
    while (
        head < len(model)
        and head < len(kernel)
        and not model[head].optional
        and model[head].stands_for(kernel[head])
    ):
        head += 1
    paired = [Pair(model[k], kernel[k], _matched(model[k], kernel[k], clocks)) for k in range(head)]
    return paired + _table(model[head:], kernel[head:], clocks)


def _table(model: list[Row], kernel: list[Row], clocks: _Clocks) -> list[Pair]:
    """_direction's edit-distance table and its walk, for the rows after the common start."""
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
            aligned.append(Pair(model[i], kernel[j], _matched(model[i], kernel[j], clocks)))
            i, j = i + 1, j + 1
        elif i < n and model[i].optional and cost[i][j] == cost[i + 1][j]:
            aligned.append(Pair(model[i], None))
            i += 1
        elif i < n and j < m and cost[i][j] == cost[i + 1][j + 1] + 1:
            ours, theirs = model[i], kernel[j]
            at = clocks.moment(theirs, ours.iteration, kernel=True)
            aligned.append(Pair(ours, theirs, Changed(ours, theirs, at)))
            i, j = i + 1, j + 1
        elif i < n and cost[i][j] == cost[i + 1][j] + 1:
            ours = model[i]
            at = clocks.moment(ours, ours.iteration, kernel=False)
            aligned.append(Pair(ours, None, Missing(ours, at)))
            i += 1
        else:
            theirs = kernel[j]
            at = clocks.moment(theirs, None, kernel=True)
            aligned.append(Pair(None, theirs, Extra(theirs, at)))
            j += 1
    return aligned


def _matched(
    ours: Row,
    theirs: Row,
    clocks: _Clocks,
    late: dict[int, float] | None = None,
    woke: dict[int, float] | None = None,
) -> Disagreement | None:
    """What is wrong with a segment both sides sent alike: its window, or its arrival.
    `late` (backend_lateness): the model's arrival moves by what the delay backend
    measured on the segment's path, its own release included (Row.path_before), less
    what it measured on the start's alone (Row.start_only); `woke` (_apps_late): so it
    does by the applications' measured wake-ups on the same paths."""
    allowed = ours.windows_for(theirs)
    if ours.window is not None and theirs.window is not None and theirs.window not in allowed:
        at = clocks.moment(theirs, ours.iteration, kernel=True)
        return WrongWindow(ours, theirs, theirs.window, allowed, at)
    times = clocks.into(ours, theirs) if ours.timed else None
    if times is None:
        return None
    backend_ms = 0.0
    if late is not None:
        backend_ms = theirs.late_ms if ours.own_late else 0.0
        backend_ms += sum(late.get(i, 0.0) for i in ours.path_before)
        backend_ms -= sum(late.get(i, 0.0) for i in ours.start_only)
    apps_ms = 0.0
    if woke:
        apps_ms = sum(woke.get(i, 0.0) for i in ours.path_before)
        apps_ms -= sum(woke.get(i, 0.0) for i in ours.start_only)
    kernel_ms, model_ms = times[0], times[1] + backend_ms + apps_ms
    if abs(kernel_ms - model_ms) > ours.band_ms:
        return Arrival(
            ours, theirs, ours.iteration, kernel_ms, model_ms, ours.band_ms, backend_ms, apps_ms
        )
    return None

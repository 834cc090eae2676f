"""The host's own timing, as a capture measured it, given to the model where its on-time
timers and instant applications cannot show what the kernel did.

Rules:
- Two things the host decides, both measured, never assumed:
  1. The client's SYN timer's work after its tick: a CPU idle for a second runs its
     timer softirq late (0.4-5.2 ms on this VM, different at each expiry), which can put
     a SYN sent again after the server's SYN-ACK timer's tick where the model's on-time
     timers put it before, so the server answers twice, a fraction of a millisecond
     apart (docs/research-issue22/synack-lost-d926-two-synacks-6.18.md). Measured on
     each retransmitted SYN in turn: its departure (the captured arrival less D less the
     delayer's own lateness) against the model's, in each bucket position of its
     connection (Simulation.wheel_races); a position is taken where each is at least 0
     (a timer runs at or after its tick), the first under a tick (the positions are
     quarter ticks) and the others under their bucket's width.
  2. A slow wake (app_wakes.SlowWake): an application whose first call came after the
     next segment reached its side, so the kernel handled that segment first (a second
     SYN-ACK's challenge ACK before the request). Its turn comes as late as its stamp
     (loop.World._wake), numbered by the application's turns in the timeline compared.
- Each candidate is a whole simulation (simulation.with_measured_host); the comparison
  keeps one only where it disagrees less about TCP, and counts it as a race used.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence

from tfolab.lab.app_wakes import SlowWake
from tfolab.lab.packet_rows import Row, model_starts, row_numbers
from tfolab.model import Segment, Simulation, Timer
from tfolab.model.clock import ms_to_ns
from tfolab.model.events import Side
from tfolab.model.simulation import (
    QUARTERS_PER_TICK,
    WHEEL_LEVEL1_TICKS,
    ModelInputError,
    with_measured_host,
)


def candidates(
    sim: Simulation,
    kernel: Sequence[Row],
    kernel_starts: Mapping[int, float],
    slow: Sequence[SlowWake],
    wrong: Collection[int],
) -> Iterator[Simulation]:
    """The timelines with the host's measured timing, each a whole simulation: for each
    connection with a wheel race whose segments disagree about TCP (`wrong`: the rows'
    numbers), each bucket position where each of its client's retransmitted SYNs left as
    measured (each one's timer that late after its tick), with the slow wakes; without
    such a connection, the slow wakes alone."""
    wakes = _numbered(sim, slow)
    number = row_numbers(sim)
    tried = False
    for connection in (c for c in sim.wheel_races if number.get(c) in wrong):
        departed = _kernel_syns_again(kernel, number.get(connection), sim.one_way_delay_ms)
        if not departed:
            continue
        kept = tuple((c, q) for c, q in sim.wheel_offsets if c != connection)
        for quarter in range(WHEEL_LEVEL1_TICKS * QUARTERS_PER_TICK):
            offsets = tuple(sorted((*kept, (connection, quarter)))) if quarter else kept
            measured = _measured_syns(sim, offsets, connection, departed, kernel_starts)
            if measured is None:
                continue
            tried = True
            try:
                yield with_measured_host(
                    sim, wheel_offsets=offsets, timers_late=measured, slow_wakes=wakes
                )
            except ModelInputError:
                continue
    if wakes and not tried:
        try:
            yield with_measured_host(
                sim, wheel_offsets=sim.wheel_offsets, timers_late=(), slow_wakes=wakes
            )
        except ModelInputError:
            return


def _measured_syns(
    sim: Simulation,
    offsets: tuple[tuple[int, int], ...],
    connection: int,
    departed: Sequence[float],
    kernel_starts: Mapping[int, float],
) -> tuple[tuple[int, int, int], ...] | None:
    """In this bucket position, each retransmitted SYN's timer lateness, measured in turn
    (each one's timer is armed when the one before it left): None where one would have
    to leave before its tick, the first a tick or more after it (another position), a
    later one a bucket or more after it, or where the model sends fewer."""
    tick_ms = 1000.0 / sim.hz
    measured: tuple[tuple[int, int, int], ...] = ()
    for k, kernel_ms in enumerate(departed):
        try:
            positioned = with_measured_host(
                sim, wheel_offsets=offsets, timers_late=measured, slow_wakes=()
            )
        except ModelInputError:
            return None
        ours = _model_syns_again(positioned, connection)
        if len(ours) <= k or ours[k].iteration not in kernel_starts:
            return measured or None
        model_start = model_starts(positioned).get(ours[k].iteration, 0.0)
        late_ms = (kernel_ms - kernel_starts[ours[k].iteration]) - (ours[k].sent_ms - model_start)
        # the first one picks the position (its tick, in quarters); a later one may run
        # as late as its bucket is wide (0.4-5.2 ms here after a second's idle)
        if not 0 <= late_ms < (tick_ms if k == 0 else tick_ms * WHEEL_LEVEL1_TICKS):
            return None
        measured = (*measured, (connection, k, ms_to_ns(late_ms)))
    return measured


def _numbered(sim: Simulation, slow: Sequence[SlowWake]) -> tuple[tuple[int, Side, int, int], ...]:
    """Each slow wake as (connection, side, turn, ns): the turn of that application on
    that connection whose answered segment woke the hop (Simulation.turns)."""
    out = []
    for wake in slow:
        hop = wake.hop
        turns = [t for t in sim.turns if (t[0], t[1]) == (hop.model_connection, hop.side)]
        ordinal = next((n for n, t in enumerate(turns) if t[2] == hop.wake_id), None)
        if ordinal is not None and wake.delay_ms > 0:
            out.append((hop.model_connection, hop.side, ordinal, ms_to_ns(wake.delay_ms)))
    return tuple(out)


def _kernel_syns_again(
    kernel: Sequence[Row], connection: int | None, delay_ms: float
) -> list[float]:
    """When each of the capture's retransmitted client SYNs on `connection` (rows'
    numbering) left: its arrival less D less the delayer's own lateness (capture clock)."""
    syns = [
        r
        for r in kernel
        if r.connection == connection and r.sender == "client" and r.flags == ("SYN",)
    ]
    return [r.arrived_ms - delay_ms - r.late_ms for r in syns[1:]]


def _model_syns_again(sim: Simulation, connection: int) -> list[Segment]:
    """The model's client SYNs that its SYN timer sent again on `connection`, in order."""
    by_id = {e.id: e for e in sim.events}
    return [
        event
        for event in sim.events
        if isinstance(event, Segment)
        and event.connection == connection
        and event.sender == "client"
        and event.flags == ("SYN",)
        and event.caused_by is not None
        and isinstance(by_id.get(event.caused_by), Timer)
    ]

"""simulate(): one scenario through the model, checked input in, a Simulation out.

Rules:
- Pure and deterministic: the same arguments always give the same Simulation.
- Bad input raises ModelInputError (a ValueError) with one readable line that
  says what is wrong and what fits; nothing else is validated further down.
  So does a scenario outside the model's domain (domain.py): refused with
  what the model lacks, never simulated into a wrong prediction.
- The tick phase (where the jiffies edges sit relative to the first connect)
  cannot be known on a real machine; its default is a fixed fraction of a
  tick, and the predictions' tolerance covers any other phase.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from tfolab.model import domain
from tfolab.model.captured import CapturedRow
from tfolab.model.clock import COALESCED_TIMERS, LATE_TIMERS, ms_to_ns
from tfolab.model.events import AppCall, Event, Segment, Side
from tfolab.model.loop import (
    REPLAY_ORDERS,
    LockPoint,
    ModelStuck,
    ReaderChoice,
    ReplayOrder,
    World,
)
from tfolab.model.packet_ends import CapturedEnds
from tfolab.model.page_frag import PageWrite
from tfolab.model.path import LossNotFollowed
from tfolab.model.predict import (
    Accuracy,
    IterationPrediction,
    predict,
    segment_bands,
)
from tfolab.model.rcv_space import LINUX_DEFAULT, ReceiveMemory
from tfolab.model.scenario import MAX_DELAY_MS, MAX_ITERATIONS, ScenarioConfig, SettingError
from tfolab.model.window import DEFAULT_RECEIVE_SPACE, initial_wscale

DEFAULT_TICK_PHASE = 0.3  # of a tick
# The TcpExt counters the model predicts; any it leaves out of `counters` it predicts at 0.
PREDICTED_COUNTERS = (
    "DelayedACKs",
    "TCPACKSkippedChallenge",  # a challenge ACK held back (receive._syn_after_handshake)
    "TCPACKSkippedSynRecv",  # a SYN-ACK for a SYN again held back (synack_timer.syn_again)
    "TCPChallengeACK",
    "TCPFastOpenActive",
    "TCPFastOpenActiveFail",
    "TCPFastOpenCookieReqd",
    "TCPFastOpenListenOverflow",
    "TCPFastOpenPassive",
    "TCPFastOpenPassiveFail",
    "TCPLossProbeRecovery",  # the first ACK beyond a probe that repaired a loss (loss_probe.py)
    "TCPLossProbes",  # a tail-loss probe sent (loss_probe.py)
    "TCPLostRetransmit",  # a timeout finding a retransmission lost (syn_timer, loss_rto)
    "TCPSYNChallenge",  # a SYN or SYN-ACK after the handshake
    "TCPSynRetrans",  # tcp_retransmit_skb of a SYN (syn_timer.py)
    "TCPTimeouts",  # every expiry: tcp_retransmit_timer, reqsk_timer_handler (synack_timer.py)
    "TcpTimeoutRehash",  # tcp_retransmit_timer's expiries only (expiry.write_timeout)
)
DEFAULT_ACCURACY = Accuracy()
# kernel/time/timer.c: a level-1 bucket is 8 ticks (LVL_CLK_SHIFT 3); other_buckets
# tries each whole-tick offset within one, then each quarter of a tick as well (where
# the tick edges fall against the connection's start moves which jiffy an arrival sees)
WHEEL_LEVEL1_TICKS = 8
QUARTERS_PER_TICK = 4
assert LATE_TIMERS == WHEEL_LEVEL1_TICKS * QUARTERS_PER_TICK  # every position, then late
# The GSO-size race's other outcomes (slower_pacings): the senders' tcp_tso_autosize with
# a quarter, half, and all of the round-trip excess (Env.rtt_excess_ns) added to srtt
PACING_EXCESS_SHARES = (4, 2, 1)


class ModelInputError(ValueError):
    """A simulate() argument the model cannot take; the message is one readable line."""


@dataclass(frozen=True)
class Simulation:
    config: ScenarioConfig
    one_way_delay_ms: float
    hz: int
    events: tuple[Event, ...]
    predictions: tuple[IterationPrediction, ...]
    counters: dict[str, int]
    iterations: int = 1
    # What the server application did in the measured part: "accepted", "requests".
    app: dict[str, int] = dataclasses.field(default_factory=dict)
    accuracy: Accuracy = DEFAULT_ACCURACY
    tick_phase_ms: float = 0.0
    receive_space_bytes: int = DEFAULT_RECEIVE_SPACE
    receive_memory: ReceiveMemory = LINUX_DEFAULT
    # each segment's own arrival band in ms, by event id (predict.segment_bands)
    segment_bands: dict[int, float] = dataclasses.field(default_factory=dict)
    latest_app_first: bool = False  # the other order of two applications woken at once
    # D = 0: where a woken reader may take its socket before its peer sends more
    # (loop.LockPoint), and the ones this timeline takes there (backlog.py)
    lock_points: tuple[LockPoint, ...] = ()
    lock_early: frozenset[ReaderChoice] = frozenset()  # LockPoint.key: the other way
    replay_order: ReplayOrder = "chain-first"  # D = 0: a replayed child's application's turn
    # the round-trip excess the senders' tcp_tso_autosize saw (slower_pacings); 0: none
    pacing_excess_ms: float = 0.0
    # the writes whose page may still be held (page_frag.py: a segment's fragments would
    # differ), first seen first, and the ones this timeline holds (held_pages)
    page_races: tuple[PageWrite, ...] = ()
    pages_held: frozenset[PageWrite] = frozenset()
    # where each connection's timer-wheel buckets sit, (connection, ticks), 0 unless
    # given, and the connections where an arrival met a level-1 timer inside its
    # bucket, first seen first (other_buckets)
    wheel_offsets: tuple[tuple[int, int], ...] = ()
    wheel_races: tuple[int, ...] = ()
    # where a capture shows the senders' GSO packets ended (captured_packet_ends; None:
    # the model's own), and how many of the model's own packet ends that moved
    packet_ends: CapturedEnds | None = None
    packet_ends_moved: int = 0
    # measured where a capture showed them (the comparison's measured_host): each
    # (connection, k, ns) whose client's SYN timer sent its k-th retransmission (from 0)
    # that much after its tick (syn_timer.py),
    # each (connection, side, turn, ns) whose application's turn came that much after
    # what woke it; and every application turn as it ran (connection, side, the segment
    # it answered), which numbers the turns
    timers_late: tuple[tuple[int, int, int], ...] = ()
    slow_wakes: tuple[tuple[int, Side, int, int], ...] = ()
    turns: tuple[tuple[int, Side, int], ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "config": dataclasses.asdict(self.config),
            "one_way_delay_ms": self.one_way_delay_ms,
            "hz": self.hz,
            "iterations": self.iterations,
            "tick_phase_ms": self.tick_phase_ms,
            "receive_space_bytes": self.receive_space_bytes,
            "receive_memory": dataclasses.asdict(self.receive_memory),
            "accuracy": dataclasses.asdict(self.accuracy),
            "events": [e.to_json() for e in self.events],
            "predictions": [p.to_json() for p in self.predictions],
            "counters": dict(self.counters),
            "app": dict(self.app),
        }


def simulate(
    config: ScenarioConfig,
    *,
    one_way_delay_ms: float,
    iterations: int,
    hz: int = 250,
    accuracy: Accuracy = DEFAULT_ACCURACY,
    tick_phase_ms: float | None = None,
    receive_space_bytes: int = DEFAULT_RECEIVE_SPACE,
    receive_memory: ReceiveMemory = LINUX_DEFAULT,
    latest_app_first: bool = False,
    lock_early: frozenset[ReaderChoice] = frozenset(),
    replay_order: ReplayOrder = "chain-first",
    pacing_excess_ms: float = 0.0,
    pages_held: frozenset[PageWrite] = frozenset(),
    wheel_offsets: tuple[tuple[int, int], ...] = (),
    packet_ends: CapturedEnds | None = None,
    explore_drop_races: bool = True,
    timers_late: tuple[tuple[int, int, int], ...] = (),
    slow_wakes: tuple[tuple[int, Side, int, int], ...] = (),
) -> Simulation:
    """Run the scenario in the model and predict every iteration's headline.

    `latest_app_first`: applications woken at the same instant run newest
    first (the other outcome of a D = 0 race between two processes).
    `lock_early`: the lock points (loop.py) where the woken reader takes its
    socket before its peer sends more (the other outcome of that race).
    `replay_order`: at D = 0, whether the replayed child's application answers
    before its SYN's softirq chain ends TIME_WAIT, and how (loop.ReplayOrder).
    `pacing_excess_ms`: how much longer than the model's the srtt is that the senders'
    tcp_tso_autosize sees (an outcome of the GSO-size race, slower_pacings).
    `pages_held`: the writes whose process's page a read skb still held, which go on at
    the offset its last copy stopped at (the other outcome of that race, held_pages).
    `wheel_offsets`: (connection, ticks) where that connection's timer-wheel buckets
    sit, the real jiffies counter being the model's plus the ticks (other_buckets).
    `packet_ends`: where a capture shows the senders' GSO packets ended, taken where the
    model names that race (the race's outcome as the kernel took it, captured_packet_ends).
    `explore_drop_races`: where a drop lands after a wheel race, simulate the race's
    other positions too and refuse if one leaves the domain (race_moves_a_drop);
    False for those other positions themselves.
    `timers_late`, `slow_wakes`: what a capture measured of the host (Simulation's
    fields of those names): the model takes them as given.
    """
    _check_arguments(one_way_delay_ms, iterations, hz, accuracy)
    _check_config(config)
    if config.replay_syn and iterations < 2:
        raise ModelInputError(
            f"replay_syn needs at least 2 iterations (one to replay, then the replay), "
            f"got {iterations}"
        )
    outside = domain.refusal(
        config,
        float(one_way_delay_ms),
        receive_memory,
        initial_wscale(receive_space_bytes),
        iterations,
    )
    if outside is not None:
        raise ModelInputError(f"outside the model's domain: {outside}")
    tick_ms = 1000.0 / hz
    phase = DEFAULT_TICK_PHASE * tick_ms if tick_phase_ms is None else tick_phase_ms
    if not (isinstance(phase, int | float) and 0 <= phase < tick_ms):
        raise ModelInputError(
            f"tick_phase_ms must be in [0, {tick_ms:g}) at HZ={hz}, got {phase!r}"
        )
    world = World(
        config,
        one_way_delay_ns=ms_to_ns(one_way_delay_ms),
        iterations=iterations,
        hz=hz,
        tick_phase_ns=ms_to_ns(phase),
        receive_space_bytes=receive_space_bytes,
        receive_memory=receive_memory,
        app_reaction_ns=ms_to_ns(accuracy.host_overhead_ms),
        rtt_excess_ns=ms_to_ns(rtt_excess_ms(accuracy)),
        pacing_excess_ns=ms_to_ns(pacing_excess_ms),
        latest_app_first=latest_app_first,
        lock_early=lock_early,
        replay_order=replay_order,
        pages_held=pages_held,
        wheel_offsets=wheel_offsets,
        packet_ends=packet_ends,
        timers_late=timers_late,
        slow_wakes=slow_wakes,
    )
    try:
        world.run()
    except LossNotFollowed as lost:  # a segment the path lost, whose timer it has no rule for
        raise ModelInputError(f"outside the model's domain: {lost}") from None
    except ModelStuck:
        if not world.env.beyond_domain:
            raise
        # a run that left the domain may stop short of its end: the refusal is the answer
    outside = left_domain(world)
    if outside is not None:
        raise ModelInputError(f"outside the model's domain: {outside}")
    events = world.recorder.timeline()
    predictions = predict(events, world.headlines, iterations, hz=hz, accuracy=accuracy)
    sim = Simulation(
        config=config,
        one_way_delay_ms=float(one_way_delay_ms),
        hz=hz,
        events=events,
        predictions=predictions,
        counters=dict(sorted(world.counters.items())),
        app=dict(world.app),
        iterations=iterations,
        accuracy=accuracy,
        tick_phase_ms=float(phase),
        receive_space_bytes=receive_space_bytes,
        receive_memory=receive_memory,
        segment_bands=segment_bands(events, predictions, hz=hz, accuracy=accuracy),
        latest_app_first=latest_app_first,
        lock_points=tuple(world.lock_points),
        lock_early=lock_early,
        replay_order=replay_order,
        pacing_excess_ms=float(pacing_excess_ms),
        page_races=tuple(world.env.page_races),
        pages_held=pages_held,
        wheel_offsets=wheel_offsets,
        wheel_races=tuple(world.env.wheel_races),
        packet_ends=packet_ends,
        packet_ends_moved=world.env.packet_ends_moved,
        timers_late=timers_late,
        slow_wakes=slow_wakes,
        turns=tuple(world.turns),
    )
    if explore_drop_races and world.env.drop_after_race:
        refused = race_moves_a_drop(sim)
        if refused is not None:
            raise ModelInputError(f"outside the model's domain: {refused}")
    return sim


def race_moves_a_drop(sim: Simulation) -> str | None:
    """A drop counts packets by their order, and a race of the timer wheel can change
    that order (one SYN-ACK or two before the Nth packet): every other position of each
    racing connection is simulated too, and if the drop lands where the model does not
    follow in one of them, the scenario is refused with that reason (the capture may
    show that outcome). None if every position stays in the domain."""
    for connection in sim.wheel_races:
        for offsets in _other_offsets(sim, connection):
            try:
                _again(sim, wheel_offsets=offsets)
            except ModelInputError as err:
                reason = str(err).removeprefix("outside the model's domain: ")
                return (
                    f"which packet the drop names depends on a race of the timer wheel "
                    f"(connection {connection}: its timers' bucket against an arrival), and "
                    f"the race's other way: {reason}"
                )
    return None


def left_domain(world: World) -> str | None:
    """Why a run world left the model's domain on its way (what refusal() cannot see
    before the run: a congestion window grown in slow start, a reader race); None if not."""
    if world.env.beyond_domain:
        return world.env.beyond_domain[0]
    return domain.reader_race_refusal(world.recorder.timeline(), world.config.read_whole)


def _again(
    sim: Simulation,
    *,
    latest_app_first: bool | None = None,
    lock_early: frozenset[ReaderChoice] | None = None,
    replay_order: ReplayOrder | None = None,
    pacing_excess_ms: float | None = None,
    pages_held: frozenset[PageWrite] | None = None,
    wheel_offsets: tuple[tuple[int, int], ...] | None = None,
    packet_ends: CapturedEnds | None = None,
    accuracy: Accuracy | None = None,
    timers_late: tuple[tuple[int, int, int], ...] | None = None,
    slow_wakes: tuple[tuple[int, Side, int, int], ...] | None = None,
) -> Simulation:
    """`sim` simulated again with one outcome of a race the other way (or, with
    `accuracy`, `timers_late` or `slow_wakes`, with the host's figures as the run
    measured them)."""
    return simulate(
        sim.config,
        one_way_delay_ms=sim.one_way_delay_ms,
        iterations=sim.iterations,
        hz=sim.hz,
        accuracy=sim.accuracy if accuracy is None else accuracy,
        tick_phase_ms=sim.tick_phase_ms,
        receive_space_bytes=sim.receive_space_bytes,
        receive_memory=sim.receive_memory,
        latest_app_first=(sim.latest_app_first if latest_app_first is None else latest_app_first),
        lock_early=sim.lock_early if lock_early is None else lock_early,
        replay_order=sim.replay_order if replay_order is None else replay_order,
        pacing_excess_ms=sim.pacing_excess_ms if pacing_excess_ms is None else pacing_excess_ms,
        pages_held=sim.pages_held if pages_held is None else pages_held,
        wheel_offsets=sim.wheel_offsets if wheel_offsets is None else wheel_offsets,
        packet_ends=sim.packet_ends if packet_ends is None else packet_ends,
        explore_drop_races=False,
        timers_late=sim.timers_late if timers_late is None else timers_late,
        slow_wakes=sim.slow_wakes if slow_wakes is None else slow_wakes,
    )


def other_app_order(sim: Simulation) -> Simulation | None:
    """At D = 0, the same simulation with applications woken at once run the other way round;
    None with a delay, or where the order changes nothing."""
    if sim.one_way_delay_ms:
        return None
    other = _again(sim, latest_app_first=not sim.latest_app_first)
    return None if other.events == sim.events else other


def other_replay_orders(sim: Simulation) -> tuple[Simulation, ...]:
    """At D = 0, the replay with its child's application taking its turn each other way
    (loop.ReplayOrder); none with a delay, without a replay, or where the order changes
    nothing."""
    if sim.one_way_delay_ms or not sim.config.replay_syn:
        return ()
    others = (_again(sim, replay_order=o) for o in REPLAY_ORDERS if o != sim.replay_order)
    return tuple(other for other in others if other.events != sim.events)


def rtt_excess_ms(accuracy: Accuracy) -> float:
    """How much longer than 2D the host's real round trip may be (Env.rtt_excess_ns):
    the backend's error on each of its two packets, or, where the run measured more on
    its own handshakes, that (Accuracy.measured_round_trip_excess_ms)."""
    return max(2 * accuracy.per_packet_delay_error_ms, accuracy.measured_round_trip_excess_ms)


def model_handshakes_ms(sim: Simulation) -> dict[int, float]:
    """Each iteration's connect() (or Fast Open sendto(), which blocks as long) in the
    model, call to return, where it is the plain round trip, SYN out and SYN-ACK back
    in 2D (no timer fired): the iterations whose measured call times the host's own
    round trip (the runner's connect_ms)."""
    calls: dict[int, float] = {}
    plain: dict[int, float] = {}
    two_d = 2 * sim.one_way_delay_ms
    for event in sim.events:
        if not isinstance(event, AppCall) or event.side != "client":
            continue
        if event.call not in ("connect", "sendto"):
            continue
        if event.detail != "returns":
            calls.setdefault(event.iteration, event.time_ms)
        elif event.iteration in calls and event.iteration not in plain:
            took = event.time_ms - calls[event.iteration]
            if abs(took - two_d) < 1e-6:
                plain[event.iteration] = took
    return plain


def with_measured_round_trip(sim: Simulation, excess_ms: float) -> Simulation:
    """`sim` again where the run measured a round trip `excess_ms` beyond the model's
    on its handshakes: tcp_synack_rtt_meas and tcp_ack_update_rtt seed each sender's
    srtt with that handshake, so where it exceeds the backend's error, tcp_tso_autosize
    (the GSO-size race, Segment.psh_race) and the loss probe's timer take it as the
    host's excess (rtt_excess_ms). Unchanged where it does not exceed it, or where the
    model cannot follow the scenario with it (then judged at the backend's figure)."""
    if excess_ms <= rtt_excess_ms(sim.accuracy):
        return sim
    accuracy = dataclasses.replace(sim.accuracy, measured_round_trip_excess_ms=excess_ms)
    try:
        return _again(sim, accuracy=accuracy)
    except (ModelInputError, LossNotFollowed):
        return sim


def slower_pacings(sim: Simulation) -> Iterator[Simulation]:
    """With a delay, where a sender's GSO packets end is a race on the host's round trip
    (Segment.psh_race: its srtt is the model's plus up to Env.rtt_excess_ns): the same
    simulation with the senders' tcp_tso_autosize seeing a quarter, half, and all of that
    excess. Where packets end decides more than PSH flags: a packet of one segment is not
    cut in software, so the receiver queues the sender's clone, which skb_try_coalesce
    refuses to grow (skb_cloned(to)): met where the receiver's tail skb is full
    (MAX_SKB_FRAGS), it makes the next segment start a skb of its own, one more head
    charged for the rest of the answer, a window unit lower. One at a time (each is a
    whole simulation); none without a delay, without such a race, where a share changes
    nothing, or where it leaves the model's domain."""
    excess = rtt_excess_ms(sim.accuracy)
    if not sim.one_way_delay_ms or not excess:
        return
    if not _names_psh_race(sim):
        return
    for share in PACING_EXCESS_SHARES:
        if excess / share == sim.pacing_excess_ms:
            continue
        try:
            other = _again(sim, pacing_excess_ms=excess / share)
        except ModelInputError:
            continue
        if other.events != sim.events:
            yield other


def _names_psh_race(sim: Simulation) -> bool:
    """Does the timeline name the GSO-size race anywhere (Segment.psh_race)?"""
    return any(isinstance(e, Segment) and e.psh_race for e in sim.events)


def captured_packet_ends(sim: Simulation, rows: Iterable[CapturedRow]) -> Simulation | None:
    """The GSO-size race's outcome as the capture shows it (packet_ends.py): the same
    simulation with each sender's packets ending where the kernel's did, wherever the
    model names that race, so that what the ends decide at the receiver (a packet of
    one segment is a clone no later segment joins, a skb head more) follows from the
    model's own rules. Met in CI's emulated VM: its ACK trains arrive spread out, and
    each ACK releases its own quota, 2 + 2 + 7 segments where the model sends 8 and 4.
    None without such a race, where the capture moves no end, or where the outcome
    leaves the model's domain."""
    if not _names_psh_race(sim):
        return None
    try:
        other = _again(sim, packet_ends=CapturedEnds.of(rows))
    except ModelInputError:
        return None
    return other if other.packet_ends_moved else None


def held_pages(sim: Simulation) -> Iterator[Simulation]:
    """Where a write's page may still be held (Simulation.page_races: a read skb waits on
    its allocating CPU's defer list, page_frag.py), the same simulation with one more of
    those writes going on at the offset its process's last copy stopped at, earliest
    first. The pages move under the whole write, so one outcome shifts every later
    fragment of the answer, and with them the receiver's heads and windows, together.
    One at a time (each is a whole simulation); none where a write changes nothing, or
    where it leaves the model's domain."""
    for race in sim.page_races:
        if race in sim.pages_held:
            continue
        try:
            other = _again(sim, pages_held=sim.pages_held | {race})
        except ModelInputError:
            continue
        if other.events != sim.events:
            yield other


def other_buckets(sim: Simulation, connection: int) -> Iterator[Simulation]:
    """The same simulation with `connection`'s timer-wheel buckets shifted by each other
    number of ticks within a level-1 bucket (WHEEL_LEVEL1_TICKS), then by each quarter
    tick too, then each of those with its timers' work the host's reaction after their
    tick (clock.LATE_TIMERS), or run at an arrival due within a tick after it
    (clock.COALESCED_TIMERS), the rest kept: where an arrival met a timer inside its bucket
    (Simulation.wheel_races), which comes first depends on where the bucket's edges
    sit, and on which jiffy each arrival sees. Each is a whole simulation; none that
    leaves the model's domain."""
    for offsets in _other_offsets(sim, connection):
        try:
            yield _again(sim, wheel_offsets=offsets)
        except ModelInputError:
            continue


def _other_offsets(sim: Simulation, connection: int) -> Iterator[tuple[tuple[int, int], ...]]:
    """Env.wheel_offsets for each other position of `connection`, the rest kept: whole
    ticks, then quarter ticks, then all of them with late timers, then with timers
    coalesced with an arrival."""
    kept = tuple((c, o) for c, o in sim.wheel_offsets if c != connection)
    current = dict(sim.wheel_offsets).get(connection, 0)
    whole = [ticks * QUARTERS_PER_TICK for ticks in range(WHEEL_LEVEL1_TICKS)]
    parts = [q for q in range(WHEEL_LEVEL1_TICKS * QUARTERS_PER_TICK) if q not in whole]
    late = [LATE_TIMERS + q for q in whole + parts]  # its timers' work the host's reaction late
    coalesced = [COALESCED_TIMERS + q for q in whole + parts]  # a late timer meets an arrival
    for offset in whole + parts + late + coalesced:
        if offset != current:
            yield tuple(sorted((*kept, (connection, offset)) if offset else kept))


def with_measured_host(
    sim: Simulation,
    *,
    wheel_offsets: tuple[tuple[int, int], ...],
    timers_late: tuple[tuple[int, int, int], ...],
    slow_wakes: tuple[tuple[int, Side, int, int], ...],
) -> Simulation:
    """The same simulation in a bucket position, with the host's timing a capture measured
    (Simulation.timers_late, Simulation.slow_wakes); the rest kept."""
    return _again(sim, wheel_offsets=wheel_offsets, timers_late=timers_late, slow_wakes=slow_wakes)


def with_lock_early(sim: Simulation, lock_early: frozenset[ReaderChoice]) -> Simulation:
    """The same simulation with the woken readers taking their sockets at `lock_early`."""
    return _again(sim, lock_early=lock_early)


def _finite_number(value: object) -> float | None:
    """The value as a float if it is a finite int or float (never a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _check_arguments(delay: object, iterations: object, hz: object, accuracy: Accuracy) -> None:
    delay_ms = _finite_number(delay)
    if delay_ms is None or delay_ms < 0:
        raise ModelInputError(
            f"one_way_delay_ms must be a number >= 0 (ms, one way), got {delay!r}"
        )
    if delay_ms > MAX_DELAY_MS:
        raise ModelInputError(
            f"one_way_delay_ms must be at most {MAX_DELAY_MS:g} ms, got {delay!r}"
        )
    if not isinstance(iterations, int) or isinstance(iterations, bool) or iterations < 1:
        raise ModelInputError(f"iterations must be a whole number >= 1, got {iterations!r}")
    if iterations > MAX_ITERATIONS:
        raise ModelInputError(f"iterations must be at most {MAX_ITERATIONS}, got {iterations!r}")
    if not isinstance(hz, int) or isinstance(hz, bool) or hz <= 0:
        raise ModelInputError(
            f"hz must be a positive whole number (100, 250, 300, 1000), got {hz!r}"
        )
    if hz > 10_000:
        raise ModelInputError(f"hz must be at most 10000, got {hz!r}")
    for name in ("per_packet_delay_error_ms", "host_overhead_ms"):
        value: object = getattr(accuracy, name)
        number = _finite_number(value)
        if number is None or number < 0:
            raise ModelInputError(f"accuracy.{name} must be a number >= 0, got {value!r}")


def _check_config(cfg: ScenarioConfig) -> None:
    """The scenario's own rules (ScenarioConfig.check), as the model's input error."""
    if not isinstance(cfg, ScenarioConfig):
        raise ModelInputError(f"config must be a ScenarioConfig, got {type(cfg).__name__}")
    try:
        cfg.check()
    except SettingError as err:
        raise ModelInputError(str(err)) from None

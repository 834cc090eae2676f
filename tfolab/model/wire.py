"""What travels on the link, and what the endpoints share with the event loop.

Rules:
- A Wire is the segment itself (payload bytes included, so tests can check
  that data is delivered in order and exactly once); the matching Segment
  event in the timeline has the same `event_id`.
- Env is the per-simulation context the endpoints use: the recorder, the
  clocks, the delayed-ACK rules, the counters and the loop's two callbacks
  (put a wire on the link; run an action at a later instant). It holds no
  global state; two simulations never share one.
- This module knows nothing of sockets: the callbacks take plain values and
  functions, so every module above can use Env without an import circle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tfolab.model.clock import COALESCED_TIMERS, LATE_TIMERS, JiffyClock, Link
from tfolab.model.delack import DelackRules
from tfolab.model.events import CookieInfo, Recorder, Side
from tfolab.model.packet_ends import CapturedEnds
from tfolab.model.page_frag import PageWrite, TaskFrag
from tfolab.model.path import Path
from tfolab.model.rcv_space import LINUX_DEFAULT, ReceiveMemory

Action = Callable[[int], None]  # called with the instant (ns) it runs at


@dataclass(frozen=True)
class Wire:
    sender: Side
    connection: int
    flags: tuple[str, ...]
    seq: int
    ack: int | None
    payload: bytes
    cookie: CookieInfo | None
    mss_option: int | None  # the MSS option of a SYN or SYN-ACK
    event_id: int
    what: str = "segment"
    # Its seq/ack belong to an earlier connection on the same 4-tuple (a TIME_WAIT
    # socket's ACK, or the RST answering one): see replay.py.
    stale: bool = False
    # the window it offers, in bytes: a SYN's or SYN-ACK's as sent, later ones scaled
    window: int = 0
    # a skb no sender keeps a clone of: cut from a GSO packet in software (rcv_space.py),
    # or a TIME_WAIT socket's ACK (replay.py)
    fresh: bool = False
    # the SYN's data resent in the skb tcp_send_syn_data built (rcv_space.syn_data_truesize)
    syn_data: bool = False
    # the sender's gso_size where the skb is longer than one segment (a resent SYN
    # data skb); segments tcp_add_backlog merged into this skb keep their largest
    # (backlog.py); 0: one segment, its payload
    gso_size: int = 0
    # the page fragments its payload holds (page_frag.py): one per sender page it spans
    frags: int = 1
    # when it left, and when the peer segment whose TSval its TSecr echoes left (the
    # sender's ts_recent as the handshake set it: the SYN, or the SYN-ACK, it accepted
    # first; None where the model does not follow it)
    sent_ns: int = 0
    echoes_ns: int | None = None

    @property
    def syn(self) -> bool:
        return "SYN" in self.flags

    @property
    def fin(self) -> bool:
        return "FIN" in self.flags

    @property
    def psh(self) -> bool:
        return "PSH" in self.flags


def _fresh_frags() -> dict[Side, TaskFrag]:
    """Two processes that have copied nothing yet (a test's Env)."""
    return {"client": TaskFrag(), "server": TaskFrag()}


@dataclass
class Env:
    recorder: Recorder
    clock: JiffyClock
    link: Link
    rules: DelackRules
    counters: dict[str, int]
    transmit: Callable[[Wire, int], None]  # put a wire on the link, arriving at t
    call_at: Callable[[int, Action], None]  # run the action at t (a timer's deadline)
    # run an application's next call at t, after the kernel's work at that instant
    call_app_at: Callable[[int, Action], None] | None = None
    wscale: int = 7  # the window scale both sides announce (window.initial_wscale)
    rmem: ReceiveMemory = LINUX_DEFAULT  # how this kernel turns receive memory into window
    # How late a real application may react to what woke it (scheduling): an
    # event the model puts at the same instant can lose a race to a timer tick.
    app_reaction_ns: int = 1_000_000
    # How much longer than 2D a real round trip may be (the delay backend's error on
    # each of its two packets): a socket's srtt lies in [model's, model's + this].
    rtt_excess_ns: int = 0
    # How much of that excess the senders' tcp_tso_autosize sees in this timeline: 0 in
    # the model's own; the comparison's other outcomes of the GSO-size race take part or
    # all of rtt_excess_ns (simulation.slower_pacings), which moves where packets end
    pacing_excess_ns: int = 0
    # where a capture shows this timeline's senders ended their GSO packets (the race's
    # outcome as the kernel took it, packet_ends.py; None: the model's own), and how many
    # of the model's own decisions it changed
    packet_ends: CapturedEnds | None = None
    packet_ends_moved: int = 0
    # Why this simulation left the model's domain while it ran (domain.py): a
    # state the scenario's settings alone cannot rule out, found on the way.
    beyond_domain: list[str] = field(default_factory=list)
    # The window model's sender (slow start, flow control, tcp_tso_should_defer, the
    # GSO-size race) runs for a client that reads each answer whole (read_whole);
    # elsewhere a grown congestion window still ends the domain.
    windows_model: bool = False
    # what the link loses (the `drop` setting)
    path: Path = field(default_factory=Path)
    # each side's process's page frag (current->task_frag), shared by its sockets
    # (page_frag.py); World puts each where the runner's warm-up exchange left it
    task_frags: dict[Side, TaskFrag] = field(default_factory=_fresh_frags)
    # the writes whose page a read skb still held in this timeline (the page race's
    # other outcome, simulation.held_pages), and the writes where that race could show
    # in a segment's fragments, in the order first seen (output._note_page_race)
    pages_held: frozenset[PageWrite] = frozenset()
    page_races: list[PageWrite] = field(default_factory=list)
    # where each connection's ticks and timer-wheel buckets sit, in quarter ticks
    # (clock_of; 0 unless given; LATE_TIMERS added: its timers' work comes the host's
    # reaction after their tick, timer_lateness_ns), and the connections where an
    # arrival met a level-1 timer inside its bucket, in the order first seen: a race
    # the bucket decides (simulation.other_buckets)
    wheel_offsets: dict[int, int] = field(default_factory=dict)
    wheel_races: list[int] = field(default_factory=list)
    # measured (a capture's retransmitted SYN against its timer's tick): how long after
    # its tick the client's SYN timer did its work for each retransmission, by
    # (connection, retransmissions before it), on top of the above (a CPU waking from a
    # long idle runs its timer softirq late; simulation.timers_late, syn_timer.py)
    syn_timers_late: dict[tuple[int, int], int] = field(default_factory=dict)
    # a drop landed on a connection after a wheel race was named on it: which packet
    # is the Nth may depend on the race (simulation.race_moves_a_drop)
    drop_after_race: bool = False
    _clocks: dict[int, tuple[JiffyClock, int]] = field(default_factory=dict)
    # run the action at t before anything else at t (a coalesced timer, timers_coalesce)
    call_first_at: Callable[[int, Action], None] = lambda t, action: None
    # the earliest arrival of a sender's segment on a connection in (start, end), if any
    next_arrival: Callable[[int, str, int, int], int | None] = lambda c, s, a, b: None

    def clock_of(self, connection: int) -> tuple[JiffyClock, int]:
        """The jiffies clock `connection` sees, and its wheel offset in ticks: its
        Env.wheel_offsets entry, in quarter ticks, moves the tick edges by the quarters
        and the wheel's buckets by the whole ticks. The real counter's value and where
        its edges fall against a connection's start are both unknown (clock.py)."""
        found = self._clocks.get(connection)
        if found is None:
            quarters = self.wheel_offsets.get(connection, 0) % LATE_TIMERS
            clock = self.clock
            if quarters % 4:
                shift = round(clock.tick_ns * (quarters % 4) / 4)
                clock = JiffyClock(clock.hz, (clock.phase_ns + shift) % round(clock.tick_ns))
            found = self._clocks[connection] = (clock, quarters // 4)
        return found

    def timer_lateness_ns(self, connection: int) -> int:
        """How long after its tick edge a timer of `connection` does its work: 0, or the
        host's reaction time where its Env.wheel_offsets entry is LATE_TIMERS or more.
        The timer softirq runs some microseconds after the tick that expired it, and an
        arrival D after what the timer sent can fall on either side of a later tick
        edge by them (simulation.other_buckets tries both)."""
        late = LATE_TIMERS <= self.wheel_offsets.get(connection, 0) < COALESCED_TIMERS
        return self.app_reaction_ns if late else 0

    def timers_coalesce(self, connection: int) -> bool:
        """Does a timer of `connection` due within a tick before one of its segments
        arrives run at that arrival, just before it (Env.wheel_offsets of
        COALESCED_TIMERS or more)? The timer softirq can run late, as late as the
        network's, and then both answer at once (synack_timer.py)."""
        return self.wheel_offsets.get(connection, 0) >= COALESCED_TIMERS

    def wheel_race(self, connection: int) -> None:
        """An arrival met one of `connection`'s timers inside its wheel bucket."""
        if connection not in self.wheel_races:
            self.wheel_races.append(connection)

    def count(self, name: str, counting: bool) -> None:
        if counting:
            self.counters[name] = self.counters.get(name, 0) + 1

"""The discrete-event loop: connections, the listener, the link and the timers.

Rules:
- One priority queue of (time ns, insertion number, action). Equal times run
  in insertion order, so the run is deterministic and causal: a segment sent
  at t with D = 0 is still processed after everything that happened before it.
  An application's turn at an instant waits for the kernel's work then; two
  applications woken at the same instant run oldest first, or, with
  `latest_app_first`, the other way round: without a delay the two processes
  race on two CPUs, and the comparison accepts either order (simulation.py).
- Lock points: a data segment received by a socket whose application is
  reading is an instant where that reader, woken on the other CPU, may take
  the socket before its peer sends more (at D = 0 the rest of the write and
  its next call; with a delay, what arrives at the same instant, which the
  delayer keeps microseconds apart). So is the handshake ACK that wakes
  accept() while the request arrives with it, and any data segment that
  reaches a socket accept() will return before the application accepted it:
  accept() holds the new socket (inet_accept: lock_sock, graft,
  release_sock), and reads it right after; and the SYN-ACK that wakes
  a blocked connect() or sendto() while the server's answer to the SYN's
  data arrives with it, and each segment of that answer until the woken
  call has run: the client holds its socket from inet_wait_for_connect's
  lock_sock until the call's release_sock. Each is
  named by its connection, the reader's side and the stream position of that
  segment's end (`lock_points`); the ones in
  `lock_early` are taken there: the reader copies what is queued,
  the segments that arrive at this instant wait in its backlog, and
  release_sock runs after everything else at the instant (backlog.py), or
  before a later segment arrives where that segment's release point is in
  `lock_early` too (the reader's copy was done first), or as it arrives where
  its detach point is (__release_sock had already taken the backlog's list:
  the segment is merged into nothing, and processed in the same release). The
  others keep the default: the reader runs after the kernel's work and the
  waker's next calls at that instant. Which one the kernel took is the
  host's scheduling; the comparison looks for the choices the capture shows
  (a named race per lock point, counted). A segment that would join the
  backlog's last skb is a "split" point too: taken, the owner's release had
  already taken that list, so the segment starts a new one, processed next
  (backlog.py). Where the SYN-ACK woke a connect() or sendto(), each of those
  points is also a "returned" one: taken, the call had returned and the
  client's read() had copied what was queued (or, with nothing queued, was
  waiting in sk_wait_data) before the next segment arrived. Where the echo
  server sets TCP_QUICKACK before every recv(), each server take point is
  also a "quickack" one: taken, the setsockopt had run and the recv() had
  not, so the next segment finds no owner (`_quickacked`).
- Time never goes back: the loop refuses an action scheduled in the past.
- Segments are delivered exactly D after they leave (the link); timers are
  the deadlines the endpoints report (Env.call_at), checked lazily: a stale
  deadline is ignored by the endpoint.
- Iterations: rr on fresh connections runs one connection per iteration, the
  next one starting when the client closes the previous one (the runner calls
  the client again at once); wwr, or rr on a kept connection, runs every round
  on one connection set up in iteration 0. cookie_cache "warm" adds one
  unmeasured connection (iteration 0) before iteration 1; its counters are not
  counted, as the runner reads the counters after it. The runner's own warm-up
  exchange before all of them is not simulated; only the pages it leaves each
  process are (page_frag.after_warm_up).
- `pages_held`: the writes whose page a read skb still held (page_frag.py), the
  other outcome of that race; the writes where it could show are `env.page_races`.
- `packet_ends`: where a capture shows the senders' GSO packets ended (packet_ends.py),
  the GSO-size race's outcome as the kernel took it; None: the model's own.
- `wheel_offsets`: (connection, ticks) where that connection's timer-wheel
  buckets sit (clock.py); the connections where an arrival met a timer inside
  its bucket are `env.wheel_races`.
- replay_syn: the last iteration is the attacker's replay of iteration 1's SYN
  (replay.py), sent REPLAY_GAP after the previous client's close + 3D; its
  connection's client side is connection 1's TIME_WAIT socket (TimeWaitPeer).
- `app` counts what the server application did in the measured part
  (connections accepted, request lines received), as the echo server reports.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from functools import partial
from typing import Literal

from tfolab.model import backlog, retransmit
from tfolab.model.apps import ClientPhase, ClientScript, ServerScript
from tfolab.model.clock import JiffyClock, Link, ms_to_ns
from tfolab.model.delack import DelackRules
from tfolab.model.domain import TIMERS_ISSUE
from tfolab.model.endpoint import TcpEndpoint
from tfolab.model.events import Recorder, Side
from tfolab.model.fastopen import CookieCache, FastOpenServer, server_decide
from tfolab.model.packet_ends import CapturedEnds
from tfolab.model.page_frag import WARM_UP_REQUEST_BYTES, PageWrite, after_warm_up
from tfolab.model.path import Path
from tfolab.model.predict import Headline
from tfolab.model.rcv_space import LINUX_DEFAULT, ReceiveMemory
from tfolab.model.replay import TimeWaitPeer, send_replay
from tfolab.model.scenario import REPLAY_GAP_MS, ScenarioConfig
from tfolab.model.state import TcpState
from tfolab.model.window import DEFAULT_RECEIVE_SPACE, initial_wscale
from tfolab.model.wire import Action, Env, Wire

MAX_ACTIONS = 2_000_000
# the order of actions at one instant: a coalesced timer's first (Env.call_first_at)
FIRST, KERNEL, APPLICATION, RELEASE = -1, 0, 1, 2
ReaderChoice = tuple[int, str, int, str]  # LockPoint.key
# At D = 0, who runs first once a replayed SYN made a child (replay.py): the SYN's
# softirq chain ends TIME_WAIT first; or the server application answers between the
# SYN-ACK and the RST; or it answers first and its send() holds the child while
# TIME_WAIT's ACKs arrive.
ReplayOrder = Literal["chain-first", "app-first", "app-holds"]
REPLAY_ORDERS: tuple[ReplayOrder, ...] = ("chain-first", "app-first", "app-holds")


LockKind = Literal[
    "take",
    "release",
    "detach",
    "stopped",
    "cleanup",
    "split",
    "returned",
    "overtaken",
    "quickack",
    "ahead",
    "accept",
]


@dataclass(frozen=True)
class LockPoint:
    """An instant where a woken reader may take its socket before its peer sends more
    ("take"), or, holding it, let it go before the next segment arrives ("release"), or
    be processing its backlog already when it arrives ("detach"), or, a blocking read(),
    have ended its copy loop already, its tcp_cleanup_rbuf run before the segment came
    ("stopped") or still to run, with the segment charged to the backlog ("cleanup"; for
    a MSG_DONTWAIT recv() still copying: its tcp_cleanup_rbuf runs once this segment,
    and any before it, joined the backlog); or
    where the segment would join the backlog's last skb, the owner's release had taken
    that list already and is still busy with it ("split", backlog.py); or where a
    connect() or sendto() the SYN-ACK woke had returned, and the client's read() had
    copied what was queued, before the next segment arrived ("returned"); or, without
    a delay, where the client's first data overtook its handshake ACK on the way to
    the server ("overtaken", named by the server's side: not a reader's lock, but a
    race of the same kind, found and counted the same way); or where the echo server,
    woken, had run its setsockopt(TCP_QUICKACK) but not yet its recv() when the next
    segment came ("quickack": that segment finds no owner, and its ACK counts what
    is still unread); or, without a delay, where a Fast Open child's answer reached
    the client before its SYN-ACK did ("ahead", named by the client's side, the mirror
    of "overtaken"); or where the server, woken to accept() a socket with data queued
    already, holds it in accept() itself rather than in the recv() after it ("accept":
    what arrives then is processed with the queued data still unread):
    named by the connection, the reader's side and where that segment ends in its
    stream, so the same point keeps its name whatever other points were taken."""

    connection: int
    side: Side  # the reader's
    end: int  # where the data segment just received (or arriving) ends
    kind: LockKind = "take"
    event_id: int = 0  # that segment (in this timeline)

    @property
    def key(self) -> ReaderChoice:
        return (self.connection, self.side, self.end, self.kind)


class ModelStuck(RuntimeError):
    """The simulated scripts did not finish: a bug in the model, never bad input."""


@dataclass
class Connection:
    number: int
    client: TcpEndpoint
    script: ClientScript
    server: TcpEndpoint | None = None
    server_script: ServerScript | None = None
    counting: bool = True
    replay: TimeWaitPeer | None = None  # the replayed SYN's connection: the client's host

    def endpoint(self, side: Side) -> TcpEndpoint:
        """The connection's socket on `side` (the server's exists once its SYN arrived)."""
        endpoint = self.client if side == "client" else self.server
        assert endpoint is not None
        return endpoint


class World:
    def __init__(
        self,
        config: ScenarioConfig,
        *,
        one_way_delay_ns: int,
        iterations: int,
        hz: int,
        tick_phase_ns: int,
        receive_space_bytes: int = DEFAULT_RECEIVE_SPACE,
        receive_memory: ReceiveMemory = LINUX_DEFAULT,
        app_reaction_ns: int = 1_000_000,
        rtt_excess_ns: int = 0,
        pacing_excess_ns: int = 0,
        latest_app_first: bool = False,
        lock_early: frozenset[ReaderChoice] = frozenset(),
        replay_order: ReplayOrder = "chain-first",
        pages_held: frozenset[PageWrite] = frozenset(),
        wheel_offsets: tuple[tuple[int, int], ...] = (),
        packet_ends: CapturedEnds | None = None,
        timers_late: tuple[tuple[int, int, int], ...] = (),
        slow_wakes: tuple[tuple[int, Side, int, int], ...] = (),
    ) -> None:
        self.config = config
        # measured: (connection, side, turn) -> how long after what woke it that
        # application's turn comes (its Nth turn on that connection, counted from 0)
        self.slow_wakes = {(c, side, n): ns for c, side, n, ns in slow_wakes}
        # each application turn as it ran: (connection, side, the segment it answered)
        self.turns: list[tuple[int, Side, int]] = []
        self._turn_count: dict[tuple[int, Side], int] = {}
        self._waking_until: dict[int, int] = {}  # id(script) -> its slow turn's time
        self.lock_early = lock_early
        self.lock_points: list[LockPoint] = []
        self.iterations = iterations
        # Applications woken at the same instant run oldest first, or (the other
        # way a D = 0 race can go) the latest woken first.
        self.latest_app_first = latest_app_first
        self.replay_order = replay_order
        self.recorder = Recorder()
        self.counters: dict[str, int] = {}
        self.app: dict[str, int] = {"accepted": 0, "requests": 0}
        self.env = Env(
            recorder=self.recorder,
            clock=JiffyClock(hz, tick_phase_ns),
            link=Link(one_way_delay_ns),
            rules=DelackRules(hz, config.pingpong_thresh),
            counters=self.counters,
            transmit=self._transmit,
            call_at=self._at,
            call_first_at=partial(self._at, first=True),
            next_arrival=self._next_arrival,
            call_app_at=self._next_call,
            wscale=initial_wscale(receive_space_bytes),
            rmem=receive_memory,
            app_reaction_ns=app_reaction_ns,
            rtt_excess_ns=rtt_excess_ns,
            pacing_excess_ns=pacing_excess_ns,
            windows_model=config.read_whole,
            path=Path(config.drop, config.middlebox),
            task_frags={
                "client": after_warm_up(WARM_UP_REQUEST_BYTES),
                "server": after_warm_up(config.answer_bytes(WARM_UP_REQUEST_BYTES)),
            },
            pages_held=pages_held,
            wheel_offsets=dict(wheel_offsets),
            packet_ends=packet_ends,
            syn_timers_late={(c, k): ns for c, k, ns in timers_late},
        )
        self.cache = CookieCache()
        self.fastopen = FastOpenServer(
            sysctl=config.fastopen_sysctl,
            qlen=config.server_fastopen_qlen,
            queue_full=config.fastopen_queue_full,
            counters=self.counters,
        )
        self.connections: dict[int, Connection] = {}
        self.headlines: dict[int, Headline] = {}
        self.wires: list[tuple[int, Wire]] = []  # (arrival ns, wire), for tests
        # (connection, sender, arrival, sending action) -> segments still to arrive
        self._in_flight: dict[tuple[int, str, int, int], int] = {}
        self.now = 0
        # (time, 1 for an application's turn else 0, insertion number, action)
        self._queue: list[tuple[int, int, int, Action]] = []
        self._counter = 0
        self._acting = 0  # the running action's number: segments it sends form one burst
        self._plan: list[list[int]] = []
        self._woken: set[tuple[int, int]] = set()  # (script, instant) with a turn pending
        # (connection, sender) -> a segment held back while that sender's data overtakes
        # it: the client's handshake ACK ("overtaken"), the server's SYN-ACK ("ahead")
        self._held: dict[tuple[int, str], tuple[Wire, tuple[int, str, int, int]]] = {}
        # (connection, side) whose client took its socket at a lock point in a blocking
        # read(), connect() or sendto(): the call is under way, and the release that ends
        # it wakes the application (_release); the echo server's recv() does not block
        self._reading: set[tuple[int, Side]] = set()

    # ------------------------------------------------------------ scheduling
    def _at(
        self,
        t: int,
        action: Action,
        *,
        application: bool = False,
        release: bool = False,
        first: bool = False,
    ) -> None:
        """Run `action` at t; an application's turn waits for the kernel's work at that
        instant, a release_sock for everything else at it."""
        if t < self.now:
            raise ModelStuck(f"an action was scheduled in the past ({t} < {self.now} ns)")
        self._counter += 1
        order = -self._counter if application and self.latest_app_first else self._counter
        kind = FIRST if first else RELEASE if release else APPLICATION if application else KERNEL
        heapq.heappush(self._queue, (t, kind, order, action))

    def _next_call(self, t: int, action: Action) -> None:
        """An application's next system call, at t after the kernel's work at that instant.

        It continues the action that scheduled it: segments it sends belong to
        the same burst (they arrive together after a delay, microseconds apart).
        """
        acting = self._acting

        def call(now: int) -> None:
            self._acting = acting
            action(now)

        self._at(t, call, application=True)

    def _transmit(self, wire: Wire, arrival: int) -> None:
        self.wires.append((arrival, wire))
        burst = (wire.connection, wire.sender, arrival, self._acting)
        self._in_flight[burst] = self._in_flight.get(burst, 0) + 1
        self._at(arrival, lambda now: self._deliver(now, wire, burst))

    def _next_arrival(self, connection: int, sender: str, start: int, end: int) -> int | None:
        """The earliest arrival of `sender`'s segments on `connection` in (start, end)."""
        times = [
            arrival
            for number, side, arrival, _ in self._in_flight
            if (number, side) == (connection, sender) and start < arrival < end
        ]
        return min(times, default=None)

    def _arriving(self, connection: int, sender: str, now: int) -> bool:
        """Are more of `sender`'s segments on `connection` still to arrive at `now`?"""
        return any(
            (number, side, arrival) == (connection, sender, now)
            for number, side, arrival, _ in self._in_flight
        )

    def _last_of_burst(self, burst: tuple[int, str, int, int]) -> bool:
        """True when no other segment of this burst is still to arrive.

        Segments one action sends back to back arrive together, microseconds apart;
        by default the application the first one wakes runs after all of them are
        queued, so it reads the burst at once (the other outcomes are lock points).
        """
        left = self._in_flight[burst] - 1
        if left:
            self._in_flight[burst] = left
        else:
            del self._in_flight[burst]
        return left == 0

    def run(self) -> None:
        cfg = self.config
        plan: list[list[int]] = []
        if cfg.cookie_cache == "warm":
            plan.append([0])
        if cfg.fresh_connection_each_iteration:
            plan += [[i] for i in range(1, self.iterations + 1)]
            if cfg.replay_syn:
                plan[-1] = [-self.iterations]  # the replay, not a client connection
        else:
            plan.append(list(range(1, self.iterations + 1)))
        if cfg.cookie_cache == "keep":
            self.recorder.note(
                0,
                iteration=0,
                connection=0,
                side="client",
                text="cookie_cache keep: the model cannot know what an earlier scenario "
                "left in the cache; it starts from an empty one",
            )
        self._plan = plan
        self._at(0, lambda now: self._start_connection(now, None))
        steps = 0
        while self._queue:
            t, _, self._acting, action = heapq.heappop(self._queue)
            self.now = t
            action(t)
            steps += 1
            if steps > MAX_ACTIONS:
                raise ModelStuck("the simulation did not settle")
        unfinished = [c.number for c in self.connections.values() if not c.script.done]
        if unfinished or self._plan:
            raise ModelStuck(f"connections {unfinished} never finished their script")

    # ------------------------------------------------------------ connections
    def _start_connection(self, now: int, caused_by: int | None) -> None:
        if not self._plan:
            return
        rounds = self._plan.pop(0)
        if rounds[0] < 0:
            gap = 3 * self.env.link.one_way_delay_ns + ms_to_ns(REPLAY_GAP_MS)
            self._at(now + gap, lambda t: self._replay(t, -rounds[0], caused_by))
            return
        cfg = self.config
        number = len(self.connections) + 1
        warmup = rounds == [0]
        first = rounds[0]
        setup_iteration = 0 if (cfg.pattern == "wwr" and len(rounds) > 1) else first
        if cfg.rotate_key_before_iteration == first and first > 0:
            self.fastopen.rotate_key()
            self.recorder.note(
                now,
                iteration=first,
                connection=number,
                side="server",
                text=f"the server's TFO key changes before iteration {first}: "
                "cookies made with the old key no longer validate",
            )
        client = TcpEndpoint(
            self.env,
            side="client",
            connection=number,
            iteration=setup_iteration,
            mtu=cfg.mtu,
            nodelay=cfg.nodelay,
            counting=not warmup,
        )
        if warmup:
            self.recorder.note(
                now,
                iteration=0,
                connection=number,
                side="client",
                text="warm-up connection (not measured): it asks for the server's TFO cookie",
            )
        script = ClientScript(
            ep=client,
            config=cfg,
            cache=self.cache,
            rounds=rounds,
            headlines=self.headlines if not warmup else {},
            on_done=self._connection_done,
            on_round=partial(self._round_started, number),
        )
        self.connections[number] = Connection(number, client, script, counting=not warmup)
        script.start(now, caused_by)

    def _round_started(self, number: int, iteration: int) -> None:
        conn = self.connections.get(number)
        if conn is not None and conn.server is not None:
            conn.server.sock.iteration = iteration

    def _connection_done(self, now: int, caused_by: int | None) -> None:
        self._start_connection(now, caused_by)

    def _replay(self, now: int, iteration: int, caused_by: int | None) -> None:
        """The attacker resends iteration 1's SYN (replay.py)."""
        first = next(c for c in self.connections.values() if c.script.rounds == [1])
        original = next(
            w
            for _, w in self.wires
            if w.connection == first.number and w.syn and w.sender == "client"
        )
        number = len(self.connections) + 1
        start = self.recorder.app(
            now,
            iteration=iteration,
            connection=number,
            side="client",
            call="replay",
            detail="raw socket: iteration 1's SYN",
            explanation=(
                "an attacker who captured iteration 1's SYN sends it again from a raw socket; "
                "connection 1 is over on the server, which holds no socket for it any more"
            ),
            cause="the attacker",
            caused_by=caused_by,
        ).id
        headline = self.headlines.setdefault(iteration, Headline())
        headline.start_id = start
        peer = TimeWaitPeer(
            first.client.sock,
            number,
            iteration,
            headline=headline,
            synack_waits=self.replay_order == "app-holds",
        )
        self.connections[number] = Connection(number, first.client, first.script, replay=peer)
        send_replay(
            self.env, now, original, connection=number, iteration=iteration, caused_by=start
        )

    # ------------------------------------------------------------ delivery
    def _deliver(
        self, now: int, wire: Wire, burst: tuple[int, str, int, int], *, held: bool = False
    ) -> None:
        """A segment arrives (`held`: a handshake ACK that the first data overtook)."""
        conn = self.connections[wire.connection]
        if not held and (
            self._overtaken(now, conn, wire, burst) or self._ahead(now, conn, wire, burst)
        ):
            return
        self._receive(now, conn, wire, burst)
        if wire.payload:
            self._release_held(now, conn.number, wire.sender)

    def _overtaken(
        self, now: int, conn: Connection, wire: Wire, burst: tuple[int, str, int, int]
    ) -> bool:
        """Without a delay, does the client's first data overtake its handshake ACK (an
        "overtaken" point, named at that ACK; Linux 6.1 and 6.18)?

        The ACK leaves from the softirq that took the SYN-ACK, on one CPU; the data from
        the woken application's write(), perhaps on the other; lo queues each on the
        backlog of the CPU that sent it (loopback_xmit -> __netif_rx ->
        enqueue_to_backlog(smp_processor_id())). The data, which acknowledges the
        SYN-ACK too, may reach the request socket first and complete the handshake
        itself (tcp_check_req, tcp_child_process); the ACK, looked up again (req_stolen,
        or once the child is hashed), then reaches an established socket that has
        acknowledged the data already: out of window (receive.py). Taken, the ACK waits
        until the client's next data segment at this instant has been received, or, if
        none comes, until everything else at the instant has run."""
        server = conn.server
        if (
            self.env.link.one_way_delay_ns
            or wire.sender != "client"
            or wire.payload
            or wire.syn
            or wire.fin
            or "RST" in wire.flags
            or conn.replay is not None
            or server is None
            or server.sock.state is not TcpState.SYN_RECV
            or not conn.script.connect_returns  # the woken call has not run yet...
            or not conn.script.sends_on_return  # ...and will send data as it returns
        ):
            return False
        point = LockPoint(conn.number, "server", server.sock.rcv_nxt, "overtaken", wire.event_id)
        if not self._taken(point):
            return False
        self._hold_back(now, conn, wire, burst)
        self._race_note(
            now,
            conn,
            "server",
            "the client's handshake ACK left from its softirq on one CPU and its "
            "first data from its write() on the other; lo queued each on its own CPU's "
            "backlog, and the data reaches the server first: it completes the handshake "
            "itself (tcp_check_req), and the ACK comes after it (a race)",
            "two CPUs' backlogs",
            wire.event_id,
        )
        return True

    def _ahead(
        self, now: int, conn: Connection, wire: Wire, burst: tuple[int, str, int, int]
    ) -> bool:
        """Without a delay, does a Fast Open child's answer reach the client before its
        SYN-ACK (an "ahead" point, named at that SYN-ACK; Linux 6.1 and 6.18)?

        The SYN-ACK leaves from the softirq that took the SYN, on one CPU; the answer
        from the server application's write(), perhaps on the other; lo queues each on
        the backlog of the CPU that sent it (enqueue_to_backlog), the mirror of
        `_overtaken`. The answer then finds the client in SYN_SENT, which drops it
        (tcp_rcv_synsent_state_process), and the server's retransmission timer sends it
        again (retransmit.py). Taken, the SYN-ACK waits until the server's answer at
        this instant has arrived, or, if none comes, until everything else at the
        instant has run. Seen in CI's VM (6.1, VM fuzz seed 5252): the answer again
        208 ms after the client's ACK of the SYN-ACK."""
        server = conn.server
        if (
            self.env.link.one_way_delay_ns
            or wire.sender != "server"
            or not wire.syn
            or (wire.ack or 0) <= 1  # the SYN's data acknowledged: the child has the request
            or conn.replay is not None
            or server is None
            or conn.server_script is None
            or conn.server_script.closed
            or not conn.server_script.acceptable
            or b"\n" not in server.sock.rcv_buf  # the server answers at this instant
            or conn.client.sock.state is not TcpState.SYN_SENT
        ):
            return False
        point = LockPoint(conn.number, "client", wire.seq + 1, "ahead", wire.event_id)
        taken = self._taken(point)
        if self._answer_unfollowable(conn, server) or not taken:
            return False
        self._hold_back(now, conn, wire, burst)
        self._race_note(
            now,
            conn,
            "client",
            "the server's SYN-ACK left from its softirq on one CPU and its answer from "
            "its write() on the other; lo queued each on its own CPU's backlog, and the "
            "answer reaches the client first, still in SYN_SENT (a race)",
            "two CPUs' backlogs",
            wire.event_id,
        )
        return True

    def _hold_back(
        self, now: int, conn: Connection, wire: Wire, burst: tuple[int, str, int, int]
    ) -> None:
        """Hold `wire` back at a taken "overtaken" or "ahead" point: it arrives right
        after its sender's next data segment at this instant, or, if none comes, once
        everything else at the instant has run."""
        self._held[(conn.number, wire.sender)] = (wire, burst)
        self._at(now, lambda t: self._release_held(t, conn.number, wire.sender), release=True)

    def _release_held(self, now: int, connection: int, sender: str) -> None:
        """Deliver the segment `_hold_back` holds for this sender, if it still does."""
        held = self._held.pop((connection, sender), None)
        if held is not None:
            self._deliver(now, *held, held=True)

    def _answer_unfollowable(self, conn: Connection, server: TcpEndpoint) -> bool:
        """Where the answer that may be "ahead" is longer than one segment, the model cannot
        follow the retransmissions that race leads to: the scenario leaves the domain."""
        line = server.sock.rcv_buf.index(b"\n") + 1
        cfg = self.config
        answer = cfg.answer_bytes(line) if cfg.response_bytes else line
        if answer <= server.sock.mss_cache:
            return False
        self.env.beyond_domain.append(
            f"connection {conn.number}: without a delay the Fast Open server's answer "
            f"({answer} bytes, more than one segment of {server.sock.mss_cache}) may reach "
            f"the client before its SYN-ACK, which drops it in SYN_SENT "
            f"(tcp_rcv_synsent_state_process); its retransmission after the timer, from a "
            f"congestion window of one (tcp_enter_loss), {TIMERS_ISSUE}; the model follows "
            f"that race for an answer of one segment"
        )
        return True

    def _receive(
        self, now: int, conn: Connection, wire: Wire, burst: tuple[int, str, int, int]
    ) -> None:
        last = self._last_of_burst(burst)
        if wire.sender == "server" and conn.replay is not None:
            if wire.payload and self.replay_order == "app-holds":
                self._answer_holds(now, conn, wire)
            conn.replay.receive(now, wire)
            return
        receiver = conn.client if wire.sender == "server" else conn.server
        owned = receiver is not None and receiver.sock.owner is not None
        if owned and wire.stale:
            assert receiver is not None
            backlog.add(receiver.sock, now, wire)  # another connection's ACK: no reader race
            return
        if owned and not self._releases(now, conn, wire):
            return
        if receiver is not None:
            receiver.sock.more_in_burst = not last
        if wire.sender == "server":
            before = conn.client.sock.state
            if before is TcpState.SYN_SENT and not wire.syn:
                self._dropped_in_syn_sent(now, conn, wire)
                return
            conn.client.receive(now, wire)
            # a reader with SO_RCVLOWAT above what is queued sleeps on in poll()
            reading = conn.script.phase is ClientPhase.READING and (
                not conn.script.config.read_whole or conn.client.sock.epollin_ready
            )
            # the SYN-ACK wakes a blocked connect() or sendto(), which takes the socket;
            # only one that acknowledged the SYN's data may have the answer right behind it,
            # and the call, woken, may take it at any segment of that answer; or one with
            # another SYN-ACK right behind it (the SYN-ACK timer's and tcp_check_req's, a
            # lost SYN-ACK's two repairs at D = 0): the woken call may write its request
            # before that one draws its challenge ACK
            answered = (
                (wire.syn and (wire.ack or 0) > 1)
                or bool(wire.payload)
                or (wire.syn and self._arriving(conn.number, "server", now))
            )
            connecting = answered and conn.script.connect_returns
            if (reading or connecting) and self._takes(
                now, conn, "client", wire, handshake=connecting
            ):
                return
            if last and _wakes(wire, before, conn.client.sock.state):
                self._wake(now, conn.script, conn.number, "client", wire.event_id)
            return
        if conn.server is None:
            if wire.syn:
                self._listener_syn(now, conn, wire)
            return
        before = conn.server.sock.state
        conn.server.receive(now, wire)
        if before is TcpState.SYN_RECV and conn.server.sock.state is not before:
            retransmit.rearm_after_synack(conn.server.sock, now, wire.event_id)
        assert conn.server_script is not None
        woken = _wakes(wire, before, conn.server.sock.state)
        if (
            before is TcpState.SYN_RECV
            and woken
            and not wire.payload  # data that completes the handshake is the burst's first
            and self._arriving(conn.number, "client", now)
        ):
            # sk_state_change woke the server while the client's next segments still arrive
            conn.server.sock.burst.wake()
        script = conn.server_script
        # reading: accepted, or woken to accept: by this burst's handshake ACK (burst.py),
        # or as a data segment reaches a socket accept() will return (the segment that
        # completed the handshake included: tcp_child_process queues it, and the
        # listener's sk_data_ready wakes accept()), which accept() may hold as it arrives
        woken_to_accept = (conn.server.sock.burst.woken or bool(wire.payload)) and script.acceptable
        reading = (script.accepted or woken_to_accept) and not script.closed
        if (
            reading
            and not wire.stale
            and self._takes(now, conn, "server", wire, handshake=not script.accepted)
        ):
            return
        if last and woken and not wire.stale:  # another connection's ACK gives it nothing
            self._wake(now, script, conn.number, "server", wire.event_id)

    def _dropped_in_syn_sent(self, now: int, conn: Connection, wire: Wire) -> None:
        """tcp_rcv_synsent_state_process: in SYN_SENT a segment without SYN is dropped
        ("fifth, if neither of the SYN or RST bits is set then drop the segment"); data
        dropped there is sent again by the server's retransmission timer."""
        conn.client.sock.note(
            now,
            f"{wire.what} dropped: the client is still in SYN_SENT, waiting for the "
            "SYN-ACK, and tcp_rcv_synsent_state_process drops a segment without SYN",
            wire.event_id,
            "segment arrived in SYN_SENT",
        )
        if wire.payload and conn.server is not None:
            retransmit.dropped_by_peer(conn.server.sock, wire)

    def _takes(
        self,
        now: int,
        conn: Connection,
        side: Side,
        wire: Wire,
        *,
        handshake: bool = False,
    ) -> bool:
        """At a lock point (data reached a reading application, or a `handshake` segment
        woke a blocked accept() or connect() while its peer's data arrives with it; with a
        delay only where more of the sender's segments arrive at this instant): does the
        reader take its socket here? If so it copies what is queued now (or accept() or
        connect() holds it), and releases the socket once everything else at this instant
        has run (backlog.py). A client's connect() or sendto() not taken here may have
        returned instead (`_returned`): True as well, the client has run."""
        if not (wire.payload or handshake) or conn.replay is not None:
            return False
        if self.env.link.one_way_delay_ns and not self._arriving(conn.number, wire.sender, now):
            return False  # with a delay only what arrives with it can follow at once
        point = LockPoint(
            conn.number, side, conn.endpoint(side).sock.rcv_nxt, "take", wire.event_id
        )
        taken = self._taken(point)
        script = conn.script if side == "client" else conn.server_script
        assert script is not None
        if not taken:
            if side == "server" and not handshake:
                self._quickacked(now, conn, wire)
            return handshake and side == "client" and self._returned(now, conn, wire)
        # the client's read() blocks; the echo server's recv() is MSG_DONTWAIT
        accept_holds = side == "server" and handshake and self._accept_holds(conn, wire)
        if accept_holds:
            assert conn.server_script is not None
            conn.server_script.hold_in_accept(now, wire.event_id)
        else:
            rcv_nxt = conn.endpoint(side).sock.rcv_nxt
            script.take(now, wire.event_id, self._cleanup_until(conn.number, side, rcv_nxt))
        if side == "client" or accept_holds:  # blocking: the application goes on once it returns
            self._reading.add((conn.number, side))
        self._at(now, lambda t: self._release(t, conn, side, wire.event_id), release=True)
        return True

    def _accept_holds(self, conn: Connection, wire: Wire) -> bool:
        """The server, woken to accept() while the client's segments arrive, takes the new
        socket with data queued already: is the holder accept() itself (inet_accept:
        lock_sock, __inet_accept, release_sock), not the recv() after it (an "accept"
        point)? Then release_sock processes what arrived meanwhile while the queued data
        is still unread, so tcp_grow_window has that much less room (6.1 and 6.18; seen
        on 6.18 as ACKs of 2183 and 3858 both at window 69, where the recv() gives 70)."""
        server = conn.server
        assert server is not None
        if not server.sock.rcv_buf:
            return False  # with nothing queued accept() holds it anyway (ServerScript.take)
        return self._taken(
            LockPoint(conn.number, "server", server.sock.rcv_nxt, "accept", wire.event_id)
        )

    def _returned(self, now: int, conn: Connection, wire: Wire) -> bool:
        """The SYN-ACK woke a blocked connect() or sendto() while the server's answer
        arrives right behind it: did the call return, and the client's read() copy what
        was queued (or, with nothing queued, wait in sk_wait_data), before the answer's
        next segment came (a "returned" point)? That segment then finds a reader, not
        an owner."""
        point = LockPoint(
            conn.number, "client", conn.client.sock.rcv_nxt, "returned", wire.event_id
        )
        if not self._taken(point):
            return False
        self._race_note(
            now,
            conn,
            "client",
            "the client's call, woken by the SYN-ACK, has returned and its read() "
            "has copied what was queued (with nothing queued it waits in sk_wait_data) "
            "before the server's next segment arrives, so that segment finds a reader, "
            "not an owner (a race: the client runs while the server's segments arrive)",
            "the client's call on the other CPU",
            wire.event_id,
        )
        conn.script.wake(now, wire.event_id)
        return True

    def _quickacked(self, now: int, conn: Connection, wire: Wire) -> None:
        """A segment woke the echo server while more of the burst arrives, and its recv()
        did not take the socket here: had its setsockopt(TCP_QUICKACK), the call before
        every recv(), run already (a "quickack" point)? Then __tcp_sock_set_quickack's
        tcp_cleanup_rbuf(sk, 1) ACKs what is queued now, and the segments still arriving
        find no owner: received in the softirq, out of pingpong mode, and ACKed with the
        bytes the recv() has not copied yet counted (net/ipv4/tcp.c, tcp_input.c; seen on
        6.18 as ACK 22705 window 98, ACK 22714 window 98 where the recv() first gives 100)."""
        script, server = conn.server_script, conn.server
        assert script is not None and server is not None
        if not script.config.server_quickack or script.quickack_set:
            return
        point = LockPoint(conn.number, "server", server.sock.rcv_nxt, "quickack", wire.event_id)
        if not self._taken(point):
            return
        self._race_note(
            now,
            conn,
            "server",
            "the server, woken by this segment, runs its setsockopt(TCP_QUICKACK) "
            "before the rest of the burst arrives, and its recv() after (a race: the "
            "server runs on the other CPU while the client's segments still arrive)",
            "the server's epoll loop on the other CPU",
            wire.event_id,
        )
        script.set_quickack_early(now, wire.event_id)

    def _cleanup_until(self, connection: int, side: Side, rcv_nxt: int) -> int | None:
        """The first "cleanup" point taken for this reader past `rcv_nxt`, unless a later
        take comes first (that point is a later hold's): where a recv() taking the
        socket now runs its tcp_cleanup_rbuf (`_releases`); None: at once."""
        mine = [(end, kind) for c, s, end, kind in self.lock_early if (c, s) == (connection, side)]
        ends = sorted(end for end, kind in mine if kind == "cleanup" and end > rcv_nxt)
        if not ends or any(rcv_nxt < end < ends[0] for end, kind in mine if kind == "take"):
            return None
        return ends[0]

    def _taken(self, point: LockPoint) -> bool:
        """Name a lock point (every one offered is a named race); is it taken here?"""
        self.lock_points.append(point)
        return point.key in self.lock_early

    def _race_note(
        self, now: int, conn: Connection, side: Side, text: str, cause: str, caused_by: int
    ) -> None:
        """The note a taken race point leaves on its side's timeline."""
        self.recorder.note(
            now,
            iteration=conn.endpoint(side).sock.iteration,
            connection=conn.number,
            side=side,
            text=text,
            cause=cause,
            caused_by=caused_by,
        )

    def _releases(self, now: int, conn: Connection, wire: Wire) -> bool:
        """A segment reaches a socket its reader holds. Has the reader let it go already
        (a "release" point: release_sock runs now and the segment is received as usual,
        True)? Else it waits in the backlog (False); where its "detach" point is taken,
        __release_sock had already taken the backlog's list, so it is merged into nothing
        and is processed in the same release, right away. Where a blocking read()'s
        "stopped" point is taken, its copy loop had found the queue and the backlog empty
        and ended: its tcp_cleanup_rbuf runs first, for what it copied, and the segment
        waits for release_sock (as for a MSG_DONTWAIT recv()); at its "cleanup" point the
        loop had ended the same way, but the segment joins the backlog before
        tcp_cleanup_rbuf runs, so that ACK's window counts it (sk_backlog.len)."""
        side: Side = "client" if wire.sender == "server" else "server"
        end = wire.seq + len(wire.payload)
        released = LockPoint(conn.number, side, end, "release", wire.event_id)
        detached = LockPoint(conn.number, side, end, "detach", wire.event_id)
        self.lock_points += [released, detached]
        if released.key in self.lock_early:
            self._release(now, conn, side, wire.event_id)
            return True
        receiver = conn.endpoint(side)
        owner = receiver.sock.owner
        cleanup_after: int | None = None  # the stopped read's note, at a "cleanup" point
        recv_cleanup = False  # a recv()'s late tcp_cleanup_rbuf runs after this segment
        if owner is not None and owner.blocking:
            stopped = LockPoint(conn.number, side, end, "stopped", wire.event_id)
            if self._taken(stopped):
                receiver.stop_copying(now)
            elif self._taken(LockPoint(conn.number, side, end, "cleanup", wire.event_id)):
                cleanup_after = receiver.stop_copying(now, cleanup_first=False)
        elif owner is not None and owner.recv and not owner.processing:
            self._taken(LockPoint(conn.number, side, end, "cleanup", wire.event_id))
            if owner.cleanup_until is not None and end > owner.cleanup_until:
                receiver.late_cleanup(now)  # it ran before this segment came
            recv_cleanup = owner.cleanup_until == end
        detach = detached.key in self.lock_early
        split = False
        if not detach and backlog.mergeable(receiver.sock, wire):
            split = self._taken(LockPoint(conn.number, side, end, "split", wire.event_id))
        if (detach or split) and owner is not None and owner.recv:
            receiver.late_cleanup(now)  # release_sock runs: the recv() had ended before it
            recv_cleanup = False
        backlog.add(receiver.sock, now, wire, merge=not detach, split=split)  # tcp_add_backlog
        if cleanup_after is not None:
            receiver.cleanup_rbuf(now, len(receiver.sock.pre_read), cleanup_after)
        if recv_cleanup:
            receiver.late_cleanup(now)
        if detach:
            self._release(now, conn, side, wire.event_id)
        return False

    def _release(self, now: int, conn: Connection, side: Side, caused_by: int) -> None:
        """release_sock (backlog.py), then the reader's application goes on."""
        endpoint = conn.endpoint(side)
        if endpoint.sock.owner is None:
            return  # released at an earlier release point
        self._reading.discard((conn.number, side))
        endpoint.release(now)
        script = conn.script if side == "client" else conn.server_script
        assert script is not None
        self._wake(now, script, conn.number, side, caused_by)

    def _wake(
        self,
        now: int,
        script: ClientScript | ServerScript,
        connection: int,
        side: Side,
        event_id: int,
    ) -> None:
        """Wake an application: its turn comes after the kernel's work at this instant.

        One turn per application and instant; it runs for the latest segment that
        reached it by then (the one whose arrival it answers). A turn that comes while
        the client's blocking call holds its socket (taken at a lock point) is that
        call's: the release that ends it wakes the application again. Where a capture
        measured that this turn came later (slow_wakes: the application's stamped call
        after a segment that arrived meanwhile), it comes that much later, and what
        arrives until then the kernel handles first.
        """
        key = (id(script), now)
        if key in self._woken:
            return
        waking = self._waking_until.get(id(script))
        if waking is not None and waking >= now:
            return  # still on its way from an earlier wake: that turn answers this too
        delay = self.slow_wakes.get((connection, side, self._turn_count.get((connection, side), 0)))
        self._woken.add(key)
        if delay:
            self._waking_until[id(script)] = now + delay

        def turn(t: int) -> None:
            self._woken.discard(key)
            self._waking_until.pop(id(script), None)
            if (connection, side) in self._reading:
                return
            count = self._turn_count.get((connection, side), 0)
            self._turn_count[(connection, side)] = count + 1
            answered = self.recorder.last_arrival(connection, side, event_id, t / 1e6)
            self.turns.append((connection, side, answered))
            script.wake(t, answered)

        self._at(now + (delay or 0), turn, application=True)

    def _listener_syn(self, now: int, conn: Connection, wire: Wire) -> None:
        cfg = self.config
        decision = server_decide(self.fastopen, wire.cookie, len(wire.payload), conn.counting)
        server = TcpEndpoint(
            self.env,
            side="server",
            connection=conn.number,
            iteration=conn.replay.iteration if conn.replay else conn.client.sock.iteration,
            mtu=cfg.mtu,
            counting=conn.counting,
        )
        conn.server = server
        server.sock.peer, conn.client.sock.peer = conn.client.sock, server.sock
        script = ServerScript(server, cfg, self.app if conn.counting else None)
        conn.server_script = script
        server.accept_syn(
            now, wire, decision, self.fastopen, lab_ends_first=conn.replay is not None
        )
        if conn.replay is None:
            # accept() returns once the kernel is done at this instant (a Fast Open child
            # with its data queued): the server application's own turn
            self._wake(now, script, conn.number, "server", wire.event_id)
            return
        # The replayed child's application runs once the kernel is done at this instant:
        # at D = 0 the SYN-ACK, the TIME_WAIT socket's ACK and the RST all happen in the
        # softirq of the SYN's arrival, before the server process is scheduled. The other
        # outcomes of that race (`replay_order`, counted by the comparison): the process
        # runs on the other CPU as the chain goes on, and answers between the SYN-ACK and
        # the RST (TIME_WAIT answers that too); or it answers before TIME_WAIT has had the
        # SYN-ACK (`_answer_holds`) (docs/TCP-NOTES.md, "A replayed SYN").
        application = self.replay_order == "chain-first"
        self._at(now, lambda t: script.wake(t, wire.event_id), application=application)

    def _answer_holds(self, now: int, conn: Connection, wire: Wire) -> None:
        """The replayed child's answer reaches the client's host inside the send() that
        wrote it: loopback's softirq runs as dev_queue_xmit re-enables bottom halves,
        while tcp_sendmsg still holds the child (lock_sock). TIME_WAIT answers the
        SYN-ACK that waited on that CPU's backlog and the answer itself; both ACKs wait
        in the child's backlog, and release_sock runs them (backlog.py)."""
        server = conn.server
        assert server is not None
        server.hold_for_answer(now, wire.event_id)
        self._at(now, lambda t: server.release(t), release=True)


def _wakes(wire: Wire, before: TcpState, after: TcpState) -> bool:
    """Does this segment wake the application (sk_data_ready / sk_state_change)?

    Data, a FIN or a SYN-ACK does, and so does any segment that moves the
    socket's state (the ACK that completes the handshake makes accept()
    return); a pure ACK of data only frees send space, which no lab
    application waits for.
    """
    return bool(wire.payload) or wire.fin or wire.syn or before != after

"""Unit level: a client and a server TcpEndpoint paired by hand through a fake link.

No event loop from the model here: the test owns the clock, delivers each
wire D after it left, and fires timers from the endpoints' next_deadline().
"""

from __future__ import annotations

from tfolab.model.clock import JiffyClock, Link
from tfolab.model.delack import DelackRules
from tfolab.model.endpoint import TcpEndpoint
from tfolab.model.events import Recorder, Segment
from tfolab.model.fastopen import CookieCache, FastOpenServer, plan_client_syn, server_decide
from tfolab.model.state import TcpState
from tfolab.model.wire import Env, Wire

MS = 1_000_000
D = 10 * MS


class FakeLink:
    def __init__(self, hz: int = 250, thresh: int = 1, client_nodelay: bool = False) -> None:
        self.in_flight: list[tuple[int, Wire]] = []
        self.env = Env(
            recorder=Recorder(),
            clock=JiffyClock(hz, 0),
            link=Link(D),
            rules=DelackRules(hz, thresh),
            counters={},
            transmit=lambda wire, t: self.in_flight.append((t, wire)),
            call_at=lambda t, action: None,  # the test polls next_deadline() instead
        )
        self.client = TcpEndpoint(
            self.env, side="client", connection=1, iteration=1, mtu=65536, nodelay=client_nodelay
        )
        self.server = TcpEndpoint(self.env, side="server", connection=1, iteration=1, mtu=65536)
        self.fastopen = FastOpenServer(
            sysctl=3, qlen=16, queue_full=False, counters=self.env.counters
        )
        self.now = 0

    def step(self, limit_ns: int) -> bool:
        """Run the next arrival or timer due by limit_ns; False when there is none."""
        deadlines = [
            (t, ep) for ep in (self.client, self.server) if (t := ep.next_deadline()) is not None
        ]
        arrivals = sorted(self.in_flight, key=lambda item: item[0])
        next_arrival = arrivals[0][0] if arrivals else None
        next_timer = min(deadlines, key=lambda item: item[0]) if deadlines else None
        if next_arrival is None and next_timer is None:
            return False
        if min(t for t in (next_arrival, next_timer and next_timer[0]) if t is not None) > limit_ns:
            return False
        if next_timer is not None and (next_arrival is None or next_timer[0] < next_arrival):
            self.now = next_timer[0]
            next_timer[1].on_timer(self.now)
            return True
        t, wire = arrivals[0]
        self.in_flight.remove(arrivals[0])
        assert t >= self.now
        self.now = t
        if wire.sender == "client":
            if wire.syn:
                decision = server_decide(self.fastopen, wire.cookie, len(wire.payload), True)
                self.server.accept_syn(t, wire, decision)
            else:
                self.server.receive(t, wire)
        else:
            self.client.receive(t, wire)
        return True

    def run_until_quiet(self, limit_ns: int) -> None:
        while self.step(limit_ns):
            pass

    def connect(self) -> None:
        plan = plan_client_syn(
            sysctl=3, cache=CookieCache(), request_bytes=0, mtu=65536, use_fastopen=False
        )
        self.client.connect(0, plan, CookieCache(), write_pending=False, caused_by=None)


def make_server_interactive(pair: FakeLink) -> None:
    """Handshake, then one ping-pong exchange: the server ends in pingpong mode."""
    pair.connect()
    pair.run_until_quiet(20 * MS)
    pair.client.app_write(pair.now, b"x\n", "ping", caused_by=None)
    pair.run_until_quiet(pair.now + D)
    pair.server.app_read(pair.now, None)
    pair.server.app_write(pair.now, b"y\n", "pong", caused_by=None)
    assert pair.env.rules.in_pingpong(pair.server.sock.ack)
    pair.run_until_quiet(pair.now + D)
    pair.client.app_read(pair.now, None)


def server_acks(pair: FakeLink) -> list[Segment]:
    return [
        e
        for e in pair.env.recorder.events
        if isinstance(e, Segment) and e.sender == "server" and e.flags == ("ACK",)
    ]


def test_handshake_through_the_fake_link() -> None:
    pair = FakeLink()
    pair.connect()
    pair.run_until_quiet(100 * MS)
    client, server = pair.client.sock, pair.server.sock
    assert client.state is TcpState.ESTABLISHED and server.state is TcpState.ESTABLISHED
    assert client.snd_nxt == server.rcv_nxt == 1
    assert server.snd_nxt == client.rcv_nxt == 1
    assert client.srtt_ns == 2 * D + 1000  # the round trip and the host's least microsecond


def test_nagle_holds_the_second_write_until_the_ack() -> None:
    pair = FakeLink()
    pair.connect()
    pair.run_until_quiet(20 * MS)
    now = pair.now
    pair.client.app_write(now, b"0123456789", "write 1", caused_by=None)
    pair.client.app_write(now, b"abcde\n", "write 2", caused_by=None)
    assert [w.payload for _, w in pair.in_flight] == [b"", b"0123456789"]  # the ACK, write 1
    pair.run_until_quiet(now + 2 * D)
    # the server's first data segment is ACKed at once (quick-ACK mode) ...
    assert pair.server.sock.ack.quick == 15
    # ... and that ACK released write 2 at now + 2D
    sent = [w.payload for t, w in pair.in_flight if w.sender == "client"]
    assert sent == [b"abcde\n"]
    pair.run_until_quiet(now + 3 * D)
    assert pair.server.app_read(pair.now, None) == b"0123456789abcde\n"


def test_pingpong_server_delays_its_ack_until_the_tick_after_40_ms() -> None:
    pair = FakeLink()
    make_server_interactive(pair)  # it receives data, then replies at once
    start = pair.now
    pair.client.app_write(start, b"z", "small", caused_by=None)
    pair.run_until_quiet(start + D)
    armed = pair.server.next_deadline()
    assert armed is not None
    assert 40 * MS < armed - (start + D) <= 44 * MS
    pair.run_until_quiet(armed)
    assert not pair.env.rules.in_pingpong(pair.server.sock.ack)  # the timer left pingpong
    assert pair.server.sock.ack.ato == pair.env.rules.ato_min
    acks = [w for t, w in pair.in_flight if w.sender == "server"]
    assert acks and acks[-1].ack == pair.server.sock.rcv_nxt


def test_a_held_ack_leaves_on_the_read_after_a_second_pushed_segment() -> None:
    """tcp_cleanup_rbuf: a read that drains the queue after ICSK_ACK_PUSHED2 ACKs at once.

    The interactive server holds the ACK of a small pushed segment on its timer (the read
    of it sends nothing: PUSHED alone does not count in pingpong). A second small pushed
    segment 1 ms later sets PUSHED2 and keeps the pending timer; the read of it sends the
    held ACK, well before the timer, which is then cancelled.
    """
    pair = FakeLink(client_nodelay=True)
    make_server_interactive(pair)
    start = pair.now
    pair.client.app_write(start, b"a", "small 1", caused_by=None)
    pair.run_until_quiet(start + D)
    held_acks = len(server_acks(pair))
    armed = pair.server.next_deadline()
    assert armed is not None and armed > start + D + 40 * MS
    pair.server.app_read(pair.now, None)
    assert len(server_acks(pair)) == held_acks  # still held after the first read
    second = start + MS
    pair.client.app_write(second, b"b", "small 2", caused_by=None)  # TCP_NODELAY: it goes
    pair.run_until_quiet(second + D)
    assert len(server_acks(pair)) == held_acks  # the arrival itself keeps the timer
    assert pair.server.next_deadline() == armed
    pair.server.app_read(pair.now, None)
    ack = server_acks(pair)[-1]
    assert len(server_acks(pair)) == held_acks + 1
    assert ack.sent_ms == (second + D) / MS and ack.ack == pair.server.sock.rcv_nxt
    assert "tcp_cleanup_rbuf" in ack.explanation
    assert pair.server.next_deadline() is None  # the ACK left: nothing for the timer to do

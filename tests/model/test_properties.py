"""Properties of every simulated timeline, across random delays, scenarios and knobs."""

from __future__ import annotations

import dataclasses
import itertools
import math

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.model.scenarios import DELACK, SCENARIOS
from tfolab.model import AppCall, Event, Segment, Timer, domain, simulate
from tfolab.model.clock import ms_to_ns
from tfolab.model.loop import World
from tfolab.model.rcv_space import LINUX_DEFAULT
from tfolab.model.scenario import SettingError
from tfolab.model.simulation import ModelInputError, left_domain
from tfolab.model.state import TcpState
from tfolab.model.window import DEFAULT_RECEIVE_SPACE, initial_wscale

# How many examples, and whether they are random, comes from the Hypothesis profile
# (tests/conftest.py): "ci" by default, deterministic; HYPOTHESIS_PROFILE=dev explores.
SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow])

WSCALE = initial_wscale(DEFAULT_RECEIVE_SPACE)
delays = st.integers(min_value=0, max_value=200_000).map(lambda us: us / 1000)  # 0..200 ms


@st.composite
def cases(draw):
    item = draw(st.sampled_from(SCENARIOS))
    changes: dict[str, object] = {}
    if item.config.pattern == "wwr":
        changes["pingpong_thresh"] = draw(st.integers(1, 4))
        changes["server_quickack"] = draw(st.booleans())
        changes["first_write_bytes"] = draw(st.integers(1, 3000))
        changes["second_write_bytes"] = draw(st.integers(1, 3000))
        changes["mtu"] = draw(st.sampled_from([1500, 65536]))
    else:
        changes["request_bytes"] = draw(st.integers(1, 5000))
        changes["mtu"] = draw(st.sampled_from([576, 1500, 65536]))
    config = dataclasses.replace(item.config, **changes)
    try:  # only what the model's input check accepts (a replay's request fits in the SYN)
        config.check()
    except SettingError:
        assume(False)
    delay = draw(delays)
    iterations = draw(st.integers(2 if config.replay_syn else 1, 6))  # a replay needs one before
    # only inside the model's domain, as simulate() checks it (domain.py): the properties
    # hold where the model predicts, and simulate() refuses the rest
    assume(domain.refusal(config, delay, LINUX_DEFAULT, WSCALE, iterations) is None)
    return (
        config,
        delay,
        iterations,
        draw(st.sampled_from([100, 250, 300, 1000])),
        draw(st.floats(0, 0.999)),
    )


def run_world(config, delay, iterations, hz, phase) -> World:
    world = World(
        config,
        one_way_delay_ns=ms_to_ns(delay),
        iterations=iterations,
        hz=hz,
        tick_phase_ns=int(phase * 1e9 / hz),
    )
    world.run()
    # ...and stays inside it on the way, as simulate() checks after the run (a window
    # grown in slow start, a reader race): simulate() refuses those too
    assume(left_domain(world) is None)
    return world


@SETTINGS
@given(cases())
def test_wire_properties(case) -> None:
    delay = case[1]
    world = run_world(*case)
    events = world.recorder.events
    # time never goes back: events are created in time order
    assert all(a.time_ms <= b.time_ms for a, b in itertools.pairwise(events))
    segments = [e for e in events if isinstance(e, Segment)]
    for seg in segments:
        assert math.isclose(seg.arrived_ms - seg.sent_ms, delay, abs_tol=1e-6)
    for arrival, wire in world.wires:
        seg = next(s for s in segments if s.id == wire.event_id)
        assert arrival / 1e6 == seg.arrived_ms
    # every ack covers only what the peer has already sent
    for seg in segments:
        if seg.ack is None:
            continue
        sent_by_peer = [
            s.end_seq
            for s in segments
            if s.connection == seg.connection
            and s.sender == seg.receiver
            and s.arrived_ms <= seg.sent_ms
        ]
        assert seg.ack <= max(sent_by_peer, default=0)
    # data is delivered to each application in order, exactly once
    for conn in world.connections.values():
        if conn.replay is not None:  # the replayed SYN's child: checked in test_replay.py
            continue
        assert bytes(conn.client.sock.delivered) == b"".join(conn.script.sent_lines)
        assert conn.server is not None
        assert bytes(conn.server.sock.delivered) == b"".join(conn.script.sent_lines)
        assert conn.client.sock.state is TcpState.TIME_WAIT
        assert conn.server.sock.state is TcpState.CLOSED


def delack_bound_ms(hz: int) -> float:
    """The longest a delayed-ACK timer can run from the instant it is armed.

    tcp_send_delayed_ack caps ato at icsk_delack_max (TCP_DELACK_MAX = HZ/5 jiffies, 200 ms),
    and the timer wheel never fires a timer early: calc_index() (kernel/time/timer.c) rounds
    the expiry up by one granule of the wheel level it lands on, 1 jiffy on level 0 (under
    63 jiffies away), 8 jiffies on level 1. So 200 ms + one tick at HZ 100, 250 and 300; at
    HZ=1000 a 200-jiffy timer sits on level 1 and may fire up to 208 ms after it was armed.
    """
    delack_max = hz // 5
    granule = 1 if delack_max < 63 else 8
    return (delack_max + granule) * 1000 / hz


def delack_pending_ms(
    events: list[Event], connection: int, side: str, at_ms: float
) -> float | None:
    """When the socket's delayed-ACK timer will fire, once everything at `at_ms` has run.

    None: no timer is pending. The last `armed` event is the pending timer (a re-arm only
    ever brings it forward); `fired` and `cancelled` leave none.
    """
    pending = None
    for e in events:
        if e.time_ms > at_ms:
            break
        if isinstance(e, Timer) and e.connection == connection and e.side == side:
            pending = e.deadline_ms if e.action == "armed" else None
    return pending


def ack_trigger(cause: Event | None, ack: Segment) -> str | None:
    """What made the socket send this ACK-only segment, read from its `caused_by`.

    The kernel never sends an ACK-only segment on its own: it answers something that happens
    to the socket at that instant. "arrival": a segment from the peer arrives now
    (tcp_rcv_established / tcp_rcv_state_process -> __tcp_ack_snd_check, or the
    application's read of it, which runs at the same instant); "timer": the socket's
    delayed-ACK timer fires now (tcp_delack_timer_handler); "application": the application
    reads or sets TCP_QUICKACK now (tcp_recvmsg / do_tcp_setsockopt -> tcp_cleanup_rbuf).
    A TIME_WAIT socket's ACK answers a segment of the connection replayed on its 4-tuple
    (replay.py), which the timeline numbers as another connection.
    """
    if cause is None:
        return None
    if cause.connection != ack.connection and ack.what != "TIME_WAIT ACK":
        return None
    if isinstance(cause, Segment):
        if cause.sender != ack.sender and cause.arrived_ms == ack.sent_ms:
            return "arrival"
    elif isinstance(cause, Timer):
        if cause.side == ack.sender and cause.action == "fired" and cause.time_ms == ack.sent_ms:
            return "timer"
    elif isinstance(cause, AppCall):
        reads = cause.call == "read" or "TCP_QUICKACK" in cause.detail
        if cause.side == ack.sender and reads and cause.time_ms == ack.sent_ms:
            return "application"
    return None


@SETTINGS
@given(cases())
def test_no_ack_is_held_past_its_timer(case) -> None:
    """Received data is ACKed at once, or held on the delayed-ACK timer and sent for a reason.

    Linux: data or a FIN that arrives schedules an ACK (tcp_event_data_recv, tcp_fin);
    __tcp_ack_snd_check sends it at once (more than one full-sized segment unacknowledged,
    quick-ACK mode, ICSK_ACK_NOW) or tcp_send_delayed_ack holds it on the delayed-ACK timer
    (no later than a timer already pending). A held ACK then leaves only
    (a) on data or a FIN the receiver sends: every segment carries the ACK,
    (b) when the timer fires (tcp_delack_timer_handler),
    (c) when a later segment arrives and __tcp_ack_snd_check / tcp_send_delayed_ack send at
        once (a second full-sized segment, the timer about to expire, ...),
    (d) when the application reads or sets TCP_QUICKACK and tcp_cleanup_rbuf decides to ACK
        (more than one full-sized segment unacknowledged, or the queue drained after
        ICSK_ACK_PUSHED2, or after ICSK_ACK_PUSHED outside pingpong),
    and never after the timer it was held on. Any ACK that leaves clears the scheduled ACK and
    the timer (tcp_event_ack_sent), so (b) and (d) only ever send an ACK not yet sent.
    The scripts write at one instant, so (d) after ICSK_ACK_PUSHED2 needs two small pushed
    segments apart in time, which only the socket-level test makes
    (test_pairing.py, test_a_held_ack_leaves_on_the_read_after_a_second_pushed_segment).
    """
    hz = case[3]
    world = run_world(*case)
    events = world.recorder.events
    by_id = {e.id: e for e in events}
    bound = delack_bound_ms(hz) + 1e-6
    for timer in (e for e in events if isinstance(e, Timer)):
        if timer.action == "armed":
            assert timer.deadline_ms - timer.time_ms <= bound, timer
        elif timer.action == "fired":
            armed = by_id[timer.caused_by]
            assert isinstance(armed, Timer) and armed.action == "armed", timer
            assert (armed.connection, armed.side) == (timer.connection, timer.side)
            assert timer.time_ms == armed.deadline_ms, timer
    segments = [e for e in events if isinstance(e, Segment)]
    # every ACK-only segment answers something that happened to its socket at that instant
    acked: dict[tuple[int, str], int] = {}
    for seg in segments:
        sent_before = acked.get((seg.connection, seg.sender), -1)
        if seg.ack is not None:
            acked[(seg.connection, seg.sender)] = max(sent_before, seg.ack)
        if seg.length or seg.flags != ("ACK",):
            continue
        trigger = ack_trigger(by_id.get(seg.caused_by), seg)
        assert trigger is not None, seg
        if trigger != "arrival":
            assert seg.ack > sent_before, seg  # only a still-scheduled ACK
    # every byte and FIN received is ACKed: at once, or held and then sent by (a)-(d) in time
    replayed = {n for n, conn in world.connections.items() if conn.replay is not None}
    for seg in segments:
        if "SYN" in seg.flags or seg.end_seq == seg.seq:
            continue
        if seg.connection in replayed:  # no client socket to ACK it (replay.py)
            continue
        ack = next(
            (
                s
                for s in segments
                if s.connection == seg.connection
                and s.sender == seg.receiver
                and s.ack is not None
                and s.ack >= seg.end_seq
            ),
            None,
        )
        assert ack is not None, seg
        assert ack.sent_ms >= seg.arrived_ms, (seg, ack)
        if ack.sent_ms == seg.arrived_ms:
            continue  # sent at once
        fires = delack_pending_ms(events, seg.connection, seg.receiver, seg.arrived_ms)
        assert fires is not None, (seg, "an ACK was held with no delayed-ACK timer")
        assert ack.sent_ms <= fires + 1e-9, (seg, ack, "held past its timer")
        assert ack.sent_ms - seg.arrived_ms <= bound, (seg, ack)
        piggybacked = ack.length > 0 or "FIN" in ack.flags
        assert piggybacked or ack_trigger(by_id.get(ack.caused_by), ack) is not None, (seg, ack)


@SETTINGS
@given(cases())
def test_same_input_same_timeline(case) -> None:
    config, delay, iterations, hz, _phase = case
    kwargs = {"one_way_delay_ms": delay, "iterations": iterations, "hz": hz}
    try:
        first = simulate(config, **kwargs)
    except ModelInputError as refused:  # left the domain on the way (run_world's note)
        assert str(refused).startswith("outside the model's domain: "), refused
        assume(False)
        return
    again = simulate(config, **kwargs)
    assert first.to_json() == again.to_json()


@SETTINGS
@given(st.integers(min_value=0, max_value=200_000), st.floats(0, 0.999))
def test_steady_state_is_quantised_on_the_tick(delay_us: int, phase: float) -> None:
    delay = delay_us / 1000
    sim = simulate(DELACK, one_way_delay_ms=delay, iterations=4, tick_phase_ms=phase * 4)
    assert sim.predictions[0].predicted_ms == round(4 * delay, 6)
    for p in sim.predictions[2:]:
        assert math.isclose(p.predicted_ms, 4 * (math.floor(4 * delay / 4) + 11), abs_tol=1e-6)
    stall = sim.predictions[1].predicted_ms - 4 * delay
    assert 40 < stall <= 44 + 1e-6

"""A Fast Open child's SYN-ACK timer, and the client's SYN again reaching the child
(synack_timer.py with a Fast Open request; receive._syn_after_handshake).

Past D = 500 ms a Fast Open round trip outlasts both 1 s timers: the client's SYN
timer sends the SYN again bare, the child's own retransmission timer
(tcp_fastopen_synack_timer) sends the SYN-ACK again, and the SYN again draws one more
(tcp_check_req with fastopen), which leaves the child's timer where it was. The
kernel's figures are in docs/TCP-NOTES.md, "A Fast Open round trip past 1 s";
tests/labs/test_lost_syn_real.py runs one.
"""

from __future__ import annotations

import pytest

from tfolab.lab.catalog import find_lab
from tfolab.model import Note, Segment, Simulation, Timer
from tfolab.model.rcv_space import receive_memory_for
from tfolab.model.scenario import parse_settings
from tfolab.model.simulation import QUARTERS_PER_TICK, ModelInputError, simulate

LINUX_6_18 = (6, 18)
TIMER_WORDS = "tcp_fastopen_synack_timer"
MEASURED_CONNECTION = 2  # connection 1 is the warm-up that fetches the cookie


def _sim(
    delay_ms: float,
    *,
    scenario: str = "cookie",
    settings: dict[str, str] | None = None,
    offsets: tuple[tuple[int, int], ...] = (),
) -> Simulation:
    config = find_lab("fastopen").scenario(scenario).config
    if settings:
        config = config.with_typed(parse_settings(settings))
    return simulate(
        config,
        one_way_delay_ms=delay_ms,
        iterations=1,
        hz=250,
        receive_memory=receive_memory_for(LINUX_6_18, 131072, 6291456),
        wheel_offsets=offsets,
    )


def _measured(sim: Simulation) -> list[Segment]:
    """Iteration 1's segments (the warm-up connection that fetched the cookie left out)."""
    return [e for e in sim.events if isinstance(e, Segment) and e.iteration == 1]


def _start_ms(sim: Simulation) -> float:
    """When iteration 1's SYN left."""
    return next(s.sent_ms for s in _measured(sim) if s.flags == ("SYN",))


def _child_timer_fired(sim: Simulation) -> list[Timer]:
    return [
        e
        for e in sim.events
        if isinstance(e, Timer)
        and e.iteration == 1
        and e.side == "server"
        and e.action == "fired"
        and TIMER_WORDS in e.explanation
    ]


def test_past_500_ms_the_child_sends_its_syn_ack_three_times() -> None:
    """At D = 600: the first SYN-ACK, the child's timer's (TCPTimeouts) and the answer to
    the SYN again (a retransmission, no timeout), all with the first window and ack."""
    sim = _sim(600)
    synacks = [s for s in _measured(sim) if s.sender == "server" and s.flags == ("SYN", "ACK")]
    assert len(synacks) == 3
    assert {(s.seq, s.ack, s.window) for s in synacks} == {(0, 17, synacks[0].window)}
    [fired] = _child_timer_fired(sim)
    since_syn = fired.time_ms - _start_ms(sim)
    assert 1600 <= since_syn <= 1600 + 8 * 4 + 4.2  # within one 8-tick bucket of D + 1 s
    resent = [s for s in synacks[1:] if "pure retransmitted SYN" in s.explanation]
    assert len(resent) == 1 and "keeps its expiry" in resent[0].explanation


def test_the_answer_advertises_another_window_than_the_syn_ack_sent_again() -> None:
    """tcp_make_synack writes rsk_rcv_wnd unscaled: the SYN-ACK sent again keeps the first
    SYN-ACK's field, whatever the child's answer advertised meanwhile."""
    segments = _measured(_sim(600))
    answer = next(s for s in segments if s.sender == "server" and s.length > 0)
    synacks = [s for s in segments if s.sender == "server" and s.flags == ("SYN", "ACK")]
    assert answer.window != synacks[0].window == synacks[-1].window


def test_the_syn_again_does_not_push_the_childs_timer_back() -> None:
    """In the wheel positions where the SYN again arrives first, a request's timer would
    move to now + 1 s (mod_timer_pending); the child's fires anyway, in its first bucket."""
    syn_first = 0
    for position in range(8):
        offsets = ((MEASURED_CONNECTION, position * QUARTERS_PER_TICK),) if position else ()
        sim = _sim(600, offsets=offsets)
        [fired] = _child_timer_fired(sim)
        resent = next(s for s in _measured(sim) if "pure retransmitted" in s.explanation)
        assert fired.time_ms - _start_ms(sim) < 600 + 1000 + 8 * 4 + 4.2
        syn_first += resent.sent_ms < fired.time_ms
    assert syn_first  # the case the rule is about is reached


def test_below_500_ms_the_ack_stops_the_childs_timer() -> None:
    """3D < D + 1 s: the ACK of the SYN-ACK arrives first and takes the request away."""
    sim = _sim(480)
    assert _child_timer_fired(sim) == []
    synacks = [s for s in _measured(sim) if s.flags == ("SYN", "ACK")]
    assert len(synacks) == 1


def test_an_acknowledged_syn_data_is_no_syn_loss() -> None:
    """tcp_rcv_fastopen_synack: tcp_ack emptied the retransmit queue, so syn_drop is false
    although the SYN timed out; Fast Open counts as having worked."""
    sim = _sim(600)
    notes = [e.text for e in sim.events if isinstance(e, Note) and e.iteration == 1]
    assert any("nothing counts as a SYN loss" in text for text in notes)
    assert not any("takes the SYN-data for lost" in text for text in notes)
    assert sim.counters["TCPFastOpenActive"] >= 1
    assert "TCPFastOpenActiveFail" not in sim.counters


@pytest.mark.parametrize("delay", [505.0, 520.0, 800.0, 1000.0])
def test_every_fast_open_scenario_is_followed_up_to_1000_ms(delay: float) -> None:
    lab = find_lab("fastopen")
    for scenario in lab.scenarios:
        if scenario.config.replay_syn:
            continue  # its own limit: the replayed child's SYN-ACK timer (domain.py)
        simulate(scenario.config, one_way_delay_ms=delay, iterations=2)


def test_a_second_expiry_of_the_childs_timer_is_refused() -> None:
    """tcp_fastopen_synack_timer runs tcp_enter_loss before its second SYN-ACK: with the
    first SYN-ACK and both of its repairs lost, the child is still in SYN_RECV 2 s after
    its timer first fired."""
    with pytest.raises(ModelInputError, match="expired a second time"):
        _sim(600, settings={"drop": "server:1@1,server:3@1,server:4@1"})


def test_a_lost_child_syn_ack_is_repaired_and_its_answer_resent_after_the_handshake() -> None:
    """drop=server:1@1 at D = 13: the client drops the child's answer in SYN_SENT, its SYN
    timer sends the SYN again bare, the child answers it (and its own timer once more),
    and the answer goes again when the retransmission timer re-armed by the ACK of the
    SYN-ACK fires (tcp_rcv_synrecv_state_fastopen -> tcp_rearm_rto; retransmit.py)."""
    sim = _sim(13, settings={"drop": "server:1@1"})
    measured = _measured(sim)
    synacks = [s for s in measured if s.flags == ("SYN", "ACK")]
    assert [s.lost for s in synacks] == [True, False, False]
    answers = [s for s in measured if s.sender == "server" and s.length > 0]
    assert len(answers) == 2 and "retransmission timer" in answers[1].explanation
    assert answers[1].sent_ms > synacks[1].sent_ms + 3 * 13  # after the ACK of the SYN-ACK
    assert sim.counters["TCPFastOpenActive"] >= 1


def test_a_lost_child_syn_ack_with_an_answer_of_two_segments_is_refused() -> None:
    """Both segments dropped in SYN_SENT: after the timeout the second leaves from a
    congestion window of one (tcp_enter_loss), not followed."""
    with pytest.raises(ModelInputError, match="second segment of the answer"):
        _sim(13, settings={"drop": "server:1@1", "response_bytes": "3000", "mtu": "1500"})

"""The packet comparison (tfolab.lab.packets): what counts as a disagreement, in words.

The "kernel" here is the model's own timeline turned into captured rows, then
changed one way at a time, so each sentence is pinned against a known cause.
"""

from __future__ import annotations

import dataclasses

import msgspec
import pytest

from tests.captured_from_model import as_captured
from tests.model.scenarios import scenario
from tfolab.lab import packet_rows, packets
from tfolab.lab.disagreements import Arrival, Extra, Missing, WrongWindow
from tfolab.model import Simulation, simulate
from tfolab.model.apps import ServerScript
from tfolab.model.captured import CapturedRow
from tfolab.model.events import CookieInfo, Segment, Timer
from tfolab.model.options import FastOpen, TcpOption, Timestamps, WindowScale, comparable
from tfolab.model.rcv_space import ReceiveMemory


def _sim(name: str):
    item = scenario("fastopen", name)
    return simulate(item.config, one_way_delay_ms=10, iterations=2)


def _as_captured(rows: list[packet_rows.Row], *, race_acks: bool) -> list[CapturedRow]:
    """What a capture of exactly the model's segments would hold."""
    return as_captured(
        r
        for r in rows
        if not r.optional or (race_acks and r.race_outcome not in ("late", "answer"))
    )


def _diff(sim: Simulation, kernel_rows: list[CapturedRow]) -> list[str]:
    starts = packet_rows.model_starts(sim)
    return packets.packet_diff(
        packet_rows.model_rows(sim), packet_rows.captured_rows(kernel_rows), starts, starts
    )


@pytest.mark.parametrize("race_acks", [False, True])
def test_both_outcomes_of_a_named_race_agree(race_acks: bool) -> None:
    sim = _sim("no-cookie")
    assert any(isinstance(e, Timer) and e.race for e in sim.events)
    assert _diff(sim, _as_captured(packet_rows.model_rows(sim), race_acks=race_acks)) == []


def test_a_segment_the_model_lacks_is_one_sentence() -> None:
    sim = _sim("cookie")
    kernel = _as_captured(packet_rows.model_rows(sim), race_acks=False)
    extra = msgspec.structs.replace(kernel[3], flags=["ACK"], length=0, options=[Timestamps()])
    said = _diff(sim, [*kernel[:4], extra, *kernel[4:]])
    assert len(said) == 1 and "the model has no such segment" in said[0]


def test_a_segment_the_kernel_did_not_send_is_one_sentence() -> None:
    sim = _sim("cookie")
    kernel = _as_captured(packet_rows.model_rows(sim), race_acks=False)
    said = _diff(sim, kernel[:2] + kernel[3:])
    assert len(said) == 1 and "the kernel sent no such segment" in said[0]


def test_a_different_field_names_both_versions() -> None:
    sim = _sim("cookie")
    kernel = _as_captured(packet_rows.model_rows(sim), race_acks=False)
    syn = next(i for i, r in enumerate(kernel) if r.flags == ["SYN"])
    options = [WindowScale(10) if isinstance(o, WindowScale) else o for o in kernel[syn].options]
    kernel[syn] = msgspec.structs.replace(kernel[syn], options=options)
    said = _diff(sim, kernel)
    assert len(said) == 1 and "wscale 10" in said[0] and "wscale 7" in said[0]


def test_a_late_arrival_outside_its_own_band_is_reported() -> None:
    sim = _sim("cookie")
    model = packet_rows.model_rows(sim)
    kernel = _as_captured(model, race_acks=False)
    band = model[-1].band_ms
    # the last ACK: five segments on its own path, no timer
    assert band == pytest.approx(sim.accuracy.host_overhead_ms + 0.2 * 5)
    kernel[-1] = msgspec.structs.replace(kernel[-1], t_ms=kernel[-1].t_ms + band + 0.5)
    said = _diff(sim, kernel)
    assert len(said) == 1 and "the model said" in said[0] and f"± {band:.2f}" in said[0]
    kernel[-1] = msgspec.structs.replace(kernel[-1], t_ms=kernel[-1].t_ms - 0.5 - 0.4)
    assert _diff(sim, kernel) == []  # 0.4 ms late: inside the band


def test_a_different_window_is_reported() -> None:
    sim = _sim("cookie")
    kernel = _as_captured(packet_rows.model_rows(sim), race_acks=False)
    kernel[-1] = msgspec.structs.replace(kernel[-1], window=kernel[-1].window + 1)
    said = _diff(sim, kernel)
    assert len(said) == 1 and "advertised window" in said[0]


def _old_comparison(model: Simulation, kernel: list[CapturedRow]) -> list[str]:
    """The comparison before windows and per-packet bands: no window, the widest band."""
    widest = max(p.tolerance_ms for p in model.predictions)
    rows = [
        dataclasses.replace(r, window=None, band_ms=widest) for r in packet_rows.model_rows(model)
    ]
    starts = packet_rows.model_starts(model)
    return packets.packet_diff(rows, packet_rows.captured_rows(kernel), starts, starts)


def test_windows_catch_a_wrong_receive_window_rule_the_old_comparison_missed() -> None:
    """A 6.18 kernel's receive memory charged with the pre-6.3 skb head (1280, not 896 B).

    The "kernel" is the right model; the model under test charges each skb
    384 bytes too much, so its measured payload/truesize ratio and every window
    after the 3000-byte request are off. No ACK decision changes in this
    scenario, so the old comparison saw nothing; the window field shows it.
    """
    item = scenario("fastopen", "large-data")
    truth = simulate(item.config, one_way_delay_ms=10, iterations=2)
    wrong = simulate(
        item.config,
        one_way_delay_ms=10,
        iterations=2,
        receive_memory=ReceiveMemory(skb_head_truesize=1280),
    )
    kernel = _as_captured(packet_rows.model_rows(truth), race_acks=False)
    assert _old_comparison(wrong, kernel) == []
    said = _diff(wrong, kernel)
    assert said and all("advertised window" in sentence for sentence in said)


def test_per_packet_bands_catch_a_late_echo_the_widest_band_hid(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A deliberately wrong rule: the echo server answers 2 ms after its data arrives.

    In `nagle` the stalled rounds carry a timer tick in their band, and the old
    comparison gave every segment that widest band, so round 1's late echo
    (no timer on its path: a band of about 1.3 ms) passed.
    """
    item = scenario("delack", "nagle")
    truth = simulate(item.config, one_way_delay_ms=10, iterations=3)
    original = ServerScript.wake

    def late_wake(self: ServerScript, now: int, caused_by: int | None) -> None:
        self.ep.sock.env.call_at(now + 2_000_000, lambda t: original(self, t, caused_by))

    monkeypatch.setattr(ServerScript, "wake", late_wake)
    wrong = simulate(item.config, one_way_delay_ms=10, iterations=3)
    monkeypatch.undo()
    kernel = _as_captured(packet_rows.model_rows(truth), race_acks=False)
    assert _old_comparison(wrong, kernel) == []
    said = _diff(wrong, kernel)
    assert said and all("the model said" in sentence for sentence in said)
    assert any("into iteration 1" in sentence for sentence in said)


def _comparable(*options: TcpOption) -> tuple[TcpOption, ...]:
    return tuple(comparable(o) for o in options)


def test_cookie_bytes_are_the_servers_secret() -> None:
    assert _comparable(FastOpen(34, 8, "0a1b2c3d4e5f6071")) == (FastOpen(34, 8),)
    assert _comparable(FastOpen(254, 2, "0a1b")) == (FastOpen(254, 2),)
    assert _comparable(FastOpen(34, 0)) == (FastOpen(34, 0),)
    assert FastOpen(254, 2).label() == "TFO cookie 2B (exp. kind 254)"
    assert FastOpen(34, 8, "0a1b2c3d4e5f6071").label() == "TFO cookie 0a1b2c3d4e5f6071"


def test_a_cookie_whose_bytes_spell_254_is_still_a_kind_34_cookie() -> None:
    """Its bytes hold "254": it compares equal to the model's kind-34 cookie of its length,
    not to an experimental one (a false disagreement in about 0.3 % of cookies when the
    comparison read option labels)."""
    kernel = _comparable(FastOpen(34, 8, "1f2540aa00bb11cc"))
    assert kernel == _comparable(_model_cookie(8, 34))
    assert kernel != _comparable(_model_cookie(8, 254))


def test_a_kind_254_request_and_a_kind_254_cookie_differ() -> None:
    request = _comparable(_model_cookie(0, 254))
    cookie = _comparable(FastOpen(254, 8, "0a1b2c3d4e5f6071"))
    assert request == (FastOpen(254, 0),)
    assert request != cookie
    assert cookie == _comparable(_model_cookie(8, 254))
    assert _comparable(FastOpen(34, 4, "0a1b2c3d")) != _comparable(_model_cookie(8, 34))


def test_the_segments_the_comparison_names_are_typed() -> None:
    """Each disagreement says what kind it is; only an arrival is about time alone."""
    sim = _sim("cookie")
    kernel = _as_captured(packet_rows.model_rows(sim), race_acks=False)
    late = msgspec.structs.replace(kernel[-1], t_ms=kernel[-1].t_ms + 5.0)
    window = msgspec.structs.replace(kernel[2], window=kernel[2].window + 1)
    extra = msgspec.structs.replace(kernel[3], flags=["ACK"], length=0, options=[Timestamps()])
    changed = [kernel[0], window, kernel[3], extra, *kernel[4:-1], late]  # kernel[1] missing
    starts = packet_rows.model_starts(sim)
    model = packet_rows.model_rows(sim)
    aligned = packets.pairs(model, packet_rows.captured_rows(changed), starts, starts)
    found = [p.disagreement for p in aligned if p.disagreement is not None]
    kinds = sorted(type(d).__name__ for d in found)
    assert kinds == ["Arrival", "Extra", "Missing", "WrongWindow"]
    assert [d.timing_only for d in found if isinstance(d, Arrival)] == [True]
    assert not any(d.timing_only for d in found if isinstance(d, Extra | Missing | WrongWindow))
    (arrival,) = (d for d in found if isinstance(d, Arrival))
    assert arrival.kernel_ms - arrival.model_ms == pytest.approx(5.0)
    assert arrival.to_json()["kind"] == "arrival" and arrival.to_json()["sentence"]


def _model_cookie(length: int, kind: int) -> FastOpen:
    """The option the model's segments carry for a cookie (CookieInfo.option)."""
    return CookieInfo(length=length, option_kind=kind).option()


def _deferred_race() -> tuple[Simulation, list[CapturedRow], int]:
    """fastopen large-data at D = 0: the client's ACK of the response's second segment is a
    race whose burst ends in a delayed ACK; (simulation, model-as-captured, that row)."""
    item = scenario("fastopen", "large-data")
    sim = simulate(item.config, one_way_delay_ms=0, iterations=1)
    kernel = _as_captured(packet_rows.model_rows(sim), race_acks=False)
    (row,) = [r for r in packet_rows.model_rows(sim) if r.merged_ack is not None]
    (index,) = [
        i
        for i, c in enumerate(kernel)
        if (c.connection, c.sender, c.seq, c.ack, c.flags)
        == (1, "client", row.seq, row.ack, ["ACK"])
    ]
    return sim, kernel, index


def test_a_deferred_race_ack_may_acknowledge_the_whole_burst() -> None:
    """Measured on 6.18 at D = 0 (tfolab run fastopen --scenario large-data --delay 0):
    one run in ten ACKed all 3000 response bytes at once, with the window the model
    gives that outcome; the race is counted as used."""
    sim, kernel, index = _deferred_race()
    (row,) = [r for r in packet_rows.model_rows(sim) if r.merged_ack is not None]
    # at wscale 7 (this simulation's rmem); the host's wscale 10 made it 69 and 69
    assert (row.ack, row.merged_ack, row.window, row.merged_windows) == (2897, 3001, 548, (548,))
    assert _diff(sim, kernel) == []
    merged = msgspec.structs.replace(kernel[index], ack=3001)
    kernel_merged = [*kernel[:index], merged, *kernel[index + 1 :]]
    assert _diff(sim, kernel_merged) == []
    starts = packet_rows.model_starts(sim)
    model = packet_rows.model_rows(sim)
    named, used = packets.race_count(
        packets.pairs(model, packet_rows.captured_rows(kernel), starts, starts), model
    )
    aligned = packets.pairs(model, packet_rows.captured_rows(kernel_merged), starts, starts)
    assert packets.race_count(aligned, model) == (named, used + 1)


def test_a_deferred_race_ack_is_no_optional_segment() -> None:
    """Either outcome sends exactly one ACK: none at all, both, or the merged one with
    another window is a disagreement."""
    sim, kernel, index = _deferred_race()
    assert len(_diff(sim, kernel[:index] + kernel[index + 1 :])) == 1
    merged = msgspec.structs.replace(kernel[index], ack=3001)
    assert len(_diff(sim, [*kernel[: index + 1], merged, *kernel[index + 1 :]])) == 1
    wrong_window = msgspec.structs.replace(merged, window=540)
    said = _diff(sim, [*kernel[:index], wrong_window, *kernel[index + 1 :]])
    assert len(said) == 1 and "advertised window 540" in said[0] and "says 548" in said[0]


def _late_capture(sim: Simulation) -> list[CapturedRow]:
    """The late outcome of connection 3's FIN race, as the capture shows it: no ACK before
    the server's FIN, the timer's ACK a few ms after it, the client's TIME_WAIT
    answering, the server's host resetting (the CI run that found it: 9.2, 11.1, 11.5 ms)."""
    model = packet_rows.model_rows(sim)
    late = [r for r in model if r.race_outcome in ("late", "answer") and r.connection == 3]
    kept = [r for r in model if not r.optional]
    return _as_captured(kept, race_acks=False) + [
        msgspec.structs.replace(row, t_ms=row.t_ms + 5.0 + n)
        for n, row in enumerate(_as_captured(
            [dataclasses.replace(r, optional=False) for r in late], race_acks=False
        ))
    ]  # fmt: skip


def _cookie_request(delay_ms: float) -> Simulation:
    return simulate(
        scenario("fastopen", "cookie-request").config, one_way_delay_ms=delay_ms, iterations=3
    )


def test_a_race_ack_arriving_after_its_fin_agrees_at_d0_with_its_answers() -> None:
    """model/late_ack.py: at D = 0 lo queues the timer's ACK and the close()'s FIN on two
    CPUs' backlogs; arriving second, the ACK meets the client's TIME_WAIT, which
    answers, and the server's host resets (captured in CI on 6.1)."""
    sim = _cookie_request(0)
    kernel = _late_capture(sim)
    assert [(r.sender, r.flags, r.seq, r.ack) for r in kernel[-3:]] == [
        ("server", ["ACK"], 17, 18),
        ("client", ["ACK"], 18, 18),
        ("server", ["RST"], 18, None),
    ]
    starts = packet_rows.model_starts(sim)
    model = packet_rows.model_rows(sim)
    aligned = packets.pairs(model, packet_rows.captured_rows(kernel), starts, starts)
    assert [p.disagreement for p in aligned if p.disagreement] == []
    named, used = packets.race_count(aligned, model)
    assert used >= 1 and named == sum(1 for r in model if r.race_outcome == "early") + sum(
        1 for r in model if r.merged_ack is not None
    )


def test_the_late_outcome_is_taken_whole_or_not_at_all() -> None:
    sim = _cookie_request(0)
    kernel = _late_capture(sim)
    assert len(_diff(sim, kernel[:-1])) == 1  # no reset: the client's TIME_WAIT would live
    said = _diff(sim, kernel[:-3] + kernel[-2:])  # answers to an ACK that never came
    assert len(said) >= 1
    early = [
        r for r in packet_rows.model_rows(sim) if r.race_outcome == "early" and r.connection == 3
    ]
    both = _late_capture(sim) + _as_captured(early, race_acks=True)
    assert len(_diff(sim, sorted(both, key=lambda r: r.t_ms))) == 1  # the timer sends one ACK


def test_with_a_delay_the_late_outcome_is_a_disagreement() -> None:
    """netem's tfifo and the NFQUEUE delayer keep the order of what they hold."""
    sim = _cookie_request(10)
    assert not any(r.race_outcome in ("late", "answer") for r in packet_rows.model_rows(sim))
    at_zero = _late_capture(_cookie_request(0))[-3:]
    kernel = _as_captured(packet_rows.model_rows(sim), race_acks=False)
    shifted = [
        msgspec.structs.replace(r, t_ms=kernel[-1].t_ms + 1 + n) for n, r in enumerate(at_zero)
    ]
    assert len(_diff(sim, kernel + shifted)) == 3


def _lost_fin_capture(sim: Simulation, connection: int) -> list[CapturedRow]:
    """The lost-FIN outcome of a connection's FIN race: the timer's ACK just before the
    server's FIN, and no last ACK from the client (fastopen cookie at D = 0 on 6.18,
    connection 2 of 3: the ACK and the FIN 1 us apart)."""
    model = packet_rows.model_rows(sim)
    early = next(r for r in model if r.race_outcome == "early" and r.connection == connection)
    last = next(r for r in model if r.lost_in == early.race_group)
    kept = [
        dataclasses.replace(r, optional=False) if r is early else r
        for r in model
        if r is not last and (not r.optional or r is early)
    ]
    return _as_captured(kept, race_acks=False)


def test_a_fin_lost_under_the_timers_ack_agrees_at_d0_and_counts_as_a_race() -> None:
    """model/late_ack.py: the timer's ACK moves the orphaned client to TIME_WAIT while the
    FIN spins in bh_lock_sock on the other CPU; the FIN meets TCP_CLOSE and is dropped,
    so the client's last ACK never leaves."""
    sim = simulate(scenario("fastopen", "cookie").config, one_way_delay_ms=0, iterations=3)
    model = packet_rows.model_rows(sim)
    assert sum(1 for r in model if r.lost_in) == 3  # one per connection's FIN race
    kernel = _lost_fin_capture(sim, 2)
    assert [(r.sender, r.flags) for r in kernel if r.connection == 2][-3:] == [
        ("client", ["FIN", "ACK"]),
        ("server", ["ACK"]),
        ("server", ["FIN", "ACK"]),
    ]
    starts = packet_rows.model_starts(sim)
    aligned = packets.pairs(model, packet_rows.captured_rows(kernel), starts, starts)
    assert [p.disagreement for p in aligned if p.disagreement] == []
    # Each connection's race used once: two FINs carried the ACK, one was lost under it.
    assert packets.race_count(aligned, model) == (3, 3)
    # Without the timer's ACK nothing moved the client to TIME_WAIT: the FIN is answered.
    timers_ack = next(
        r for r in kernel if (r.connection, r.sender, r.flags, r.ack) == (2, "server", ["ACK"], 18)
    )
    said = _diff(sim, [r for r in kernel if r is not timers_ack])
    assert len(said) == 1, said
    assert said[0].startswith("connection 2, client: the model has ACK seq 18 ack 18")
    assert "the kernel sent no such segment" in said[0]


def test_with_a_delay_a_missing_last_ack_is_a_disagreement() -> None:
    """With a delay the ACK and the FIN leave the delayer in order, one CPU after the other
    processes them in turn: the FIN always finds the TIME_WAIT socket, which answers."""
    sim = simulate(scenario("fastopen", "cookie").config, one_way_delay_ms=10, iterations=3)
    model = packet_rows.model_rows(sim)
    assert not any(r.lost_in for r in model)
    last = max(
        (r for r in model if r.connection == 2 and r.sender == "client" and r.flags == ("ACK",)),
        key=lambda r: r.arrived_ms,
    )
    kernel = _as_captured([r for r in model if not r.optional and r is not last], race_acks=False)
    said = _diff(sim, kernel)
    assert len(said) == 1 and "the kernel sent no such segment" in said[0]


def _mtu_128_single_write() -> Simulation:
    item = scenario("delack", "single-write")
    config = dataclasses.replace(item.config, first_write_bytes=684, mtu=128)
    return simulate(config, one_way_delay_ms=0, iterations=1)


def _swap_last_client_acks(kernel: list[CapturedRow]) -> list[CapturedRow]:
    """The client's last two pure ACKs of the echo arrive the other way round."""
    acks = [
        i for i, r in enumerate(kernel)
        if r.sender == "client" and r.flags == ["ACK"] and r.length == 0 and r.seq == 691
    ]  # fmt: skip
    assert len(acks) >= 2
    a, b = acks[-2], acks[-1]
    swapped = list(kernel)
    swapped[a] = msgspec.structs.replace(kernel[b], t_ms=kernel[a].t_ms)
    swapped[b] = msgspec.structs.replace(kernel[a], t_ms=kernel[b].t_ms)
    return swapped


def test_pure_acks_from_two_cpus_are_compared_in_the_order_they_were_sent() -> None:
    """packets.in_send_order: at D = 0 lo queues each packet on its sending CPU's backlog,
    so ACKs sent from a softirq and from release_sock may arrive swapped (MTU 128,
    first_write_bytes 684: ACK 685 captured before 457, 533 and 609)."""
    sim = _mtu_128_single_write()
    kernel = _swap_last_client_acks(_as_captured(packet_rows.model_rows(sim), race_acks=True))
    starts = packet_rows.model_starts(sim)
    model, rows = packet_rows.model_rows(sim), packet_rows.captured_rows(kernel)
    assert packets.packet_diff(model, rows, starts, starts, same_instant=True) == []
    assert packets.packet_diff(model, rows, starts, starts) != []  # with a delay: in order


def test_only_pure_acks_are_put_back_in_order() -> None:
    sim = _mtu_128_single_write()
    kernel = _as_captured(packet_rows.model_rows(sim), race_acks=False)
    data = [i for i, r in enumerate(kernel) if r.sender == "client" and r.length > 0]
    a, b = data[0], data[1]
    kernel[a], kernel[b] = (
        msgspec.structs.replace(kernel[b], t_ms=kernel[a].t_ms),
        msgspec.structs.replace(kernel[a], t_ms=kernel[b].t_ms),
    )
    starts = packet_rows.model_starts(sim)
    said = packets.packet_diff(
        packet_rows.model_rows(sim),
        packet_rows.captured_rows(kernel),
        starts,
        starts,
        same_instant=True,
    )
    assert said != []


def _nodelay_at_d10() -> Simulation:
    return simulate(scenario("delack", "nodelay").config, one_way_delay_ms=10, iterations=1)


def test_the_third_ack_wakes_accept_and_the_request_may_share_one_ack() -> None:
    """Captured on 6.18 through NFQUEUE at D = 10 (the lab's own nodelay, once in a few
    dozen runs): the two writes arrived with the third ACK and the server sent one ACK
    of both (17), none of the first 10 bytes. That third ACK woke accept() (the ACK of
    the SYN-ACK changes the state, sk_state_change); the server then read, holding the
    socket while the writes were processed: 6.7+ defers the first one's ACK to
    tcp_release_cb (TCP_ACK_DEFERRED), 6.1 coalesces them in tcp_add_backlog."""
    sim = _nodelay_at_d10()
    rows = packet_rows.model_rows(sim)
    acks = [r for r in rows if r.sender == "server" and r.length == 0 and r.ack in (11, 17)]
    assert [(r.ack, r.optional) for r in acks] == [(11, True), (17, False)]
    first = next(
        e for e in sim.events if isinstance(e, Segment) and e.sender == "server" and e.ack == 11
    )
    assert "completed the handshake woke accept()" in first.explanation
    assert "TCP_ACK_DEFERRED" in first.explanation
    for race_acks in (False, True):  # one ACK of both, or one each: the kernel's two outcomes
        assert _diff(sim, _as_captured(rows, race_acks=race_acks)) == []


def test_without_the_third_ack_in_the_burst_the_first_data_ack_is_certain() -> None:
    """Only an ACK that arrives with the request wakes the server before its data: with
    the request alone (the handshake finished a round trip earlier, as on a kept
    connection), the first of its segments is processed before any wake-up."""
    config = dataclasses.replace(
        scenario("delack", "nodelay").config, fresh_connection_each_iteration=False
    )
    sim = simulate(config, one_way_delay_ms=10, iterations=3)
    later = [
        e for e in sim.events
        if isinstance(e, Segment) and e.sender == "server" and not e.length
        and e.iteration > 1 and e.ack is not None and e.ack > 1
    ]  # fmt: skip
    assert later and not any("completed the handshake" in e.explanation for e in later)

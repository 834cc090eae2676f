"""Every CLI scenario, run through the model: headlines, counters and the story told."""

from __future__ import annotations

import dataclasses

import pytest

from tests.model.scenarios import FASTOPEN, SCENARIOS, scenario
from tfolab.model import Note, Segment, simulate
from tfolab.model.options import Mss

D = 10.0


def run(lab: str, name: str, iterations: int | None = None, **changes: object):
    item = scenario(lab, name)
    config = dataclasses.replace(item.config, **changes)
    return simulate(config, one_way_delay_ms=D, iterations=iterations or item.iterations)


def headlines(sim) -> list[float]:
    return [p.predicted_ms for p in sim.predictions]


def syns(sim) -> list[Segment]:
    return [e for e in sim.events if isinstance(e, Segment) and e.flags == ("SYN",)]


@pytest.mark.parametrize("item", SCENARIOS, ids=lambda s: f"{s.lab}-{s.name}")
def test_every_scenario_simulates_and_explains(item) -> None:
    sim = simulate(item.config, one_way_delay_ms=D, iterations=item.iterations)
    assert len(sim.predictions) == item.iterations
    for p in sim.predictions:
        assert p.explanation.split(":")[0].endswith(("D", f"HZ={sim.hz})"))
        # the default accuracy: a tick per fired timer, 0.2 ms per packet, 0.5 ms of host
        tolerance = p.timers_on_path * 1000.0 / sim.hz + p.packets_on_path * 0.2 + 0.5
        assert p.tolerance_ms == pytest.approx(tolerance, abs=1e-9)
        assert (p.low_ms, p.high_ms) == pytest.approx(
            (max(0.0, p.predicted_ms - tolerance), p.predicted_ms + tolerance), abs=1e-6
        )
    for event in sim.events:
        assert event.explanation
    json = sim.to_json()
    assert {e["kind"] for e in json["events"]} >= {"segment", "app"}


def test_handshake_plain_is_4d_with_separate_synack_and_response() -> None:
    sim = run("handshake", "plain")
    assert headlines(sim) == [40.0, 40.0, 40.0]
    for seg in (e for e in sim.events if isinstance(e, Segment)):
        if "SYN" in seg.flags and seg.sender == "server":
            assert seg.length == 0  # Linux never puts data in its own SYN-ACK
    first = syns(sim)[0]
    # the option says 65495 (65535 - 40); with timestamps the MSS in use is 65483
    assert [o.label() for o in first.options] == ["mss 65495", "sackOK", "TS", "wscale 7"]


def test_cookie_request_then_cookie() -> None:
    sim = run("fastopen", "cookie-request")
    assert headlines(sim) == [40.0]
    assert sim.counters == {"TCPFastOpenCookieReqd": 1}
    syn = syns(sim)[0]
    assert syn.cookie is not None and syn.cookie.length == 0 and syn.length == 0
    synack = next(e for e in sim.events if isinstance(e, Segment) and e.flags == ("SYN", "ACK"))
    assert synack.cookie is not None and synack.cookie.length == 8
    assert "TFO cookie 8B" in [o.label() for o in synack.options]


def test_warm_cookie_is_2d_and_the_warm_up_is_not_counted() -> None:
    sim = run("fastopen", "cookie")
    assert headlines(sim) == [20.0, 20.0, 20.0]
    assert sim.counters == {"TCPFastOpenActive": 3, "TCPFastOpenPassive": 3}
    assert any(e.iteration == 0 and "warm-up" in e.explanation for e in sim.events)


def test_invalid_cookie_is_4d_then_2d() -> None:
    sim = run("fastopen", "invalid-cookie")
    assert headlines(sim) == [40.0, 20.0]
    assert sim.counters["TCPFastOpenPassiveFail"] == 1
    assert sim.counters["TCPFastOpenActiveFail"] == 1
    first = next(s for s in syns(sim) if s.iteration == 1)
    retrans = next(
        e
        for e in sim.events
        if isinstance(e, Segment)
        and e.iteration == 1
        and e.sender == "client"
        and e.length
        and "SYN" not in e.flags
    )
    assert retrans.sent_ms == pytest.approx(first.sent_ms + 2 * D)  # at once, on the SYN-ACK
    assert retrans.seq == 1 and first.length == 16


def test_server_off_never_learns_and_alternates_the_option_kind() -> None:
    for changes in ({}, {"fastopen_sysctl": 0x1}):
        sim = run("fastopen", "server-off", iterations=4, **changes)
        assert headlines(sim) == [40.0] * 4
        assert sim.counters == {"TCPFastOpenCookieReqd": 4}
        assert [s.cookie.option_kind for s in syns(sim)] == [34, 254, 34, 34]


def test_large_data_is_4d_because_the_line_needs_the_rest() -> None:
    for cache in ("flush", "warm"):
        sim = run("fastopen", "large-data", iterations=2, cookie_cache=cache)
        assert headlines(sim) == [40.0, 40.0]
        measured_syns = [s for s in syns(sim) if s.iteration >= 1]
        with_data = [s.length for s in measured_syns if s.length]
        assert all(n == 1420 for n in with_data)
        assert any("not complete" in e.explanation for e in sim.events if isinstance(e, Note))
        assert syns(sim)[0].options[0] == Mss(1460)


def test_no_cookie_with_and_without_server_0x200() -> None:
    sim = run("fastopen", "no-cookie")
    assert headlines(sim) == [20.0] * 3
    assert all(s.cookie is None and s.length == 16 for s in syns(sim))
    sim = run("fastopen", "no-cookie", fastopen_sysctl=0x4 | 0x3)
    assert headlines(sim) == [40.0] * 3
    assert sim.counters == {"TCPFastOpenActiveFail": 3}


def test_queue_full_is_a_plain_handshake() -> None:
    config = dataclasses.replace(FASTOPEN, cookie_cache="warm", fastopen_queue_full=True)
    sim = simulate(config, one_way_delay_ms=D, iterations=2)
    assert headlines(sim) == [40.0, 40.0]
    assert sim.counters["TCPFastOpenListenOverflow"] == 2


def test_fastopen_connect_defers_the_syn_once_a_cookie_is_cached() -> None:
    sim = run("fastopen", "cookie", cookie_cache="flush", client_fastopen="connect")
    assert headlines(sim) == [40.0, 20.0, 20.0]


def test_delack_stall_story_is_told() -> None:
    sim = run("delack", "nagle")
    texts = " | ".join(e.explanation for e in sim.events)
    assert "pingpong" in texts and "Nagle holds" in texts
    assert "released: ACK 27 arrived" in [e.cause for e in sim.events if isinstance(e, Segment)]
    assert "ACK held: the server is interactive and waits up to 40 ms" in texts

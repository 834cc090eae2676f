"""The guides and notes never contradict the model where a statement can be checked.

Two tables. FORBIDDEN holds wordings no text may use, each with the fact of
the model (or of the code the labs run) that shows it wrong; REQUIRED holds
facts the texts must state, each with the model's own value behind it. A
sentence that drifts from the model, or a model that drifts from the
sentence, fails here: the fact is checked first, then the text. The texts are
every lab's guide (bench.md too) and docs/TCP-NOTES.md, each folded to single
spaces; README.md only where a check names it.

Where a claim is a kernel version (a sysctl's first release, say), the model
has nothing to say about it; the fact paired with it is what the model
implements, and the version comes from the kernel's history (named in the
check's docstring).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.model.scenarios import scenario
from tfolab.lab.bench_plan import auto_concurrency
from tfolab.lab.bench_predict import CpuTerm, model_path, predicted_gain_pct
from tfolab.lab.catalog import labs_dir
from tfolab.lab.grading import MAX_RELATIVE_ALLOWANCE_MS
from tfolab.model import AppCall, ScenarioConfig, Segment, Simulation, simulate
from tfolab.model.delack import ACK_SCHED, ACK_TIMER, AckState, DelackRules
from tfolab.model.fastopen import cookie_for
from tfolab.model.window import initial_wscale
from tfolab.runner.backends import nfrule

ROOT = Path(__file__).resolve().parents[2]
NOTES = ROOT / "docs" / "TCP-NOTES.md"
README = ROOT / "README.md"
REQUEST = 16  # the fastopen lab's request line, bytes
BENCH_REQUESTS = 1024


def fold(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def texts() -> dict[str, str]:
    """Every guide and the notes, by file name, whitespace folded."""
    found = {path.name: path.read_text() for path in sorted(labs_dir().glob("*.md"))}
    found[NOTES.name] = NOTES.read_text()
    return {name: fold(text) for name, text in found.items()}


def said(pattern: str, names: tuple[str, ...] = ()) -> list[str]:
    """Where `pattern` (a regex, case-insensitive) occurs: 'file: ...context...'."""
    out = []
    for name, text in texts().items():
        if names and name not in names:
            continue
        for match in re.finditer(pattern, text, re.IGNORECASE):
            out.append(f"{name}: ...{text[max(match.start() - 60, 0) : match.end() + 60]}...")
    return out


def segments(sim: Simulation, connection: int, sender: str) -> list[Segment]:
    return [
        e
        for e in sim.events
        if isinstance(e, Segment) and e.connection == connection and e.sender == sender
    ]


def fastopen(name: str, iterations: int, delay_ms: float = 10, **changes: object) -> Simulation:
    config = dataclasses.replace(scenario("fastopen", name).config, **changes)
    return simulate(config, one_way_delay_ms=delay_ms, iterations=iterations)


def stalled_rounds(pingpong_thresh: int, rounds: int = 10) -> list[int]:
    nagle = scenario("delack", "nagle").config
    config = dataclasses.replace(nagle, pingpong_thresh=pingpong_thresh)
    sim = simulate(config, one_way_delay_ms=10, iterations=rounds)
    return [p.i for p in sim.predictions if p.timers_on_path]


# --- the facts ------------------------------------------------------------------


def syn_data_travels_apart_from_the_syn() -> None:
    """tcp_send_syn_data sends the SYN's data in a copy and keeps it as an skb of its
    own (ACK|PSH, seq 1); the SYN kept for a retransmission is bare. In
    invalid-cookie the unacknowledged data goes again as that skb, never in a SYN."""
    sim = fastopen("invalid-cookie", iterations=2)
    syn = next(s for s in segments(sim, 2, "client") if "SYN" in s.flags)
    synack = next(s for s in segments(sim, 2, "server") if "SYN" in s.flags)
    assert syn.length == REQUEST and synack.ack == 1, "the key change drops the SYN's data"
    resent = [s for s in segments(sim, 2, "client") if s.length == REQUEST and s is not syn]
    assert resent and all("SYN" not in s.flags and s.seq == 1 for s in resent)


def the_client_acks_the_synack() -> None:
    """A request that fits in the SYN leaves no write pending, so
    tcp_rcv_synsent_state_process ACKs the SYN-ACK at once: Fast Open keeps that ACK."""
    sim = fastopen("cookie", iterations=2)
    pure_acks = [s for s in segments(sim, 2, "client") if s.flags == ("ACK",) and s.ack == 1]
    assert pure_acks, "the model's Fast Open client ACKs the SYN-ACK"


def a_replayed_syn_reaches_the_application_twice() -> None:
    """The replay scenario: one request from the client, two at the server. Replays are
    the risk RFC 7413 names; it asks for replay-tolerant requests, it bans no method."""
    sim = fastopen("replay", iterations=2)
    assert sim.app["requests"] == 2
    assert sim.counters["TCPFastOpenActive"] == 1 and sim.counters["TCPFastOpenPassive"] == 2


def cpu_not_lateness_moves_the_gain_off_100() -> None:
    """bench_predict: gain = plain / TFO - 1 with N x ((path + packets x lateness) / C + s).
    Lateness is paid per packet, 4 plain and 2 TFO, so alone it keeps the gain at 100 %;
    the CPU term takes it above 100 % when s_tfo < s_plain / 2, below otherwise."""
    assert model_path(75, False)[1] == 2 * model_path(75, True)[1] == 4
    late_only, _ = predicted_gain_pct(75, BENCH_REQUESTS, 64, None, late_ms=0.2)
    above, _ = predicted_gain_pct(75, BENCH_REQUESTS, 64, CpuTerm(plain_s=3e-4, tfo_s=1e-4))
    below, _ = predicted_gain_pct(75, BENCH_REQUESTS, 64, CpuTerm(plain_s=1.3e-4, tfo_s=1e-4))
    assert late_only == 100.0
    assert above is not None and above > 100
    assert below is not None and below < 100


def nagle_holds_only_behind_a_small_segment() -> None:
    """The model holds a small segment only behind an unacknowledged small one
    (tcp_minshall_check): Minshall's variant, from his 1999 draft, not RFC 896."""
    config = ScenarioConfig(pattern="wwr", fresh_connection_each_iteration=False)
    sim = simulate(config, one_way_delay_ms=10, iterations=2)
    assert any("tcp_minshall_check" in e.explanation for e in sim.events)


def every_delayed_ack_is_capped() -> None:
    """tcp_send_delayed_ack applies its last cap (icsk_delack_max on 6.1,
    tcp_delack_max() from 6.7) to every ato, the 40 ms one too; the model does the
    same, so a lower cap shortens the lab's own 40 ms stall."""

    class Capped(DelackRules):
        @property
        def delack_max(self) -> int:
            return 5

    rules = Capped(hz=250, pingpong_thresh=1)
    assert rules.ato_min == 10
    state = AckState(rcv_mss=536, pending=ACK_SCHED, ato=rules.ato_min, pingpong=1)
    assert rules.delayed_ack_expiry(state, now=1000, srtt=None) == 1005


def the_pingpong_threshold_is_one_unless_set() -> None:
    """The model's default is 1: TCP_PINGPONG_THRESH since 5.19 (4d8f24eeedc5, the revert
    of 5.1's 3) and the sysctl's default since 6.7 (562b1fdf061b, October 2023: not 6.5).
    With 3, only every third round stalls."""
    assert ScenarioConfig().pingpong_thresh == 1
    assert stalled_rounds(1) == list(range(2, 11))
    assert stalled_rounds(3) == [4, 7, 10]


def the_delayed_ack_fires_40_to_44_ms_late() -> None:
    """At HZ=250 the model's 40 ms timer fires 40-44 ms after arming."""
    sim = simulate(scenario("delack", "nagle").config, one_way_delay_ms=10, iterations=3)
    stalls = [p.predicted_ms - 4 * 10 for p in sim.predictions if p.timers_on_path]
    assert stalls and all(40 < stall <= 44 for stall in stalls)


def the_window_scale_follows_tcp_rmem() -> None:
    """window.initial_wscale: 7 for 6 MiB (tcp_rmem[2] before 6.16), 10 for 32 MiB,
    the default since 6.16 (572be9bf9d0d): no tuning needed."""
    assert (initial_wscale(6 << 20), initial_wscale(32 << 20)) == (7, 10)


def active_fail_needs_no_timeout() -> None:
    """invalid-cookie: TCPFastOpenActiveFail +1 with no timer at all, counted by
    tcp_rcv_fastopen_synack when the SYN-ACK (acking only the SYN) arrives, and the data
    leaves again at that instant. tcp_write_timeout counts it only from the third
    timeout in a row (tcp_fastopen_active_detect_blackhole), not for one retransmission."""
    sim = fastopen("invalid-cookie", iterations=2)
    assert sim.counters["TCPFastOpenActiveFail"] == 1
    synack = next(s for s in segments(sim, 2, "server") if "SYN" in s.flags)
    resent = next(
        s for s in segments(sim, 2, "client") if "SYN" not in s.flags and s.length == REQUEST
    )
    assert synack.ack == 1 and resent.sent_ms == synack.arrived_ms


def the_cookie_depends_on_the_addresses_only() -> None:
    """A cookie is siphash(source IP, destination IP) under the key, and tcp_metrics
    caches it by the address pair: the model's cookie takes the key alone (one pair,
    127.0.0.1 both ways), and a replay from the same pair is accepted."""
    assert list(inspect.signature(cookie_for).parameters) == ["key_generation"]
    assert fastopen("replay", iterations=2).counters.get("TCPFastOpenPassiveFail", 0) == 0


def the_nfqueue_rule_queues_tcp_only() -> None:
    """The stand-in's rule matches TCP on lo (nfrule), so ping's ICMP passes undelayed."""
    assert inspect.signature(nfrule.install_rule).parameters["protocol"].default == "tcp"
    assert inspect.signature(nfrule.nft_batch).parameters["protocol"].default == (
        socket.IPPROTO_TCP
    )


def autocorking_is_no_setting() -> None:
    """The scenario schema has no autocorking: no backend leaves a write for it to hold."""
    assert "autocorking" not in {f.name for f in dataclasses.fields(ScenarioConfig)}


def the_backlog_ack_is_a_race() -> None:
    """large-data at D = 0: ACKs the backlog may merge (tcp_add_backlog, and from 6.7
    TCP_ACK_DEFERRED) are named races, so either capture agrees."""
    sim = fastopen("large-data", iterations=3, delay_ms=0)
    assert any(e.race for e in sim.events if isinstance(e, Segment))


def quick_acks_may_be_one() -> None:
    """tcp_incr_quickack: rcv_wnd / (2 x rcv_mss), 2 only when that is 0, at most 16."""
    rules = DelackRules(hz=250, pingpong_thresh=1)
    granted = []
    for window in (500, 3 * 536, 100 * 536):
        state = AckState(rcv_mss=536)
        rules.incr_quickack(state, rcv_wnd=window)
        granted.append(state.quick)
    assert granted == [2, 1, 16]


def the_timer_doubles_ato_outside_pingpong() -> None:
    """tcp_delack_timer_handler: pingpong ends and ato goes back to 40 ms only for an
    interactive socket; any other socket's ato doubles, up to the RTO."""
    rules = DelackRules(hz=250, pingpong_thresh=1)
    quiet = AckState(rcv_mss=536, pending=ACK_SCHED | ACK_TIMER, ato=12, pingpong=0)
    rules.timer_fired(quiet, now=100, rto=50)
    talking = AckState(rcv_mss=536, pending=ACK_SCHED | ACK_TIMER, ato=12, pingpong=1)
    rules.timer_fired(talking, now=100, rto=50)
    assert (quiet.ato, talking.ato, talking.pingpong) == (24, rules.ato_min, 0)


def fastopen_connect_defers_only_with_a_cookie() -> None:
    """TCP_FASTOPEN_CONNECT: tcp_fastopen_defer_connect holds the SYN until the write
    only when a cookie is cached; without one connect() sends a cookie request."""
    cold = fastopen("cookie", iterations=1, client_fastopen="connect", cookie_cache="flush")
    syn = next(s for s in segments(cold, 1, "client") if "SYN" in s.flags)
    assert syn.length == 0 and syn.cookie is not None and syn.cookie.length == 0
    assert syn.sent_ms == 0.0
    warm = fastopen("cookie", iterations=1, client_fastopen="connect", cookie_cache="warm")
    events = [e for e in warm.events if e.iteration == 1]
    write = next(i for i, e in enumerate(events) if isinstance(e, AppCall) and e.call == "write")
    syn_at = next(
        i
        for i, e in enumerate(events)
        if isinstance(e, Segment) and e.sender == "client" and "SYN" in e.flags
    )
    assert syn_at > write and events[syn_at].length == REQUEST


def the_bench_concurrency_rule() -> None:
    """bench_plan.auto_concurrency: 8 at D = 0, else the smallest power of two keeping
    N x 4D / C within 5 s."""
    assert [auto_concurrency(d, BENCH_REQUESTS) for d in (0, 1, 10, 75)] == [8, 1, 16, 64]


def quickack_acks_full_segments_before_the_read() -> None:
    """__tcp_sock_set_quickack runs tcp_cleanup_rbuf(sk, 1): a small unread segment waits
    for the read, more than one full segment unacknowledged is ACKed at once, unread
    (fuzzer seed 5105: delack quickack, TCP_CORK, MTU 3833, 10 + 7561 bytes)."""
    base = scenario("delack", "quickack").config
    small = simulate(base, one_way_delay_ms=10, iterations=3)
    big = simulate(
        dataclasses.replace(base, cork=True, mtu=3833, second_write_bytes=7561),
        one_way_delay_ms=10,
        iterations=4,
    )

    def quickack_acks(sim: Simulation) -> list[Segment]:
        calls = {
            e.id for e in sim.events if isinstance(e, AppCall) and e.detail == "TCP_QUICKACK 1"
        }
        return [e for e in sim.events if isinstance(e, Segment) and e.caused_by in calls]

    assert not quickack_acks(small)
    assert [e.ack for e in quickack_acks(big)] == [30285]


# --- the tables -----------------------------------------------------------------


def transfer_flights(name: str) -> list[int]:
    """The transfer lab's scenario at D = 10 ms on this project's 6.18 host's memory:
    how many answer segments leave in each flight (a gap of a round trip between)."""
    from tests.labs.host_captures import model

    sim = model("transfer", name, {}, 1, 10.0)
    flights: list[int] = []
    last = None
    for seg in segments(sim, 2 if "fastopen" in name else 1, "server"):
        if not seg.length:
            continue
        if last is None or seg.sent_ms - last > 10:
            flights.append(0)
        flights[-1] += 1
        last = seg.sent_ms
    return flights


def transfer_headline(name: str) -> float:
    from tests.labs.host_captures import model

    (first, *_) = model("transfer", name, {}, 1, 10.0).predictions
    return first.predicted_ms


def slow_start_flights() -> None:
    assert transfer_flights("first-flight") == [10]
    assert transfer_flights("slow-start") == [10, 20, 12]
    assert transfer_flights("long") == [10, 20, 40, 80, 58]
    assert [transfer_headline(n) for n in ("first-flight", "slow-start", "long")] == [40, 80, 120]


def fast_open_is_refused_for_a_big_answer() -> None:
    """The answer behind the SYN-ACK races the woken sendto()'s hold (domain.py)."""
    from tests.labs.host_captures import model
    from tfolab.model.simulation import ModelInputError

    tfo = {"client_fastopen": "sendto", "server_fastopen_qlen": "16", "fastopen_sysctl": "3",
           "cookie_cache": "warm"}  # fmt: skip
    for name in ("slow-start", "long"):
        try:
            model("transfer", name, tfo, 1, 10.0)
        except ModelInputError as refused:
            assert "GSO packets" in str(refused)
        else:
            raise AssertionError(f"{name} with Fast Open is no longer refused")


@dataclass(frozen=True)
class Forbidden:
    name: str
    patterns: tuple[str, ...]
    fact: Callable[[], None]
    why: str


FORBIDDEN = (
    Forbidden(
        "retransmitted-syn-with-data",
        (
            r"retransmitted (or duplicated )?SYN carries the (same )?data",
            r"retransmit(s|ted)? (a |the )?SYN with (its|the) data",
        ),
        syn_data_travels_apart_from_the_syn,
        "Linux retransmits a Fast Open SYN bare (tcp_send_syn_data)",
    ),
    Forbidden(
        "fast-open-saves-the-ack",
        (r"saves[^.]{0,40}(separate )?handshake ACK", r"no (separate )?handshake ACK"),
        the_client_acks_the_synack,
        "the client still ACKs the SYN-ACK; Fast Open saves a round trip",
    ),
    Forbidden(
        "rfc-7413-forbids",
        (
            r"RFC 7413 (therefore )?(forbids|bans|prohibits|allows Fast Open only for)",
            r"(forbids|bans|prohibits) (a |the )?POST",
        ),
        a_replayed_syn_reaches_the_application_twice,
        "RFC 7413 asks for replay-tolerant requests; POST is its example, not a ban",
    ),
    Forbidden(
        "gain-capped-at-100",
        (
            r"never exceeds? (it|100)",
            r"cannot go above",
            r"(physical )?limit is 100 ?%",
            r"100 ?% plus noise",
            r"pay alike[^.]*lateness",
        ),
        cpu_not_lateness_moves_the_gain_off_100,
        "the CPU term can take the gain past 100 %; lateness scales with the round trips",
    ),
    Forbidden(
        "minshall-credited-to-rfc-896",
        (
            r"RFC 896\)[^.]*while one small segment is unacknowledged",
            r"Minshall[^.]{0,40}\b(from|in|of) RFC 896",
            r"RFC 896[^.]{0,30}\b(by|from) (Greg )?Minshall",
        ),
        nagle_holds_only_behind_a_small_segment,
        "Minshall's variant is Greg Minshall's 1999 draft, not RFC 896",
    ),
    Forbidden(
        "delack-cap-only-past-40ms",
        (r"(ato that has|once ato has) grown past the 40 ms",),
        every_delayed_ack_is_capped,
        "tcp_send_delayed_ack caps every ato, the 40 ms one too",
    ),
    Forbidden(
        "pingpong-sysctl-misdated",
        (
            r"since Linux 6\.5",
            r"needs Linux 6\.x",
            r"reaches `?net\.ipv4\.tcp_pingpong_thresh`? \(default 1",
        ),
        the_pingpong_threshold_is_one_unless_set,
        "net.ipv4.tcp_pingpong_thresh exists since 6.7; before, a constant (3, then 1)",
    ),
    Forbidden(
        "wscale-10-needs-tuning",
        (r"machine tuned to 32 MiB",),
        the_window_scale_follows_tcp_rmem,
        "32 MiB is tcp_rmem[2]'s default since 6.16",
    ),
    Forbidden(
        "active-fail-on-one-timeout",
        (r"timed out and was retransmitted \(`?tcp_write_timeout",),
        active_fail_needs_no_timeout,
        "tcp_write_timeout counts ActiveFail only from the third timeout in a row",
    ),
    Forbidden(
        "cookie-per-destination",
        (r"per destination IP", r"per (server|destination) address\b"),
        the_cookie_depends_on_the_addresses_only,
        "the cookie and its cache entry belong to the (source, destination) pair",
    ),
    Forbidden(
        "ping-sees-the-stand-in",
        (r"`ping` show\?\*\* > Answer: 20 ms",),
        the_nfqueue_rule_queues_tcp_only,
        "ping shows the added RTT only with netem; the stand-in queues TCP only",
    ),
    Forbidden(
        "autocorking-setting",
        (r"autocorking=(false|true|off|on)", r"--set autocorking"),
        autocorking_is_no_setting,
        "autocorking is no setting of the scenario schema",
    ),
    Forbidden(
        "ack-deferral-misdated",
        (r"6\.8\+? defers", r"from 6\.8"),
        the_backlog_ack_is_a_race,
        "TCP_ACK_DEFERRED is in 6.7 (133c4c0d3717, net-next September 2023)",
    ),
    Forbidden(
        "at-least-two-quick-acks",
        (r"at least 2, at most 16",),
        quick_acks_may_be_one,
        "tcp_incr_quickack grants 1 when rcv_wnd / (2 x rcv_mss) is 1",
    ),
    Forbidden(
        "timer-always-resets-ato",
        (r"the ACK goes out, the socket leaves pingpong mode, and ato is reset",),
        the_timer_doubles_ato_outside_pingpong,
        "outside pingpong the timer doubles ato",
    ),
    Forbidden(
        "quickack-never-acks-queued-data",
        (
            r"TCP_QUICKACK does not ACK while anything is queued",
            r"leaves pingpong and sends any pending ACK",
        ),
        quickack_acks_full_segments_before_the_read,
        "TCP_QUICKACK ACKs more than one full segment before the read, a small one only "
        "once nothing is queued",
    ),
    Forbidden(
        "connect-always-defers",
        (r"with the kernel holding the SYN back until the write so",),
        fastopen_connect_defers_only_with_a_cookie,
        "TCP_FASTOPEN_CONNECT defers the SYN only with a cookie cached",
    ),
)


@pytest.mark.parametrize("claim", FORBIDDEN, ids=[c.name for c in FORBIDDEN])
def test_no_text_says_what_the_model_contradicts(claim: Forbidden) -> None:
    claim.fact()
    for pattern in claim.patterns:
        assert not said(pattern), f"{claim.why}: {said(pattern)}"


@dataclass(frozen=True)
class Required:
    name: str
    files: tuple[str, ...]
    pattern: Callable[[], str]
    fact: Callable[[], None]


def _bench_concurrencies() -> str:
    c = {d: auto_concurrency(d, BENCH_REQUESTS) for d in (0, 1, 10, 75)}
    return re.escape(f"{c[1]} at D = 1, {c[10]} at D = 10, {c[75]} at D = 75")


def _cpu_concurrency() -> str:
    return re.escape(f"C = {auto_concurrency(0, BENCH_REQUESTS)} at D = 0")


REQUIRED = (
    Required(
        "transfer-flights",
        ("transfer.md",),
        lambda: (
            r"Flights of 10, 20 and then the remaining 12"
            r".*Last byte at 4D \+ 2 x 2D = 8D = 80 ms"
            r".*flights of 10, 20, 40, 80 and the remaining 58\."
            r" Five flights: 4D \+ 4 x 2D = 12D = 120 ms"
        ),
        slow_start_flights,
    ),
    Required(
        "transfer-fastopen-refused",
        ("transfer.md",),
        lambda: (
            r"`slow-start` would end at 6D = 60 ms instead of 80 ms"
            r".*The model refuses to run these two with Fast Open yet"
        ),
        fast_open_is_refused_for_a_big_answer,
    ),
    Required(
        "bare-retransmitted-syn",
        ("bench.md",),
        lambda: r"retransmitted SYN is bare",
        syn_data_travels_apart_from_the_syn,
    ),
    Required(
        "syn-resent-without-data",
        ("fastopen.md", "TCP-NOTES.md"),
        lambda: r"retransmits a lost SYN without its data",
        syn_data_travels_apart_from_the_syn,
    ),
    Required(
        "client-still-acks",
        ("bench.md",),
        lambda: r"which the client still sends",
        the_client_acks_the_synack,
    ),
    Required(
        "two-client-acks",
        ("fastopen.md",),
        lambda: r"the client sends two ACKs, not one",
        the_client_acks_the_synack,
    ),
    Required(
        "rfc-7413-replays",
        ("bench.md",),
        lambda: r"RFC 7413[^.]*tolerate being received twice",
        a_replayed_syn_reaches_the_application_twice,
    ),
    Required(
        "gain-formula",
        ("bench.md",),
        lambda: r"plain / TFO - 1",
        cpu_not_lateness_moves_the_gain_off_100,
    ),
    Required(
        "gain-past-100-by-cpu",
        ("bench.md",),
        lambda: r"passes 100% when a TFO request costs less than half the CPU",
        cpu_not_lateness_moves_the_gain_off_100,
    ),
    Required(
        "minshall-named",
        ("delack.md",),
        lambda: r"Minshall's variant[^.]*\"A Proposed Modification to Nagle's Algorithm\", 1999",
        nagle_holds_only_behind_a_small_segment,
    ),
    Required(
        "cap-includes-40ms",
        ("delack.md", "TCP-NOTES.md"),
        lambda: r"the 40 ms one included",
        every_delayed_ack_is_capped,
    ),
    Required(
        "rto-min-us-caps-the-delay",
        ("delack.md",),
        lambda: r"since 6\.11 also the sysctl `net\.ipv4\.tcp_rto_min_us`",
        every_delayed_ack_is_capped,
    ),
    Required(
        "pingpong-sysctl-dated",
        ("delack.md", "TCP-NOTES.md"),
        lambda: r"since Linux 6\.7",
        the_pingpong_threshold_is_one_unless_set,
    ),
    Required(
        "every-third-round",
        ("delack.md",),
        lambda: r"pingpong_thresh=3[^.]*only every third round stalls",
        the_pingpong_threshold_is_one_unless_set,
    ),
    Required(
        "delack-band",
        ("TCP-NOTES.md",),
        lambda: r"40-44 ms",
        the_delayed_ack_fires_40_to_44_ms_late,
    ),
    Required(
        "delack-band-guide",
        ("delack.md",),
        lambda: r"40\.\.44 ms at HZ=250",
        the_delayed_ack_fires_40_to_44_ms_late,
    ),
    Required(
        "wscale-default-since-6.16",
        ("TCP-NOTES.md",),
        lambda: r"7 with 6 MiB, Linux's default before 6\.16, and 10 with 32 MiB",
        the_window_scale_follows_tcp_rmem,
    ),
    Required(
        "active-fail-both-paths",
        ("fastopen.md",),
        lambda: (
            r"`tcp_rcv_fastopen_synack` counts it[^.]*\. "
            r"`tcp_fastopen_active_detect_blackhole`"
        ),
        active_fail_needs_no_timeout,
    ),
    Required(
        "cookie-per-pair",
        ("fastopen.md",),
        lambda: r"per pair of addresses",
        the_cookie_depends_on_the_addresses_only,
    ),
    Required(
        "cookie-cache-per-pair",
        ("TCP-NOTES.md",),
        lambda: r"keyed by the \(source, destination\) address pair",
        the_cookie_depends_on_the_addresses_only,
    ),
    Required(
        "ping-only-with-netem",
        ("handshake.md",),
        lambda: r"Answer: With netem, 20 ms[^>]*queues TCP only",
        the_nfqueue_rule_queues_tcp_only,
    ),
    Required(
        "autocorking-set-by-tfolab",
        ("delack.md",),
        lambda: r"autocorking is no setting of the lab",
        autocorking_is_no_setting,
    ),
    Required(
        "ack-deferral-dated",
        ("TCP-NOTES.md",),
        lambda: r"From 6\.7 \(so on 6\.18\) `tcp_add_backlog` still merges[^.]*TCP_ACK_DEFERRED",
        the_backlog_ack_is_a_race,
    ),
    Required(
        "timer-doubles-ato",
        ("TCP-NOTES.md",),
        lambda: r"any other socket keeps its mode and its ato doubles",
        the_timer_doubles_ato_outside_pingpong,
    ),
    Required(
        "connect-defer-named",
        ("fastopen.md",),
        lambda: (
            r"With a cookie cached, the kernel holds the SYN back"
            r"[^.]*tcp_fastopen_defer_connect"
        ),
        fastopen_connect_defers_only_with_a_cookie,
    ),
    Required(
        "quickack-before-the-read",
        ("TCP-NOTES.md",),
        lambda: r"TCP_QUICKACK ACKs before the read when more than one full segment waits",
        quickack_acks_full_segments_before_the_read,
    ),
    Required(
        "bench-concurrency",
        ("bench.md",),
        _bench_concurrencies,
        the_bench_concurrency_rule,
    ),
    Required(
        "bench-cpu-concurrency",
        ("bench.md",),
        _cpu_concurrency,
        the_bench_concurrency_rule,
    ),
)


@pytest.mark.parametrize("claim", REQUIRED, ids=[c.name for c in REQUIRED])
def test_the_texts_state_what_the_model_does(claim: Required) -> None:
    claim.fact()
    pattern = claim.pattern()
    for name in claim.files:
        assert said(pattern, (name,)), f"{name} no longer says /{pattern}/"


def test_the_grading_allowance_is_stated_with_its_cap() -> None:
    """README: the 10 % allowance is capped at MAX_RELATIVE_ALLOWANCE_MS."""
    assert MAX_RELATIVE_ALLOWANCE_MS == 20.0
    assert f"at most {MAX_RELATIVE_ALLOWANCE_MS:g} ms" in fold(README.read_text())


def test_every_forbidden_pattern_can_match() -> None:
    """Each forbidden pattern matches the wrong sentence it was written against, so a
    regex typo cannot make a check pass vacuously."""
    wrong = {
        "retransmitted-syn-with-data": "a retransmitted or duplicated SYN carries the same data",
        "fast-open-saves-the-ack": "What TFO still saves is work: the client's separate "
        "handshake ACK",
        "rfc-7413-forbids": "RFC 7413 therefore allows Fast Open only for requests",
        "gain-capped-at-100": "Why the gain tends to 100% and never exceeds it",
        "minshall-credited-to-rfc-896": "Nagle's algorithm (RFC 896) stops a sender: while "
        "one small segment is unacknowledged, the next one waits",
        "delack-cap-only-past-40ms": "the cap tcp_send_delayed_ack puts on an ato that has "
        "grown past the 40 ms minimum",
        "pingpong-sysctl-misdated": "the sysctl exists since Linux 6.5",
        "wscale-10-needs-tuning": "10 on a machine tuned to 32 MiB",
        "active-fail-on-one-timeout": "the SYN carrying data timed out and was retransmitted "
        "(`tcp_write_timeout`)",
        "cookie-per-destination": "the client caches it per destination IP",
        "ping-sees-the-stand-in": "What RTT would `ping` show?** > Answer: 20 ms. netem",
        "autocorking-setting": "with netem, add `--set autocorking=false`",
        "ack-deferral-misdated": "tcp_add_backlog coalesces them and 6.8+ defers their ACK",
        "at-least-two-quick-acks": "quick ACKs (at least 2, at most 16)",
        "timer-always-resets-ato": "the ACK goes out, the socket leaves pingpong mode, and ato "
        "is reset to 40 ms",
        "connect-always-defers": "with the kernel holding the SYN back until the write so the "
        "data can ride in it",
        "quickack-never-acks-queued-data": "`TCP_QUICKACK` works once: it leaves pingpong and "
        "sends any pending ACK, but",
    }
    assert set(wrong) == {c.name for c in FORBIDDEN}
    for claim in FORBIDDEN:
        assert any(re.search(p, wrong[claim.name], re.IGNORECASE) for p in claim.patterns), (
            claim.name
        )

"""The guides and notes never contradict the model where a statement can be checked.

Each claim pairs what the text must not say (or must say) with the model's
own behaviour that decides it, so a sentence that drifts from the model, or a
model that drifts from the sentence, fails here. The texts are every lab's
guide (bench.md too), docs/TCP-NOTES.md and the model's explanations.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.model.scenarios import scenario
from tfolab.lab.catalog import labs_dir
from tfolab.lab.grading import MAX_RELATIVE_ALLOWANCE_MS
from tfolab.model import Segment, simulate
from tfolab.model.scenario import ScenarioConfig

NOTES = Path(__file__).resolve().parents[2] / "docs" / "TCP-NOTES.md"


def texts() -> dict[str, str]:
    """Every guide and the notes, folded to one line per paragraph."""
    found = {path.name: path.read_text() for path in sorted(labs_dir().glob("*.md"))}
    found[NOTES.name] = NOTES.read_text()
    return {name: re.sub(r"\s+", " ", text) for name, text in found.items()}


def said(pattern: str) -> list[str]:
    """Where `pattern` (a regex, case-insensitive) occurs: 'file: ...context...'."""
    out = []
    for name, text in texts().items():
        for match in re.finditer(pattern, text, re.IGNORECASE):
            out.append(f"{name}: ...{text[max(match.start() - 60, 0) : match.end() + 60]}...")
    return out


def test_a_retransmitted_syn_is_never_said_to_carry_the_data() -> None:
    """The model's Fast Open client keeps the bare SYN for a retransmission (its SYN data
    left in a copy, tcp_send_syn_data); no text may say the resent SYN carries it again."""
    assert not said(r"retransmitted (or duplicated )?SYN carries the (same )?data")
    assert said(r"retransmitted SYN is bare|retransmits a lost SYN without its data")


def test_fast_open_keeps_the_clients_handshake_ack() -> None:
    """A request that fits in the SYN still draws a pure ACK of the SYN-ACK (the model's
    tcp_rcv_synsent_state_process rule): no text may say Fast Open saves that ACK."""
    sim = simulate(scenario("fastopen", "cookie").config, one_way_delay_ms=10, iterations=2)
    client_acks = [
        e for e in sim.events
        if isinstance(e, Segment) and e.connection == 2 and e.sender == "client"
        and e.flags == ("ACK",) and e.ack == 1
    ]  # fmt: skip
    assert client_acks, "the model's Fast Open client ACKs the SYN-ACK"
    assert not said(r"saves[^.]{0,40}(separate )?handshake ACK")


def test_no_text_says_rfc_7413_forbids_a_method() -> None:
    assert not said(r"RFC 7413 (therefore )?(forbids|allows Fast Open only for)")


def test_minshalls_variant_is_not_credited_to_rfc_896() -> None:
    """The model holds a small segment only behind an unacknowledged small one
    (tcp_minshall_check): the text must name Minshall for it."""
    config = ScenarioConfig(pattern="wwr", fresh_connection_each_iteration=False)
    sim = simulate(config, one_way_delay_ms=10, iterations=2)
    assert any("tcp_minshall_check" in e.explanation for e in sim.events)
    assert not said(r"RFC 896\)[^.]*while one small segment is unacknowledged")
    assert said(r"Minshall")


def test_the_window_scale_follows_the_kernels_default() -> None:
    """The model derives wscale 7 from 6 MiB and 10 from 32 MiB (window.initial_wscale); the
    notes must not call 32 MiB a tuned machine: it is 6.16's default."""
    from tfolab.model.window import initial_wscale

    assert (initial_wscale(6 << 20), initial_wscale(32 << 20)) == (7, 10)
    assert not said(r"machine tuned to 32 MiB")


def test_the_pingpong_sysctl_is_dated_exactly() -> None:
    assert not said(r"needs Linux 6\.x")
    assert said(r"since Linux 6\.5")


def test_the_delayed_ack_band_is_stated_as_the_model_fires_it() -> None:
    """At HZ=250 the model's 40 ms timer fires 40-44 ms after arming; the notes say so."""
    sim = simulate(scenario("delack", "nagle").config, one_way_delay_ms=10, iterations=3)
    stalls = [p.predicted_ms - 4 * 10 for p in sim.predictions if p.timers_on_path]
    assert stalls and all(40 < stall <= 44 for stall in stalls)
    assert said(r"40-44 ms")


def test_the_grading_allowance_is_stated_with_its_cap() -> None:
    assert MAX_RELATIVE_ALLOWANCE_MS == 20.0
    readme = (NOTES.parents[1] / "README.md").read_text()
    assert "at most 20 ms" in re.sub(r"\s+", " ", readme)


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        (r"autocorking=false", "autocorking is no setting (the model is netem's link)"),
        (r"per destination IP", "the cookie cache is keyed by both addresses (tcp_metrics)"),
        (r"never exceeds it", "the gain passes 100 % through CPU savings or noise"),
    ],
)
def test_retired_claims_stay_retired(pattern: str, why: str) -> None:
    assert not said(pattern), why

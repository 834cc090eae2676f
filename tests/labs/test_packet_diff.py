"""The packet comparison (tfolab.lab.packets): what counts as a disagreement, in words.

The "kernel" here is the model's own timeline turned into captured rows, then
changed one way at a time, so each sentence is pinned against a known cause.
"""

from __future__ import annotations

import msgspec
import pytest

from tests.model.scenarios import scenario
from tfolab.lab import packets
from tfolab.model import simulate
from tfolab.model.events import Timer
from tfolab.runner.protocol import CapturedRow

BAND_MS = 1.8


def _sim(name: str):
    item = scenario("fastopen", name)
    return simulate(item.config, one_way_delay_ms=10, iterations=2)


def _as_captured(rows: list[packets.Row], *, race_acks: bool) -> list[CapturedRow]:
    """What a capture of exactly the model's segments would hold."""
    return [
        CapturedRow(
            t_ms=r.arrived_ms,
            connection=r.connection,
            sender=r.sender,
            flags=list(r.flags),
            seq=r.seq,
            ack=r.ack,
            length=r.length,
            options=[o.replace("TFO cookie", "TFO cookie 0011223344556677") if o == "TFO cookie"
                     else o for o in r.options],
        )
        for r in rows
        if race_acks or not r.optional
    ]  # fmt: skip


def _diff(sim, kernel_rows: list[CapturedRow]) -> list[str]:
    starts = packets.model_starts(sim)
    return packets.packet_diff(
        packets.model_rows(sim), packets.captured_rows(kernel_rows), BAND_MS, starts, starts
    )


@pytest.mark.parametrize("race_acks", [False, True])
def test_both_outcomes_of_a_named_race_agree(race_acks: bool) -> None:
    sim = _sim("no-cookie")
    assert any(isinstance(e, Timer) and e.race for e in sim.events)
    assert _diff(sim, _as_captured(packets.model_rows(sim), race_acks=race_acks)) == []


def test_a_segment_the_model_lacks_is_one_sentence() -> None:
    sim = _sim("cookie")
    kernel = _as_captured(packets.model_rows(sim), race_acks=False)
    extra = msgspec.structs.replace(kernel[3], flags=["ACK"], length=0, options=["TS"])
    said = _diff(sim, [*kernel[:4], extra, *kernel[4:]])
    assert len(said) == 1 and "the model has no such segment" in said[0]


def test_a_segment_the_kernel_did_not_send_is_one_sentence() -> None:
    sim = _sim("cookie")
    kernel = _as_captured(packets.model_rows(sim), race_acks=False)
    said = _diff(sim, kernel[:2] + kernel[3:])
    assert len(said) == 1 and "the kernel sent no such segment" in said[0]


def test_a_different_field_names_both_versions() -> None:
    sim = _sim("cookie")
    kernel = _as_captured(packets.model_rows(sim), race_acks=False)
    syn = next(i for i, r in enumerate(kernel) if r.flags == ["SYN"])
    options = [o.replace("wscale 7", "wscale 10") for o in kernel[syn].options]
    kernel[syn] = msgspec.structs.replace(kernel[syn], options=options)
    said = _diff(sim, kernel)
    assert len(said) == 1 and "wscale 10" in said[0] and "wscale 7" in said[0]


def test_a_late_arrival_outside_the_band_is_reported() -> None:
    sim = _sim("cookie")
    kernel = _as_captured(packets.model_rows(sim), race_acks=False)
    kernel[-1] = msgspec.structs.replace(kernel[-1], t_ms=kernel[-1].t_ms + BAND_MS + 0.5)
    said = _diff(sim, kernel)
    assert len(said) == 1 and "the model said" in said[0]
    kernel[-1] = msgspec.structs.replace(kernel[-1], t_ms=kernel[-1].t_ms - 0.5 - 0.4)
    assert _diff(sim, kernel) == []  # 0.4 ms late: inside the band


def test_cookie_bytes_are_the_servers_secret() -> None:
    assert packets.comparable_options(["TFO cookie 0a1b2c3d4e5f6071"]) == ("TFO cookie",)
    assert packets.comparable_options(["TFO cookie 8B"]) == ("TFO cookie",)
    assert packets.comparable_options(["TFO cookie 0a1b (exp. kind 254)"]) == (
        "TFO cookie (exp. kind 254)",
    )
    assert packets.comparable_options(["TFO cookie request"]) == ("TFO cookie request",)

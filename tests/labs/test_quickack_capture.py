"""TCP_QUICKACK before a read ACKs more than one full segment at once (model/delack.py).

The captures are real ones from this host (Linux 6.18.44, NFQUEUE delayer, tcp_rmem
4096 131072 33554432, so window scale 10): delack quickack with TCP_CORK, MTU 3833
and a 7561-byte second write, 4 rounds on one connection. In round 4 rcv_ssthresh
has reached tcp_space(), the two full segments no longer move the window's right
edge, so their ACK waits; the server's setsockopt(TCP_QUICKACK) then runs
tcp_cleanup_rbuf(sk, 1), which sends it at once (7571 bytes unacknowledged, more
than rcv_mss) while the 7571 bytes are still unread: window 98, where the read would
have offered 101. At D = 0 the server may also run before the client's uncork
(two applications woken at once: a named race), and its TCP_QUICKACK then ACKs 30276.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import msgspec
import pytest

from tfolab.lab import packets
from tfolab.lab.catalog import find_lab
from tfolab.lab.disagreements import WrongWindow
from tfolab.lab.plan import plan
from tfolab.model import Simulation, simulate
from tfolab.model.captured import CapturedRow
from tfolab.model.delack import AckState, DelackRules
from tfolab.model.loop import World
from tfolab.model.rcv_space import receive_memory_for

CAPTURES = Path(__file__).parent / "captures"
RMEM = (4096, 131072, 33554432)  # this host's tcp_rmem: 32 MiB, window scale 10
SKB_HEAD = 832  # the runner's measured truesize beyond the payload at this MTU
SETTINGS = {"cork": "true", "mtu": "3833", "second_write_bytes": "7561"}


def capture(name: str) -> tuple[float, list[CapturedRow]]:
    data = json.loads((CAPTURES / f"quickack-cork-{name}.json").read_text())
    return data["delay_ms"], msgspec.convert(data["captured"], list[CapturedRow])


def model(delay_ms: float) -> Simulation:
    (quickack,) = plan(find_lab("delack"), "quickack", 4, SETTINGS, delay_ms=delay_ms).scenarios
    rules = receive_memory_for((6, 18), RMEM[1], RMEM[2])
    return simulate(
        quickack.config,
        one_way_delay_ms=delay_ms,
        iterations=4,
        receive_space_bytes=RMEM[2],
        receive_memory=dataclasses.replace(rules, skb_head_truesize=SKB_HEAD),
    )


def compared(name: str) -> packets.PacketComparison:
    delay_ms, rows = capture(name)
    return packets.compare(model(delay_ms), rows, {})


@pytest.mark.parametrize("name", ["d62-6.18", "d0-6.18-server-first", "d0-6.18-acked-at-once"])
def test_every_capture_agrees_windows_included(name: str) -> None:
    comparison = compared(name)
    assert comparison.sentences == []
    assert comparison.matching[0] == comparison.matching[1] >= 39


def test_the_quickack_ack_carries_the_window_of_the_unread_data() -> None:
    comparison = compared("d62-6.18")
    ours, theirs = next(
        (p.model, p.kernel)
        for p in comparison.pairs
        if p.model is not None and p.model.sender == "server" and p.model.ack == 30285
    )
    assert theirs is not None and ours.length == 0
    assert ours.window == theirs.window == 98


def test_the_server_first_order_is_a_named_race_used() -> None:
    """D = 0: the server's TCP_QUICKACK before the client's uncork is the other order of
    two applications woken at once; the capture with ACK 30276 takes it, counted."""
    first = compared("d0-6.18-server-first")
    assert first.simulation.latest_app_first
    assert first.races_used >= 1
    assert not compared("d62-6.18").simulation.latest_app_first


def _old_rule(self: DelackRules, st: AckState, established: bool) -> bool:
    """The rule before: TCP_QUICKACK sent a pending ACK only once nothing was queued,
    so round 4's ACK waited for the read and offered the freed memory's window."""
    del self, established
    st.pingpong = 0
    return False


def test_the_old_rule_misses_the_window_of_round_4(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the race of a setsockopt run before the burst's last segment (a
    "quickack" lock point, test_quickack_early_capture.py), which this capture needs
    none of with the rule, the old rule misses round 4's window; with that point, the
    old rule would need a race the kernel did not run."""
    assert compared("d62-6.18").simulation.lock_early == frozenset()
    monkeypatch.setattr(DelackRules, "set_quickack", _old_rule)
    assert compared("d62-6.18").simulation.lock_early == {(1, "server", 30276, "quickack")}
    monkeypatch.setattr(World, "_quickacked", lambda *args: None)
    found = compared("d62-6.18").disagreements
    assert [type(d) for d in found] == [WrongWindow]
    assert "window 98" in found[0].sentence() and "says 101" in found[0].sentence()

"""The delay backends' command lines, built by pure functions (no shell strings)."""

from __future__ import annotations

from tfolab.model.scenario import ScenarioConfig
from tfolab.runner.backends.netem import netem_args
from tfolab.runner.backends.nfqueue import delayer_args
from tfolab.runner.backends.nfrule import iptables_args
from tfolab.runner.server import server_args


def test_netem_args_delay_every_packet_on_lo() -> None:
    assert netem_args(10) == [
        "tc",
        "qdisc",
        "replace",
        "dev",
        "lo",
        "root",
        "netem",
        "delay",
        "10ms",
        "limit",
        "100000",
    ]
    assert netem_args(2.5)[8] == "2.5ms"


def test_iptables_fallback_sends_only_tcp_on_lo_and_bypasses_when_the_delayer_dies() -> None:
    args = iptables_args("iptables", 7)
    assert args[:4] == ["iptables", "-w", "-A", "INPUT"]  # the receiving end
    assert args[args.index("-i") + 1] == "lo"
    assert args[args.index("-p") + 1] == "tcp"
    assert args[-3:] == ["--queue-num", "7", "--queue-bypass"]


def test_delayer_args() -> None:
    assert delayer_args("/x/tfo-delay", 10.0, 3) == [
        "/x/tfo-delay",
        "--queue",
        "3",
        "--delay-ms",
        "10.000000",
        "--die-with-parent",
        "--stats-json",
    ]


def test_server_args_follow_the_scenario() -> None:
    plain = server_args("srv", ScenarioConfig())
    assert "--tfo" not in plain and "--quickack" not in plain and "--die-with-parent" in plain
    tuned = server_args("srv", ScenarioConfig(server_fastopen_qlen=16, server_quickack=True))
    assert tuned[tuned.index("--tfo") + 1] == "16" and "--quickack" in tuned

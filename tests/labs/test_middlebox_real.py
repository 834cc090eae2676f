"""A middlebox on the path, for real: the NFQUEUE delayer drops or rewrites Fast Open
SYNs (native/delay/middlebox.c) and the kernel's answer agrees with the model's, packet
for packet and counter for counter (model/path.py, syn_timer.py).

Under the timing lock, like every real run. Skips with the reason where there is no lab
namespace or no NFQUEUE delayer.
"""

from __future__ import annotations

from tests.conftest import TIMING, LabMachine
from tests.labs.lossy_runs import lossy_run as _run


def _client_syns(scenario: dict[str, object]) -> list[dict[str, object]]:
    captured = scenario["captured"]
    assert isinstance(captured, list)
    return [r for r in captured if r["flags"] == ["SYN"] and r["sender"] == "client"]


@TIMING
def test_a_middlebox_that_drops_syn_data_costs_every_connection_the_syn_timer(
    lab_machine: LabMachine,
) -> None:
    scenario = _run(
        "--delay", "13", "--iterations", "2", lab="fastopen", scenario="middlebox-drops-syn-data"
    )  # fmt: skip
    syns = [(r["connection"], r["length"], r.get("lost", False)) for r in _client_syns(scenario)]
    assert syns == [(1, 16, True), (1, 0, False), (2, 16, True), (2, 0, False)]
    assert scenario["counters"]["TCPFastOpenActiveFail"] == 2
    assert scenario["counter_diff"] == []


@TIMING
def test_a_middlebox_that_strips_the_option_leaves_plain_handshakes(
    lab_machine: LabMachine,
) -> None:
    """The option is taken out of the SYN (the header shrunk, both checksums computed
    again): the server sees a plain SYN, no cookie ever comes back."""
    scenario = _run(
        "--delay", "13", "--iterations", "2", lab="fastopen", scenario="middlebox-strips-option"
    )  # fmt: skip
    captured = scenario["captured"]
    assert isinstance(captured, list)
    handshake = [r for r in captured if "SYN" in r["flags"]]
    assert handshake and not any("TFO" in " ".join(r["options"]) for r in handshake)
    assert scenario["counters"]["TCPFastOpenCookieReqd"] == 0
    assert scenario["counter_diff"] == []


@TIMING
def test_a_middlebox_that_drops_tfo_syns_delays_a_cookie_request(lab_machine: LabMachine) -> None:
    scenario = _run(
        "--set", "middlebox=drop-tfo-syn", "--delay", "13", "--iterations", "1",
        lab="fastopen", scenario="cookie-request",
    )  # fmt: skip
    syns = _client_syns(scenario)
    assert [r.get("lost", False) for r in syns] == [True, False]
    assert "TFO cookie request" in syns[0]["options"] and len(syns[1]["options"]) == 4
    assert scenario["counter_diff"] == []

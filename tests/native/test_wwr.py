"""Write-write-read on loopback, no added delay (docs/TCP-NOTES.md: Nagle + delayed ACK).

From round 2 on the server is interactive and delays its ACK; Nagle holds the
second write until that ACK: a round takes the delayed-ACK timer, 40 ms plus up to
one tick (44 ms at HZ=250, at most 50 ms at HZ=100). TCP_NODELAY, TCP_CORK,
MSG_MORE, one write, or a server that sets TCP_QUICKACK before every read remove
the stall. Checked through the ctypes client and through tfo-echo-client --json.
"""

from __future__ import annotations

import pytest

from tests.conftest import TIMING
from tests.native.netns import run_in_netns
from tests.native.support import client_json, echo_server
from tests.timing import assert_in_band
from tfolab.core import native

ROUNDS = 6
STALL_MS = (39.5, 50.5)  # median of rounds 2..N: 40 ms delayed ACK + one tick (HZ >= 100)
ROUND_MS = (38.0, 70.0)  # any single stalled round (a scheduling hiccup may add a tick)
FAST_MS = 5.0  # median of rounds without a stall
HICCUP_MS = 20.0  # any single round: a busy machine may delay one, never by 40 ms


def assert_fast(rounds: list[float]) -> None:
    """No round waits for a delayed ACK (times: TimingMiss, tests/timing.py)."""
    median = sorted(rounds)[len(rounds) // 2]
    assert_in_band(median, 0, FAST_MS, f"median round of {rounds}")
    assert_in_band(max(rounds), 0, HICCUP_MS, f"slowest round of {rounds}")


def assert_stalls(rounds: list[float]) -> None:
    """Round 1 is fast (quick-ACK mode), rounds 2..N wait for the delayed ACK."""
    assert_in_band(rounds[0], 0, HICCUP_MS, f"round 1 of {rounds}")
    later = sorted(rounds[1:])
    assert_in_band(later[len(later) // 2], *STALL_MS, f"median stalled round of {rounds}")
    for ms in later:
        assert_in_band(ms, *ROUND_MS, f"a stalled round of {rounds}")


def _ctypes_rounds(client_flags: dict[str, bool], server_flags: tuple[str, ...]) -> list[float]:
    with echo_server("--mode", "line", *server_flags) as (_, port):
        samples = native.run_client(
            native.ClientOptions(port=port, pattern="wwr", iterations=ROUNDS, **client_flags)
        )
    assert [s.error for s in samples] == [None] * ROUNDS
    return [s.round_ms for s in samples]


@TIMING
def test_wwr_stalls_on_delayed_ack_from_round_two() -> None:
    assert_stalls(run_in_netns(_ctypes_rounds, {}, ()))


@TIMING
@pytest.mark.parametrize(
    "client_flags",
    [{"nodelay": True}, {"cork": True}, {"msg_more": True}, {"single_write": True}],
    ids=["nodelay", "cork", "msg_more", "single_write"],
)
def test_wwr_without_the_nagle_stall(client_flags: dict[str, bool]) -> None:
    assert_fast(run_in_netns(_ctypes_rounds, client_flags, ()))


@TIMING
def test_server_quickack_removes_the_stall() -> None:
    assert_fast(run_in_netns(_ctypes_rounds, {}, ("--quickack",)))


@TIMING
def test_server_nodelay_does_not_remove_the_stall() -> None:
    assert_stalls(run_in_netns(_ctypes_rounds, {}, ("--nodelay",)))


def _executable_rounds(*client_flags: str) -> list[dict[str, object]]:
    with echo_server("--mode", "line") as (_, port):
        result = client_json(
            "--connect", f"127.0.0.1:{port}", "--pattern", "wwr",
            "--iterations", str(ROUNDS), *client_flags,
        )  # fmt: skip
    assert result["pattern"] == "wwr" and result["iterations"] == ROUNDS
    return result["samples"]  # type: ignore[no-any-return]


@TIMING
def test_executable_json_shows_the_stall() -> None:
    samples = run_in_netns(_executable_rounds)
    assert [s["error"] for s in samples] == [None] * ROUNDS
    assert samples[0]["connect_ms"] is not None and samples[1]["connect_ms"] is None
    for s in samples:
        assert len(s["write_ns"]) == 2
        expected = (s["last_byte_ns"] - s["write_ns"][0]) / 1e6
        assert s["round_ms"] == pytest.approx(expected, abs=0.001)
    assert_stalls([s["round_ms"] for s in samples])  # type: ignore[misc]


@TIMING
def test_executable_json_nodelay_is_fast() -> None:
    samples = run_in_netns(_executable_rounds, "--nodelay")
    assert_fast([s["round_ms"] for s in samples])  # type: ignore[misc]

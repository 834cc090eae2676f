"""tfo-bench-client for real, in a namespace: N fresh GETs, C in flight, TFO or plain.

The kernel's own counters are the oracle: with --tfo every measured request's
data rode in the SYN (TCPFastOpenActive and TCPFastOpenPassive move by N, and
the client saw TCPI_OPT_SYN_DATA N times); plain moves neither.
"""

from __future__ import annotations

import json
import resource
from typing import Any

from tests.native.netns import run_in_netns
from tests.native.support import echo_server, run, tcpext
from tfolab.core import native

N = 40


def _client(port: int, *flags: str) -> tuple[int, list[str], dict[str, Any]]:
    exe = native.executable_path("tfo-bench-client")
    done = run([str(exe), "--connect", f"127.0.0.1:{port}", *flags])
    lines = done.stdout.splitlines()
    return done.returncode, lines[:-1], json.loads(lines[-1]) if lines else {}


def _session() -> dict[str, Any]:
    found: dict[str, Any] = {}
    with echo_server("--mode", "http", "--tfo", "256") as (_, port):
        for name, flags in (("plain", ()), ("tfo", ("--tfo",))):
            for concurrency in ("1", "8"):
                before = tcpext()
                code, progress, out = _client(
                    port, "--requests", str(N), "--concurrency", concurrency,
                    "--progress", "10", *flags,
                )  # fmt: skip
                after = tcpext()
                found[f"{name}/{concurrency}"] = {
                    "code": code,
                    "progress": progress,
                    "out": out,
                    "active": after["TCPFastOpenActive"] - before["TCPFastOpenActive"],
                    "passive": after["TCPFastOpenPassive"] - before["TCPFastOpenPassive"],
                }
    # Nothing listens any more: the warm-up's connect is refused, exit 1, said in JSON.
    found["refused"] = _client(port, "--requests", "2")
    return found


def test_plain_and_fastopen_requests_with_and_without_concurrency() -> None:
    found = run_in_netns(_session, timeout=60)
    for key in ("plain/1", "plain/8", "tfo/1", "tfo/8"):
        run_ = found[key]
        out = run_["out"]
        assert run_["code"] == 0, out
        assert out["error"] is None and out["completed"] == N
        assert len(out["latency_us"]) == N and all(v > 0 for v in out["latency_us"])
        assert out["end_ns"] > out["start_ns"] > 0
        # Per request at most three wake-ups: the connect completing (plain), the
        # response, and the server's close when its FIN comes in a segment of its own.
        assert 1 <= out["wakeups"] <= 3 * N + 1 and out["cpu_us"] > 0
        assert out["concurrency"] == int(key.split("/")[1])
        assert run_["progress"] == ["progress 10", "progress 20", "progress 30"]
        # The warm-up request (unmeasured) comes first and counts in the counters:
        # without a cookie it only asks for one (no SYN data), so exactly N move.
        if key.startswith("tfo"):
            assert out["fastopen"] == "sendto" and out["syn_data_acked"] == N
            expected = N if key == "tfo/1" else N + 1  # tfo/8's warm-up has the cookie
            assert run_["active"] == expected and run_["passive"] == expected
        else:
            assert out["fastopen"] == "off" and out["syn_data_acked"] == 0
            assert run_["active"] == 0 and run_["passive"] == 0
    code, _, out = found["refused"]
    assert code == 1
    assert out["error"] == {"request": 0, "call": "connect", "errno": "ECONNREFUSED"}


def test_bad_input_exits_2_with_one_line() -> None:
    exe = str(native.executable_path("tfo-bench-client"))
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    cases = [
        (["--requests", "5"], "missing --connect"),
        (["--connect", "127.0.0.1:1", "--requests", "0"], "--requests"),
        (["--connect", "127.0.0.1:1", "--concurrency", "70000"], "--concurrency"),
        (["--connect", "localhost:80"], "not an IPv4 or IPv6 address"),
        (["--connect", "127.0.0.1"], "is not HOST:PORT"),
        (["--connect", "127.0.0.1:1", "--frob"], "--frob"),
    ]
    if soft + 16 <= 65535:
        cases.append((["--connect", "127.0.0.1:1", "--concurrency", str(soft)], "RLIMIT_NOFILE"))
    for args, expected in cases:
        done = run([exe, *args])
        assert done.returncode == 2, (args, done.stderr)
        lines = done.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("tfo-bench-client: "), done.stderr
        assert expected in lines[0], (args, lines[0])
        assert done.stdout == ""

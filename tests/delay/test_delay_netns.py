"""tfo-delay against the real kernel, each test in a fresh network namespace.

Every test runs ns_scenarios.py (or the accuracy benchmark) under
``unshare --net``: lo up, an NFQUEUE rule on the namespace's INPUT chain,
the delayer bound, real sockets.  The host's iptables, lo and sysctls are never
touched.  Skipped, with the reason, where root, namespaces or NFQUEUE are
missing.
"""

from __future__ import annotations

import json
import socket
import statistics
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TIMING
from tests.timing import assert_in_band, assert_near

from .conftest import run_in_netns

pytestmark = [pytest.mark.root, pytest.mark.usefixtures("nfqueue_netns")]

BENCHMARK = Path(__file__).resolve().parent.parent.parent / "benchmarks" / "delay_accuracy.py"
STATS_KEYS = {
    "queue",
    "delay_ms",
    "packets",
    "max_queue_depth",
    "enobufs",
    "lost",
    "released_at_exit",
    "verdict_errors",
    "overflow_accepts",
    "kernel_queue_dropped",
    "kernel_user_dropped",
    "late_median_us",
    "late_p99_us",
    "late_max_us",
    "sched",
    "recorded",
    "implausible_stamps",
    "dropped",
    "middlebox_dropped",
    "mangled",
    "middlebox_unparsed",
}


@TIMING
@pytest.mark.parametrize("delay_ms", [0, 0.5, 5, 10, 25])
def test_connect_and_echo_each_take_two_delays(tfo_delay: str, delay_ms: float) -> None:
    # INPUT on lo sees each packet once: SYN and SYN-ACK are delayed once each,
    # so connect() returns after 2D; a data echo (request, response) also adds 2D.
    # What cannot be timing is checked first; then the times (tests/timing.py).
    run = run_in_netns("timing", tfo_delay, "--delay-ms", str(delay_ms), "--iterations", "5")
    rtt = 2 * delay_ms
    for name in ("connect_ms", "echo_ms"):
        # early is never a hiccup: a packet left before its delay
        assert min(run[name]) >= rtt, f"{name} {run[name]}: a packet left before its delay"
    stats = run["stats"]
    assert run["returncode"] == 0
    assert set(stats) == STATS_KEYS
    assert stats["delay_ms"] == pytest.approx(delay_ms)
    # 5 x (SYN, SYN-ACK, ACK, data, echo, FIN/ACK exchange): at least 5 x 5 packets
    assert stats["packets"] >= 25
    assert stats["lost"] == stats["enobufs"] == stats["verdict_errors"] == 0
    assert stats["kernel_queue_dropped"] == stats["kernel_user_dropped"] == 0
    assert stats["implausible_stamps"] == 0
    line = run["stderr"].strip().splitlines()[-1]
    assert line.startswith(
        f"tfo-delay: queue 7 delay {delay_ms:.3f} ms: packets {stats['packets']}, max queue depth "
    )
    assert "lateness us median" in line
    for name in ("connect_ms", "echo_ms"):
        times = run[name]
        assert_near(statistics.median(times), rtt, 1.0, f"{name} median of {times}, 2D = {rtt}")
        assert_in_band(max(times), rtt, rtt + 5.0, f"{name} slowest of {times}")
    assert_in_band(stats["late_median_us"] / 1000, 0, 0.2, "the delayer's median lateness")


def test_burst_arrives_complete_in_order_and_delayed_by_d(tfo_delay: str) -> None:
    # 100 datagrams paced every 0.5 ms, then 300 back to back; the receiver
    # compares its CLOCK_MONOTONIC read time with the send time in the payload.
    done = subprocess.run(
        [
            sys.executable,
            str(BENCHMARK),
            "--binary",
            tfo_delay,
            "--delay-ms",
            "10",
            "--packets",
            "400",
            "--burst",
            "300",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["received"] == 400
    assert result["lost"] == result["duplicates"] == result["reordered"] == 0
    errors = result["error_ms"]
    # The delayer's verdict stamp times the delay itself; the receiver's own
    # clock adds how fast a Python loop drains 300 datagrams, so it only has
    # to show that nothing arrives early.
    for group in ("all_verdict", "burst_verdict"):
        assert errors[group]["median"] <= 0.2, f"{group}: {errors[group]}"
    for group in ("all_receiver", "burst_receiver", "all_verdict", "burst_verdict"):
        assert errors[group]["min"] >= 0.0, f"{group}: delivered early: {errors[group]}"
    delayer = result["delayer"]
    assert delayer["packets"] == 400
    assert delayer["max_queue_depth"] >= 300
    assert delayer["lost"] == delayer["enobufs"] == 0


def test_sigterm_releases_held_packets_then_traffic_bypasses(tfo_delay: str) -> None:
    # UDP every 0.2 ms with D = 3 s: at SIGTERM hundreds are held.  They must
    # all arrive at once, and what is sent afterwards passes undelayed.
    run = run_in_netns("release", tfo_delay, "--delay-ms", "3000", "--stream-s", "0.3")
    stats = run["stats"]
    assert run["returncode"] == 0
    assert stats["released_at_exit"] >= 100
    assert stats["released_at_exit"] == stats["packets"]
    assert run["stop_ms"] < 500
    assert run["received"] == run["unique"] == run["sent"], "packets lost at shutdown"
    assert run["all_read_ms"] < 1500, "held packets waited for their delay"
    # The held packets (the first ones sent: nothing was due yet) arrive in their
    # order, and so do the ones sent after; those that came during the shutdown
    # passed the emptied queue at once and may come between held ones.
    held = stats["released_at_exit"]
    assert [s for s in run["seqs"] if s < held] == list(range(held))
    later = [s for s in run["seqs"] if s >= held]
    assert later == sorted(later)
    assert "released at exit" in run["stderr"]


@pytest.mark.parametrize("fail_open", [False, True])
def test_max_queue_overflow_is_counted_by_the_kernel(tfo_delay: str, fail_open: bool) -> None:
    # The kernel queue holds --max-queue packets; the rest are dropped and
    # counted (/proc/net/netfilter/nfnetlink_queue), or with --fail-open pass
    # undelayed.  The FIFO never overflows: it is as long as the kernel queue.
    args = ("--delay-ms", "50", *(("--fail-open",) if fail_open else ()))
    run = run_in_netns("overflow", tfo_delay, *args)
    stats = run["stats"]
    delayed = [seq for seq, at_ms in run["arrivals"] if at_ms >= 50]
    undelayed = [seq for seq, at_ms in run["arrivals"] if at_ms < 50]
    assert stats["max_queue_depth"] == 10
    assert stats["packets"] == 10
    assert stats["overflow_accepts"] == 0
    assert len(delayed) == 10
    if fail_open:
        assert len(undelayed) == 40
        assert stats["kernel_queue_dropped"] == 0
    else:
        assert undelayed == []
        assert stats["kernel_queue_dropped"] == 40


@TIMING
def test_sigkill_leaves_traffic_flowing(tfo_delay: str) -> None:
    run = run_in_netns("kill", tfo_delay, "--delay-ms", "10")
    assert run["returncode"] == -9
    assert run["connect_before_ms"] >= 20  # delayed while the delayer ran: never a hiccup
    # --queue-bypass passes traffic undelayed once it is gone: well under one 10 ms delay
    for name in ("connect_after_ms", "echo_after_ms", "old_connection_echo_ms"):
        assert_in_band(run[name], 0, 5, f"{name} after the delayer was killed")


def _pcap_records(data: bytes) -> list[tuple[int, bytes, int]]:
    """(stamp ns, captured bytes, wire length) of each record of a raw IP pcap."""
    magic, _major, _minor, _zone, _sigfigs, snaplen, linktype = struct.unpack_from("=IHHiIII", data)
    assert (magic, snaplen, linktype) == (0xA1B23C4D, 65535, 101)  # ns, raw IP
    records, at = [], 24
    while at < len(data):
        seconds, nanoseconds, cap_len, wire_len = struct.unpack_from("=IIII", data, at)
        records.append((seconds * 10**9 + nanoseconds, data[at + 16 : at + 16 + cap_len], wire_len))
        at += 16 + cap_len
    assert at == len(data)
    return records


@TIMING
def test_every_released_packet_is_recorded_stamped_at_its_verdict(tfo_delay: str) -> None:
    """--record-fd: each datagram recorded once, whole, D after the send time it carries
    (the verdict's time: when it reached the receiver); SIGUSR1 writes them and says
    how many, the stop writes the rest. --late-record-fd: one lateness per record, in
    its order, written with it: the record's stamp after its send time and D, to the
    microsecond the kernel's send stamp is rounded to (hold.c)."""
    run = run_in_netns("record", tfo_delay, "--delay-ms", "10")
    assert run["returncode"] == 0, run["stderr"]
    assert run["flushed"] == "FLUSHED 40 0 0"  # recorded, lost, dropped recorded
    data = bytes.fromhex(run["pcap_hex"])
    records = _pcap_records(data)
    assert len(records) == 41 and run["stats"]["recorded"] == 41
    assert run["flushed_bytes"] == 24 + sum(16 + len(packet) for _, packet, _ in records[:40])
    late = [value for (value,) in struct.iter_unpack("=q", bytes.fromhex(run["late_hex"]))]
    assert len(late) == len(records) and run["flushed_late_bytes"] == 40 * 8
    for (stamp, packet, wire_len), late_ns in zip(records, late, strict=True):
        assert wire_len == len(packet) == 20 + 8 + 8  # IPv4, UDP, the send time
        assert packet[9] == socket.IPPROTO_UDP
        (sent,) = struct.unpack_from("=q", packet, 28)
        assert_in_band((stamp - sent) / 1e6, 10.0, 11.0, "a record's stamp after its send")
        # the kernel stamps the send (netif_rx) after the datagram's own clock read, by
        # the send() call's time; its stamp rounded up to a microsecond (nfnl_msg.c)
        # and the pass's nanosecond places may put it up to ~2 us the other way
        own = stamp - (sent + 10_000_000)
        assert 0 <= late_ns <= own + 2_100 and own - late_ns < 1_000_000, (late_ns, own)


def test_a_plan_drops_the_packet_it_names_and_records_it(tfo_delay: str) -> None:
    """--control: "DROP PORT client:1" drops the next connection's SYN (NF_DROP), so
    connect() returns only after the SYN's retransmission, 1 s later (TCP_TIMEOUT_INIT);
    the dropped SYN is recorded once, stamped when its delay ended (its NF_DROP: held
    as a passed packet is, so the records keep the order of arrival). A bad plan is refused
    with its reason and changes nothing. A plan counts only the next connection's
    packets, never an open one's; "DROP PORT -" drops nothing."""
    delay_ms = 5.0
    run = run_in_netns("drop", tfo_delay, "--delay-ms", str(delay_ms))
    assert run["returncode"] == 0, run["stderr"]
    answers = run["answers"]
    assert answers[0] == answers[-2] == answers[-1] == "DROPPING"
    assert answers[1:-2] == [
        "REFUSED the port is not 1..65535",
        "REFUSED an entry is not client:N or server:N with N 1..1000000",
        "REFUSED the list ends with a comma",
        "REFUSED an entry is named twice",
        "REFUSED not a DROP line: use DROP PORT LIST",
        "REFUSED the line is too long",
    ]
    assert run["stats"]["dropped"] == 2 and run["flushed"] == "FLUSHED 0 0 2"
    assert run["connect_ms"] > 1000.0  # the SYN's retransmission timer, at least 1 s
    assert run["echo_before_next_ms"] < 1000.0  # the open connection's packets: not counted
    assert run["connect_second_ms"] > 1000.0  # the next connection's SYN: dropped
    assert run["connect_again_ms"] < 1000.0  # nothing dropped: the first SYN made it
    records = _pcap_records(bytes.fromhex(run["pcap_hex"]))
    assert len(records) == 2
    stamp, packet, _ = records[0]
    tcp = (packet[0] & 0x0F) * 4
    dport = struct.unpack_from("!H", packet, tcp + 2)[0]
    flags = packet[tcp + 13]
    assert (dport, flags) == (run["port"], 0x02)  # the client's SYN, nothing else
    assert delay_ms <= (stamp - run["started_ns"]) / 1e6 < 2 * delay_ms  # connect() + D


def test_a_plan_keeps_counting_its_connection_after_the_next_plan(tfo_delay: str) -> None:
    """Each connection counts against its own plan: connection 1's fourth packet is
    dropped although connection 2's plan (nothing) was given after connection 1 began,
    as an iteration's last ACK may leave after the next iteration's plan (drop.c)."""
    delay_ms = 5.0
    run = run_in_netns("drop_overlap", tfo_delay, "--delay-ms", str(delay_ms))
    assert run["returncode"] == 0, run["stderr"]
    assert run["answers"] == ["DROPPING", "DROPPING"]
    assert run["stats"]["dropped"] == 1
    assert run["second_echo_ms"] < 200.0  # connection 2: its plan drops nothing
    assert run["fourth_ms"] > 200.0  # connection 1's fourth packet: lost, probed 200 ms on


def test_second_delayer_on_a_bound_queue_exits_2(tfo_delay: str) -> None:
    run = run_in_netns("busy", tfo_delay)
    assert run["second_returncode"] == 2
    assert run["second_stdout"] == ""
    lines = run["second_stderr"].splitlines()
    assert len(lines) == 1
    assert "queue 7 is already bound by another process" in lines[0]
    assert run["first"]["returncode"] == 0


def test_without_cap_net_admin_exits_2(tfo_delay: str) -> None:
    run = run_in_netns("eperm", tfo_delay)
    assert run["returncode"] == 2
    assert run["stdout"] == ""
    lines = run["stderr"].splitlines()
    assert len(lines) == 1
    assert "needs CAP_NET_ADMIN" in lines[0]


def test_sanitized_build_runs_clean(tfo_delay_sanitized: str) -> None:
    env = {
        "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0:exitcode=86",
        "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1:exitcode=87",
    }
    runs = [
        run_in_netns(
            "timing", tfo_delay_sanitized, "--delay-ms", "5", "--iterations", "3", env=env
        ),
        run_in_netns("release", tfo_delay_sanitized, "--delay-ms", "3000", env=env),
        run_in_netns("record", tfo_delay_sanitized, "--delay-ms", "5", env=env),
        run_in_netns("drop", tfo_delay_sanitized, "--delay-ms", "5", env=env),
        run_in_netns("middlebox", tfo_delay_sanitized, "--delay-ms", "5", env=env),
    ]
    for run in runs:
        assert run["returncode"] == 0, run["stderr"]
        for marker in ("AddressSanitizer", "LeakSanitizer", "runtime error", "UndefinedBehavior"):
            assert marker not in run["stderr"], run["stderr"]
        assert run["stats"] is not None


def test_a_middlebox_drops_or_rewrites_fast_open_syns(tfo_delay: str) -> None:
    """--control "MIDDLEBOX PORT MODE" (native/delay/middlebox.c), for real: a bad line is
    refused with its reason; strip-tfo-option takes the option out, so the server never
    sees a cookie request and the connection (rewritten, both checksums computed again)
    works at the delay's pace; drop-tfo-syn and drop-syn-data each cost the SYN timer."""
    delay_ms = 5.0
    run = run_in_netns("middlebox", tfo_delay, "--delay-ms", str(delay_ms))
    assert run["returncode"] == 0, run["stderr"]
    assert run["answers"] == [
        "REFUSED the mode is not none, drop-syn-data, strip-tfo-option or drop-tfo-syn",
        "REFUSED the port is not 1..65535",
        "REFUSED the port is not 1..65535",
        "MIDDLEBOX strip-tfo-option",
        "MIDDLEBOX drop-tfo-syn",
        "MIDDLEBOX none",
        "MIDDLEBOX drop-syn-data",
    ]
    assert run["cookie_requests_seen_stripped"] == 0
    assert run["stripped_ms"] < 1000.0  # 4D: a plain handshake, nothing lost
    assert run["dropped_request_ms"] > 1000.0  # the cookie request dropped: the SYN timer
    assert run["learnt_ms"] < 1000.0 and run["fast_ms"] < 1000.0
    assert run["dropped_data_ms"] > 1000.0  # the SYN-data dropped: the SYN timer
    stats = run["stats"]
    assert stats["mangled"] == 1  # the cookie request (its SYN-ACK had no option to take)
    assert stats["middlebox_dropped"] == 2 and stats["dropped"] == 2
    assert stats["middlebox_unparsed"] == 0

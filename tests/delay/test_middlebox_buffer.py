"""tfo-delay's middlebox (native/delay/middlebox.c) on crafted packets, no queue needed.

native/tests/middlebox_test.c is compiled here with the sanitizers (ASan +
UBSan, any report fails) beside middlebox.c alone: the middlebox is a pure
function of a packet's bytes and its mode. Its own cases run first; then
packets built here with dpkt, a second author of the same bytes, go through
its --filter mode and are judged by dpkt: a Linux Fast Open SYN stripped of its
option is byte for byte the plain SYN Linux sends without Fast Open, both
checksums right.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import dpkt
import pytest

from tests.delay.conftest import NATIVE, WARNINGS
from tests.environment import require_or_skip

SANITIZE = ["-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
            "-fno-sanitize-recover=undefined"]  # fmt: skip
SANITIZER_ENV = {"ASAN_OPTIONS": "detect_leaks=1", "UBSAN_OPTIONS": "halt_on_error=1"}
PORT = 8080

# Linux's SYN options, in tcp_options_write's order: MSS, then SACK-permitted with
# timestamps (one 10-byte block after two kinds of 2), NOP + window scale; a Fast
# Open option last, padded with NOPs to a multiple of 4 (6.1 and 6.18).
PLAIN_OPTIONS = [
    (dpkt.tcp.TCP_OPT_MSS, (65495).to_bytes(2, "big")),
    (dpkt.tcp.TCP_OPT_SACKOK, b""),
    (dpkt.tcp.TCP_OPT_TIMESTAMP, (12345).to_bytes(4, "big") + bytes(4)),
    (dpkt.tcp.TCP_OPT_NOP, b""),
    (dpkt.tcp.TCP_OPT_WSCALE, bytes([10])),
]
COOKIE = bytes.fromhex("1f2e3d4c5b6a7988")
FASTOPEN = 34


def _options(options: list[tuple[int, bytes]]) -> bytes:
    raw = b""
    for kind, value in options:
        raw += bytes([kind]) if kind in (0, 1) else bytes([kind, len(value) + 2]) + value
    return raw


def _syn(options: bytes, payload: bytes = b"") -> bytes:
    """An IPv4 SYN from the client to PORT with dpkt's own checksums."""
    while len(options) % 4:
        options += bytes([dpkt.tcp.TCP_OPT_NOP])
    tcp = dpkt.tcp.TCP(
        sport=40000, dport=PORT, seq=1000, flags=dpkt.tcp.TH_SYN, win=65495,
        opts=options, data=payload,
    )  # fmt: skip
    tcp.off = (20 + len(options)) // 4
    ip = dpkt.ip.IP(src=bytes([127, 0, 0, 1]), dst=bytes([127, 0, 0, 1]), p=6, ttl=64,
                    id=1, data=tcp)  # fmt: skip
    ip.len = 20 + len(bytes(tcp))
    return bytes(ip)  # dpkt fills in both checksums here


@pytest.fixture(scope="module")
def middlebox_test(tmp_path_factory: pytest.TempPathFactory) -> Path:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        require_or_skip("C compiler", "none (cc/gcc) to build native/tests/middlebox_test.c")
    out = tmp_path_factory.mktemp("middlebox-test") / "middlebox_test"
    sources = [NATIVE / "tests" / "middlebox_test.c", NATIVE / "delay" / "middlebox.c"]
    build = subprocess.run(
        [compiler, *WARNINGS, *SANITIZE, f"-I{NATIVE / 'delay'}", f"-I{NATIVE / 'src' / 'cli'}",
         "-o", str(out), *map(str, sources)],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert build.returncode == 0, f"compiling middlebox_test failed:\n{build.stderr}"
    return out


def _run(binary: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(binary), *args], input=stdin, capture_output=True, text=True, timeout=60,
        env=SANITIZER_ENV,
    )  # fmt: skip


def _filter(binary: Path, mode: str, packet: bytes) -> tuple[str, bytes]:
    done = _run(binary, "--filter", stdin=f"{PORT} {mode} {packet.hex()}\n")
    assert done.returncode == 0 and not done.stderr, done.stderr
    action, hexed = done.stdout.split()
    return action, bytes.fromhex(hexed)


def test_its_own_cases_pass_under_the_sanitizers(middlebox_test: Path) -> None:
    done = _run(middlebox_test)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Sanitizer" not in done.stderr and "runtime error" not in done.stderr
    summary = done.stdout.strip().splitlines()[-1]
    passed = int(summary.split()[1])
    assert summary.endswith(" 0 failed") and passed >= 20, summary


@pytest.mark.parametrize("payload", [b"", b"GET /\r\n"], ids=["cookie-request", "syn-data"])
def test_a_stripped_fast_open_syn_is_the_plain_syn(middlebox_test: Path, payload: bytes) -> None:
    cookie = b"" if not payload else COOKIE
    with_tfo = _syn(_options([*PLAIN_OPTIONS, (FASTOPEN, cookie)]), payload)
    plain = _syn(_options(PLAIN_OPTIONS), payload)
    action, out = _filter(middlebox_test, "strip-tfo-option", with_tfo)
    assert action == "mangled"
    assert out == plain  # the header shrunk, the NOP padding gone, both checksums dpkt's
    parsed = dpkt.ip.IP(out)
    assert parsed.data.data == payload


def test_a_syn_without_the_option_passes_untouched(middlebox_test: Path) -> None:
    plain = _syn(_options(PLAIN_OPTIONS), b"")
    assert _filter(middlebox_test, "strip-tfo-option", plain) == ("pass", plain)


@pytest.mark.parametrize(
    ("mode", "payload", "cookie", "action"),
    [
        ("drop-syn-data", b"x", COOKIE, "drop"),
        ("drop-syn-data", b"", b"", "pass"),
        ("drop-tfo-syn", b"", b"", "drop"),
        ("drop-tfo-syn", b"x", COOKIE, "drop"),
    ],
)
def test_the_drop_modes_judge_what_they_name(
    middlebox_test: Path, mode: str, payload: bytes, cookie: bytes, action: str
) -> None:
    packet = _syn(_options([*PLAIN_OPTIONS, (FASTOPEN, cookie)]), payload)
    assert _filter(middlebox_test, mode, packet)[0] == action


def test_bad_filter_input_is_refused_in_one_line(middlebox_test: Path) -> None:
    done = _run(middlebox_test, "--filter", stdin=f"{PORT} strip-tfo-option zz\n")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1

"""tfo-delay's command line: --help, and bad input refused with one line and exit 2.

None of these bind a queue, so they need no privileges (argument checks come
before any socket).
"""

from __future__ import annotations

import subprocess

import pytest

FLAGS = [
    "--queue",
    "--delay-ms",
    "--max-queue",
    "--die-with-parent",
    "--stats-json",
    "--fail-open",
    "--rt-priority",
    "--help",
]


def run(binary: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=10)


def test_help_documents_every_flag(tfo_delay: str) -> None:
    done = run(tfo_delay, "--help")
    assert done.returncode == 0
    assert done.stderr == ""
    for flag in FLAGS:
        assert flag in done.stdout, f"--help does not mention {flag}"
    assert "--queue-bypass" in done.stdout  # the iptables rule it works with


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ((), "--queue is required"),
        (("--queue", "0"), "--delay-ms is required"),
        (("--delay-ms", "10"), "--queue is required"),
        (("--queue", "0", "--delay-ms", "10xs"), "'10xs' is not a delay"),
        (("--queue", "0", "--delay-ms", "-1"), "'-1' is not a delay"),
        (("--queue", "0", "--delay-ms", "nan"), "'nan' is not a delay"),
        (("--queue", "0", "--delay-ms", "inf"), "'inf' is not a delay"),
        (("--queue", "0", "--delay-ms", "1e3"), "'1e3' is not a delay"),
        (("--queue", "0", "--delay-ms", ""), "'' is not a delay"),
        (("--queue", "0", "--delay-ms", "."), "'.' is not a delay"),
        (("--queue", "0", "--delay-ms", "3600001"), "'3600001' is not a delay"),
        (("--queue", "65536", "--delay-ms", "1"), "'65536' is not a queue number"),
        (("--queue", "-1", "--delay-ms", "1"), "'-1' is not a queue number"),
        (("--queue", "0x10", "--delay-ms", "1"), "'0x10' is not a queue number"),
        (("--queue", "99999999999999999999999", "--delay-ms", "1"), "is not a queue number"),
        (("--queue", "0", "--delay-ms", "1", "--max-queue", "0"), "'0' is not a length"),
        (("--queue", "0", "--delay-ms", "1", "--rt-priority", "100"), "is not a priority"),
        (("--queue", "0", "--delay-ms", "1", "--bogus"), "unknown option '--bogus'"),
        (("--queue", "0", "--delay-ms", "1", "extra"), "unexpected argument 'extra'"),
        (("--queue", "0", "--delay-ms"), "'--delay-ms' needs a value"),
        (("--queue=0", "--delay-ms=1", "--stats-json=yes"), "takes no value"),
        (("-q", "0"), "unexpected argument '-q'"),
    ],
)
def test_bad_input_exits_2_with_one_line(tfo_delay: str, args: tuple[str, ...], says: str) -> None:
    done = run(tfo_delay, *args)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("tfo-delay: ")
    assert says in lines[0]


@pytest.mark.parametrize("delay", ["0", "0.5", ".25", "12.", "10", "0.0000005", "3600000"])
def test_good_delays_pass_the_argument_check(tfo_delay: str, delay: str) -> None:
    # Arguments are checked in order and --help exits 0 when reached: exit 0 means
    # the delay before it was accepted (and no queue is bound).
    done = subprocess.run(
        [tfo_delay, "--queue", "65535", "--delay-ms", delay, "--help"],
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert done.returncode == 0, done.stderr
    assert "is not a delay" not in done.stderr

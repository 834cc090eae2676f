"""pcap out: the model's packets (simulate) and the kernel's (run), readable by tcpdump."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import dpkt

from tests.conftest import LabMachine, run_tfolab
from tests.environment import require_or_skip


def _read(path: Path) -> list[dpkt.tcp.TCP]:
    with path.open("rb") as handle:
        return [dpkt.ethernet.Ethernet(frame).data.data for _, frame in dpkt.pcap.Reader(handle)]


def _tcpdump(path: Path) -> str:
    if shutil.which("tcpdump") is None:
        require_or_skip(
            "tcpdump", "not installed (apt-get install tcpdump): its reading is unchecked"
        )
    done = subprocess.run(["tcpdump", "-nr", str(path)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_simulate_writes_the_models_packets(tmp_path: Path) -> None:
    out = tmp_path / "model.pcap"
    done = run_tfolab(
        "simulate", "fastopen", "--scenario", "cookie-request", "--json", "--pcap", str(out)
    )
    assert done.returncode == 0, done.stderr
    segments = [
        e for e in json.loads(done.stdout)["scenarios"][0]["timeline"] if e["kind"] == "segment"
    ]
    frames = _read(out)
    assert len(frames) == len(segments)
    assert [len(tcp.data) for tcp in frames] == [s["length"] for s in segments]
    text = _tcpdump(out)
    assert "tfo  cookiereq" in text and "tfo  cookie " in text


def test_run_writes_what_the_kernel_sent(delaying_machine: LabMachine, tmp_path: Path) -> None:
    out = tmp_path / "kernel.pcap"
    done = run_tfolab(
        "run", "fastopen", "--delay", "10", "--iterations", "1", "--json", "--pcap", str(out)
    )
    assert done.returncode in (0, 1), done.stderr
    result = json.loads(done.stdout)
    if "capture" in result:
        require_or_skip("packet capture", result["capture"])
    captured = [row for scenario in result["scenarios"] for row in scenario["captured"]]
    frames = _read(out)
    assert len(frames) == len(captured)
    assert [len(tcp.data) for tcp in frames] == [row["length"] for row in captured]
    text = _tcpdump(out)
    assert "tfo  cookiereq" in text  # the SYN that asks for a cookie
    assert "tfo  cookie " in text  # the SYN-ACK that brings one, and the SYNs that use it
    syn_data = [line for line in text.splitlines() if "Flags [S]" in line and "length 16" in line]
    assert syn_data, "no SYN carried the request"

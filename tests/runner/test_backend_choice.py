"""Which backend runs, and a clean refusal of one that cannot."""

from __future__ import annotations

import json

import pytest

from tests.conftest import LabMachine, run_tfolab


def test_backend_netem_without_netem_is_exit_2_with_the_fix(lab_machine: LabMachine) -> None:
    if lab_machine.netem:
        pytest.skip("this kernel has netem; the refusal needs one without it")
    done = run_tfolab("run", "handshake", "--backend", "netem", "--delay", "10")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    # Either reason is the truth here: no sch_netem, or no `tc` to install it with.
    assert lines[0].startswith("tfolab: --backend netem: ")
    assert "this kernel has no netem" in lines[0] or "tc (iproute2) is not installed" in lines[0]
    assert "--backend nfqueue" in lines[0]


def test_auto_says_which_backend_ran(delaying_machine: LabMachine) -> None:
    done = run_tfolab("run", "handshake", "--delay", "3", "--iterations", "1", "--json")
    assert json.loads(done.stdout)["backend"] == delaying_machine.delay_backend


def test_backend_none_with_a_delay_is_refused_before_anything_starts() -> None:
    done = run_tfolab("run", "handshake", "--backend", "none", "--delay", "10", "--iterations", "1")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "tfolab: --backend none adds no delay: use --delay 0, or another backend"
    )


def test_backend_none_is_stated_loudly(lab_machine: LabMachine) -> None:
    done = run_tfolab("run", "handshake", "--backend", "none", "--delay", "0", "--iterations", "1")
    assert "NO DELAY EMULATION" in done.stderr
    assert "backend none" in done.stdout
    as_json = run_tfolab(
        "run", "handshake", "--backend", "none", "--delay", "0", "--iterations", "1", "--json"
    )
    result = json.loads(as_json.stdout)
    assert result["backend"] == "none" and result["delay_ms"] == 0.0

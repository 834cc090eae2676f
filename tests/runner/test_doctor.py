"""doctor tells the truth: real runs are possible only with a namespace, a delay
backend and the native parts, and every gap carries the fix for this machine."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import LabMachine, run_tfolab
from tfolab.lab import doctor

NO_DELAY_PROBE = {
    "namespace": "root",
    "netem": [False, "this kernel has no netem qdisc; tc says: Specified qdisc kind is unknown"],
    "nfqueue": [False, "the NFQUEUE rule was refused (nf_tables queue: ENOENT; ...)"],
}


def test_without_any_delay_backend_real_runs_are_not_possible(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(doctor, "run_probe", lambda: NO_DELAY_PROBE)
    report = json.loads(doctor.report_json(doctor.checks()))
    assert report["real_runs"]["possible"] is False
    assert "delay backend" in report["real_runs"]["detail"]
    checks = {c["name"]: c for c in report["checks"]}
    assert "NFQUEUE" in checks["nfqueue delayer"]["fix"]
    assert "iptables" not in checks["nfqueue delayer"]["fix"]  # no binary is needed
    assert checks["netem"]["fix"].startswith("load sch_netem")
    text = doctor.report_text(doctor.checks())
    assert "real runs: not possible here: delay backend (auto) missing" in text


def test_a_working_nfqueue_makes_netem_missing_harmless(monkeypatch: pytest.MonkeyPatch) -> None:
    probe = {**NO_DELAY_PROBE, "nfqueue": [True, "rule through nf_tables + xt NFQUEUE"]}
    monkeypatch.setattr(doctor, "run_probe", lambda: probe)
    found = {c.name: c for c in doctor.checks()}
    assert found["netem"].fix.startswith("nothing to do")
    assert doctor.real_runs(list(found.values())).ok


def test_doctor_on_this_machine_names_the_rule_path(lab_machine: LabMachine) -> None:
    env_path = os.pathsep.join(
        folder
        for folder in os.environ.get("PATH", "").split(os.pathsep)
        if not (Path(folder) / "iptables").exists()
    )
    done = run_tfolab("doctor", "--json", env={**os.environ, "PATH": env_path})
    report = json.loads(done.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert report["real_runs"]["possible"] == (lab_machine.delay_backend != "none")
    if lab_machine.nfqueue:
        assert "rule through" in checks["nfqueue delayer"]["detail"]

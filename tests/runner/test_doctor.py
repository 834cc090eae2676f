"""doctor tells the truth: real runs are possible only with a namespace, a delay
backend and the native parts, and every gap carries the fix for this machine."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import get_args

import msgspec
import pytest

from tests.conftest import LabMachine, run_tfolab
from tfolab.lab import doctor
from tfolab.runner import probe as probe_module
from tfolab.runner.backends import BACKENDS, REINSTALL_FIX, Trial, TrialKind
from tfolab.runner.probe import NOT_TRIED, ProbeReport

NO_DELAY_PROBE = ProbeReport(
    namespace="root",
    netem=Trial(
        "unsupported", "this kernel has no netem qdisc; tc says: Specified qdisc kind is unknown"
    ),
    nfqueue=Trial("unsupported", "the NFQUEUE rule was refused (nf_tables queue: ENOENT; ...)"),
)


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
    probe = msgspec.structs.replace(
        NO_DELAY_PROBE, nfqueue=Trial("works", "rule through nf_tables + xt NFQUEUE")
    )
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


def test_each_fix_follows_the_kind_of_failure_not_its_words(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The detail's words are the kernel's or the tool's; only the kind picks the fix."""
    probe = msgspec.structs.replace(
        NO_DELAY_PROBE, nfqueue=Trial("not_built", "tfo-delay is missing from _native")
    )
    monkeypatch.setattr(doctor, "run_probe", lambda: probe)
    found = {c.name: c for c in doctor.checks()}
    assert found["nfqueue delayer"].fix == REINSTALL_FIX
    worded_alike = Trial("unsupported", "the bundled tfo-delay is not built, says the kernel")
    probe = msgspec.structs.replace(NO_DELAY_PROBE, nfqueue=worded_alike)
    monkeypatch.setattr(doctor, "run_probe", lambda: probe)
    found = {c.name: c for c in doctor.checks()}
    assert found["nfqueue delayer"].fix == BACKENDS["nfqueue"].fix


def test_without_a_namespace_nothing_is_tried(monkeypatch: pytest.MonkeyPatch) -> None:
    refused = ProbeReport(namespace_error="user namespaces are refused (EPERM)")
    monkeypatch.setattr(doctor, "run_probe", lambda: refused)
    found = {c.name: c for c in doctor.checks()}
    assert not found["network namespace"].ok
    assert found["network namespace"].detail == "user namespaces are refused (EPERM)"
    for backend in ("netem", "nfqueue delayer"):
        assert not found[backend].ok
        assert found[backend].detail == "not tried (no namespace)"
        assert found[backend].fix == "first make network namespaces work (see above)"
    assert not doctor.real_runs(list(found.values())).ok


def test_a_probe_that_reports_nothing_fails_the_namespace_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A real process that prints no report (here /bin/false): never read as a "yes"."""
    monkeypatch.setattr(probe_module.sys, "executable", "/bin/false")
    with pytest.raises(probe_module.ProbeFailed, match="no report"):
        probe_module.run_probe()
    found = {c.name: c for c in doctor.checks()}
    assert not found["network namespace"].ok
    assert found["network namespace"].detail == "probe failed: no report"
    assert not doctor.real_runs(list(found.values())).ok


def test_the_report_crosses_the_process_boundary_typed() -> None:
    """What the probe prints is what run_probe reads: every field, every kind."""
    for kind in get_args(TrialKind):
        report = ProbeReport(namespace="root", netem=Trial(kind, "seen"), nfqueue=NOT_TRIED)
        assert msgspec.json.decode(msgspec.json.encode(report), type=ProbeReport) == report
    with pytest.raises(msgspec.ValidationError):  # the old [ok, detail] lists are refused
        msgspec.json.decode(b'{"netem": [true, "tc qdisc netem works"]}', type=ProbeReport)

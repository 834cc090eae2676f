"""Without privileges: exit 2, the reason and the fix, and doctor says why.

To be unprivileged for real without touching the host, the test nests two
user namespaces: the outer one (where we are root) allows exactly one more
user namespace, the inner one maps us to `nobody`. In there, the runner's
attempt at a user namespace of its own is refused by the kernel, as on a
machine where unprivileged user namespaces are off.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.environment import require_or_skip, user_namespace_refused


def as_nobody_without_userns(*args: str) -> subprocess.CompletedProcess[str]:
    inner = [
        "unshare",
        "--user",
        "--map-user=65534",
        "--map-group=65534",
        sys.executable,
        "-m",
        "tfolab",
        *args,
    ]
    script = 'echo 1 > /proc/sys/user/max_user_namespaces && exec "$@"'
    return subprocess.run(
        ["unshare", "--user", "--map-root-user", "sh", "-c", script, "sh", *inner],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def can_nest() -> None:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        require_or_skip(
            "unshare", "needs root and util-linux unshare to build an unprivileged user"
        )
    probe = as_nobody_without_userns("list")
    if probe.returncode != 0:
        assert user_namespace_refused(probe.stderr), probe.stderr  # else a bug
        require_or_skip(
            "user namespaces", f"nested ones unavailable: {probe.stderr.strip()[-200:]}"
        )


def test_run_without_privileges_is_exit_2_with_reason_and_fix(can_nest: None) -> None:
    done = as_nobody_without_userns("run", "handshake", "--delay", "10")
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert "no privileges for a lab network" in lines[0]
    assert "as root" in lines[0]


def test_doctor_explains_why_not(can_nest: None) -> None:
    done = as_nobody_without_userns("doctor", "--json")
    assert done.returncode == 0, done.stderr
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert not checks["network namespace"]["ok"]
    assert "user namespaces" in checks["network namespace"]["detail"]
    assert checks["network namespace"]["fix"]


def test_simulate_needs_no_privileges(can_nest: None) -> None:
    done = as_nobody_without_userns("simulate", "fastopen", "--scenario", "cookie", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["scenarios"][0]["iterations"][0]["predicted_ms"] > 0

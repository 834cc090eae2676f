"""The host guard sees what a leak would leave: a table, a legacy rule, a process.

The firewall checks run in a throwaway network namespace (never the host's):
tfolab's own rule installer adds its table there, and the netlink reading
written for the guard must see it. The session check itself is run in a child
pytest with a test that leaves a process behind.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.environment import require_or_skip
from tests.host.state import changes
from tests.processes import running

ROOT = Path(__file__).resolve().parents[2]

INSIDE = """
import json
from tests.host import legacy, nftables, state
from tfolab.runner.backends import nfrule
before = state.snapshot()
nft = [w for w in nfrule.WAYS if w.name.startswith("nf_tables")]
nfrule.install_rule(ways=tuple(nft))
middle = state.snapshot()
nfrule.install_rule(ways=tuple(w for w in nfrule.WAYS if w.name.startswith("ip_tables")))
print(json.dumps(state.changes(before, middle) + ["--"] + state.changes(middle, state.snapshot())))
"""


def _namespace() -> None:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        require_or_skip("root", "a throwaway network namespace needs root and unshare")


def test_a_leaked_rule_is_seen_without_any_binary() -> None:
    _namespace()
    done = subprocess.run(
        ["unshare", "--net", sys.executable, "-c", INSIDE],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    *nft, rule_gone, legacy = json.loads(done.stdout)
    assert nft == [
        "nf_tables: + chain ip tfolab input",
        "nf_tables: + rule ip tfolab input #2",
        "nf_tables: + table ip tfolab",
    ]
    assert rule_gone == "--"
    # the filter table made: three built-in chains' policies, the one rule, the error entry
    assert legacy.startswith("x_tables: + ip filter: 5 entries, "), legacy


def test_changes_name_what_appeared_and_what_went() -> None:
    before = {"qdiscs": ["dev=lo kind=noqueue"], "sysctls": ["a = 1"]}
    after = {"qdiscs": ["dev=lo kind=netem"], "sysctls": ["a = 1"]}
    assert changes(before, after) == [
        "qdiscs: - dev=lo kind=noqueue",
        "qdiscs: + dev=lo kind=netem",
    ]


LEAKY = """
import subprocess

def test_leaves_a_sleeper():
    subprocess.Popen(["sleep", "300"], start_new_session=True)
"""


def test_a_process_left_behind_fails_the_session_and_is_killed(tmp_path: Path) -> None:
    (tmp_path / "test_leaky.py").write_text(LEAKY)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.host.guard",
         "--rootdir", str(tmp_path), str(tmp_path / "test_leaky.py")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 1, done.stdout
    assert "1 passed" in done.stdout
    [line] = [line for line in done.stdout.splitlines() if line.startswith("HOST ")]
    assert line.startswith("HOST leftover process ") and line.endswith(" sleep: killed")
    pid = int(line.split()[3])
    assert not running(pid)

"""Started as root, the commands that act on the machine (the UI, run, bench, serve) take no
folder from TFOLAB_LABS_DIR, TFOLAB_SLOTS_DIR or TFOLAB_RESULTS_DIR: one line names the
flag, and nothing starts (strace). The flags work; every other user, root of a user
namespace that another user made included, and the commands that only read, still
take the variables (tfolab.cli.root_env)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.spawning import run_traced
from tests.conftest import LabMachine, run_tfolab
from tests.environment import require_or_skip
from tfolab.cli.root_env import CHECKED

pytestmark = pytest.mark.usefixtures("root")
ROOT = Path(__file__).resolve().parents[2]
ELSEWHERE = "/nonexistent/tfolab-folder"  # what a stale export could name

REFUSALS = [
    (command, variable, fix)
    for command, (_, fixes) in CHECKED.items()
    for variable, fix in fixes.items()
]


def _ids(case: tuple[str | None, str, str]) -> str:
    return f"{case[0] or 'ui'}-{case[1]}"


@pytest.mark.parametrize("case", REFUSALS, ids=[_ids(c) for c in REFUSALS])
def test_root_takes_no_folder_from_its_environment(
    case: tuple[str | None, str, str], tmp_path: Path
) -> None:
    command, variable, fix = case
    args = {"run": ["run", "handshake"], "bench": ["bench"], "serve": ["serve", "--port", "0"]}
    # run_traced gives the session's slots by flag: only `variable` is in the environment
    traced = run_traced(args.get(command or "", ["--demo"]), tmp_path, env={variable: ELSEWHERE})
    done = traced.done
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith(f"tfolab: {variable} is set, and ") and fix in done.stderr
    assert "started as root takes no folder from its environment" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stdout == ""
    assert len(traced.programs) == 1, traced.programs  # only the CLI: no runner, no session


def test_commands_that_only_read_take_the_labs_folder_from_root_too() -> None:
    for command in (["list"], ["simulate", "handshake"]):
        done = run_tfolab(*command, timeout=60, env=dict(os.environ, TFOLAB_LABS_DIR=ELSEWHERE))
        assert done.returncode == 2 and f"the labs folder {ELSEWHERE} does not exist" in (
            done.stderr
        ), done.stderr


def test_the_flags_give_root_its_folders(lab_machine: LabMachine) -> None:
    """`run --slots-dir DIR` as root queues in DIR (its runner reads the folder the flag set)."""
    base = Path(tempfile.mkdtemp(prefix="tfolab-root-slots-"))
    try:
        slots = base / "slots"
        environment = {k: v for k, v in os.environ.items() if k != "TFOLAB_SLOTS_DIR"}
        done = subprocess.run(
            [sys.executable, "-m", "tfolab", "run", "handshake", "--slots-dir", str(slots),
             "--delay", "0", "--backend", "none", "--iterations", "1", "--json"],
            capture_output=True, text=True, timeout=120, env=environment,
        )  # fmt: skip
        assert done.returncode in (0, 1), done.stderr
        assert (slots / "size").is_file() and (slots / "slot-0").is_file()
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def unshare() -> Iterator[str]:
    found = shutil.which("unshare")
    if found is None:
        require_or_skip("unshare", "util-linux unshare makes the user namespace")
    yield found


def _in_user_namespace(*prefix: str, python: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, "unshare", "--user", "--map-root-user", python, "-m", "tfolab",
         "run", "handshake"],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
        env=dict(os.environ, TFOLAB_LABS_DIR=ELSEWHERE),
    )  # fmt: skip


def test_uid_0_of_a_user_namespace_is_root_only_if_root_made_it(
    unshare: str, nobody_python: str
) -> None:
    """nobody's own variables are nobody's, also as uid 0 of a user namespace nobody made;
    uid 0 of one root made is still the machine's root."""
    as_nobody = (sys.executable, "-m", "tests.as_user", "nobody")
    for prefix in ((), as_nobody):
        done = _in_user_namespace(*prefix, python=nobody_python)
        if done.returncode != 2 or "unshare failed" in done.stderr:
            require_or_skip("user namespaces", done.stderr.strip()[-200:])
        root = prefix == ()
        refused = "TFOLAB_LABS_DIR is set, and tfolab run started as root" in done.stderr
        assert refused == root, done.stderr
        if not root:
            assert f"the labs folder {ELSEWHERE} does not exist" in done.stderr, done.stderr
    plain = subprocess.run(
        [*as_nobody, nobody_python, "-m", "tfolab", "run", "handshake"],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
        env=dict(os.environ, TFOLAB_LABS_DIR=ELSEWHERE),
    )  # fmt: skip
    assert f"the labs folder {ELSEWHERE} does not exist" in plain.stderr, plain.stderr

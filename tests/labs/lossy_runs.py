"""One real run of a lossy scenario (a `drop` or a `middlebox`), checked as every real run
is: packets, bands and exit code (tests/timing.py). Skips with the reason where the
NFQUEUE delayer, the one backend that drops and rewrites, is missing."""

from __future__ import annotations

import json

from tests.conftest import run_tfolab
from tests.environment import require_or_skip
from tests.timing import check_bands, check_exit, check_packets


def lossy_run(*args: str, lab: str = "handshake", scenario: str = "plain") -> dict[str, object]:
    """`tfolab run LAB --scenario SCENARIO ARGS --json`, its one scenario's report."""
    done = run_tfolab("run", lab, "--scenario", scenario, *args, "--json")
    if done.returncode == 2 and "NFQUEUE" in done.stderr:
        require_or_skip("NFQUEUE delayer", done.stderr.strip())
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr
    report = json.loads(done.stdout)
    assert report["backend"] == "nfqueue"
    [found] = report["scenarios"]
    check_packets([found])
    check_bands([found])
    check_exit(done)
    return found

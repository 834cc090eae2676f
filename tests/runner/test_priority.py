"""A measuring run's scheduling (tfolab.runner.priority), on this kernel, for real: what an
unprivileged run gets instead of real-time priority."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.unprivileged import ROOT
from tfolab.runner import priority

SCRIPT = """
import json, os
from tfolab.runner import priority as p
granted = p.short_slices_granted()
words = p.realtime_permitted()[1]
asked = p.prefer_short_slices()
read, write = os.pipe()
if os.fork() == 0:
    os.write(write, str(p.slice_ns_of()).encode()); os._exit(0)
os.wait()
child = int(os.read(read, 32))
mine = p.slice_ns_of()
p.normal_scheduling()
print(json.dumps({"granted": granted, "words": words, "asked": asked, "mine": mine,
                  "child": child, "after": p.slice_ns_of()}))
"""


def test_an_unprivileged_run_gets_the_shortest_slice_and_its_children_inherit_it(
    nobody_python: str,
) -> None:
    if priority.slice_ns_of() is None:
        pytest.skip("this kernel does not show a thread's slice (/proc/PID/sched)")
    done = subprocess.run(
        [sys.executable, "-m", "tests.as_user", "nobody", nobody_python, "-c", SCRIPT],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    if not report["granted"]:
        pytest.skip("this kernel keeps fair tasks' default slice (custom slices: 6.12 on)")
    assert report["words"] == "normal scheduling with 0.1 ms slices while measuring (EEVDF)"
    assert report["asked"] is True
    assert report["mine"] == report["child"] == priority.SHORT_SLICE_NS
    assert report["after"] != priority.SHORT_SLICE_NS  # given back with the slot

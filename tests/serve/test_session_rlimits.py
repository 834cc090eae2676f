"""A served session's process that tries to outgrow its limits is refused, and the class
carries on: a real `tfolab serve --session-memory-mb`, real websockets, and sessions
started by serve's own spawn path (LimitedAppService, preexec limit_child).

The session's program is tfolab's UI with one addition at interpreter start (a
`sitecustomize` on serve's PYTHONPATH, inherited by every session like the rest of
serve's environment): a session whose browser asks for 123 columns first maps memory
16 MiB at a time, one that asks for 124 forks, each until refused, reports how far it
got in a file, and exits. Every other session is the plain UI.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.serve.test_serve_autogroup import _sessions
from tests.serve.test_serve_budget import served_ui
from tests.serve.test_serve_limits import _from, _limits

MEMORY_MB = 512
SESSIONS = 2
REPORT_ENV = "TFOLAB_TEST_SESSION_REPORT"

HOOK = f"""
import os
if os.environ.get("TFOLAB_SESSION_ID") and os.environ.get("COLUMNS") in ("123", "124"):
    import json, mmap
    if os.environ["COLUMNS"] == "123":  # address space, 16 MiB at a time (never touched)
        held, reached, refused = [], 0, False
        try:
            while reached < 8192:
                held.append(mmap.mmap(-1, 16 << 20))
                reached += 16
        except (MemoryError, OSError):
            refused = True
        outcome = {{"memory_refused": refused, "reached_mb": reached}}
    else:  # processes, each waiting for this one to finish
        wait_r, wait_w = os.pipe()
        children, refused = [], False
        try:
            while len(children) < 1000:
                child = os.fork()
                if child == 0:
                    os.close(wait_w)
                    os.read(wait_r, 1)
                    os._exit(0)
                children.append(child)
        except OSError:
            refused = True
        os.close(wait_w)
        for child in children:
            os.waitpid(child, 0)
        outcome = {{"fork_refused": refused, "forked": len(children)}}
    report = os.path.join(os.environ[{REPORT_ENV!r}], os.environ["COLUMNS"])
    with open(report + ".part", "w") as out:
        json.dump(outcome, out)
    os.rename(report + ".part", report)
    os._exit(0)
"""


@pytest.fixture
def hooked(tmp_path: Path) -> Iterator[tuple[dict[str, str], Path]]:
    """serve's environment with the hook on its PYTHONPATH, and where sessions report.
    Under /tmp, not pytest's 0700 folder: the sessions' user must reach both."""
    base = Path(tempfile.mkdtemp(prefix="tfolab-rlimit-test-"))
    os.chmod(base, 0o755)
    (base / "hook").mkdir(mode=0o755)
    (base / "hook" / "sitecustomize.py").write_text(HOOK)
    reports = base / "reports"
    reports.mkdir()
    os.chmod(reports, 0o777)
    path = os.pathsep.join(p for p in (str(base / "hook"), os.environ.get("PYTHONPATH")) if p)
    yield {"PYTHONPATH": path, REPORT_ENV: str(reports)}, reports
    shutil.rmtree(base, ignore_errors=True)


async def _session_reports(  # type: ignore[no-untyped-def]
    served, client: str, columns: int, reports: Path
) -> dict[str, object]:
    async with _from(client) as http:
        url = served.ws_url(f"width={columns}&height=30")
        async with http.ws_connect(url, max_msg_size=0):
            report = reports / str(columns)
            deadline = time.monotonic() + 120
            while not report.exists():
                assert time.monotonic() < deadline, f"no report from {columns}"
                assert served.process.poll() is None, served.stop()
                await asyncio.sleep(0.2)
            return json.loads(report.read_text())


async def test_a_session_that_outgrows_its_limits_is_refused_and_the_class_carries_on(
    serve, hooked
) -> None:
    environment, reports = hooked
    served = serve(
        "--session-memory-mb", str(MEMORY_MB), "--max-sessions", str(SESSIONS), env=environment
    )
    memory = await _session_reports(served, "127.0.0.2", 123, reports)
    # Refused at the limit serve set: short of it by what the interpreter had mapped
    # already, never past it (without the limit it maps 8 GiB and says so).
    assert memory["memory_refused"], memory
    assert MEMORY_MB // 2 <= memory["reached_mb"] < MEMORY_MB, memory
    processes = await _session_reports(served, "127.0.0.3", 124, reports)
    # The class's bound: the user's processes when serve started, plus 64 per place
    # (the user's other processes come and go, so only "refused, short of 1000").
    assert processes["fork_refused"] and 0 < processes["forked"] < 1000, processes
    async with served_ui(served) as (screen, _keys):  # another student's session works
        assert "Labs" in screen.text
        (ui,) = _sessions(served.process.pid)
        assert _limits(ui)["Max address space"] == str(MEMORY_MB * 1024 * 1024)
    assert served.process.poll() is None
    assert _limits(served.process.pid)["Max address space"] == "unlimited"  # serve's own
    output = served.stop()
    assert "Traceback" not in output, output

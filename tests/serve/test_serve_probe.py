"""serve's own probe, for real: where the kernel refuses user namespaces only when one is
made (a container's seccomp profile; tests/serve/no_user_namespaces.py), the cheap look
finds nothing, serve's real namespace probe as the sessions' user is refused, serve says
so, and every session's banner says real runs are off and why."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.environment import require_or_skip
from tests.serve import no_user_namespaces
from tests.serve.test_serve_autogroup import _sessions
from tests.serve.test_serve_budget import served_ui
from tfolab.lab.environment import REAL_RUNS_OFF_ENV, user_namespaces_blocked

REFUSED = "no privileges for a lab network: unprivileged user namespaces are refused (EPERM)"


async def test_real_runs_off_as_serve_probed(serve) -> None:
    if (why := no_user_namespaces.supported()) is not None:
        pytest.skip(why)
    if (blocked := user_namespaces_blocked()) is not None:
        # Then the cheap look answers before any probe: nothing of the probe's to test.
        require_or_skip("user namespaces", blocked)
    served = serve(wrap=(sys.executable, "-m", "tests.serve.no_user_namespaces"))
    announced = "\n".join(served.output)
    assert f"real runs off: {REFUSED}" in announced, announced
    async with served_ui(served) as (screen, _keys):
        await screen.wait_for("Real runs off: no privileges for a lab network")
        (session,) = _sessions(served.process.pid)
        environment = Path(f"/proc/{session}/environ").read_bytes().split(b"\0")
        off = next(e for e in environment if e.startswith(REAL_RUNS_OFF_ENV.encode() + b"="))
        assert REFUSED.encode() in off and b"|" in off  # "reason|fix", as quick_check reads it

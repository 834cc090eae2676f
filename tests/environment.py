"""What this machine provides for real runs: an honest skip, or a failure where CI insists.

Rules:
- A test that cannot run because the machine lacks something (root, network
  namespaces, NFQUEUE, the packet capture, strace, nginx, tcpdump, chromium,
  a C compiler, util-linux unshare, user namespaces) calls `require_or_skip`,
  never pytest.skip: `what` names the missing thing from NEEDS, `reason` says why.
- With TFOLAB_REQUIRE_REAL=1 (set by .ci/run) that call fails the test instead:
  CI's machine provides every one of them, so a skip there hides a broken path.
- A skip about the test's subject rather than the machine (a kernel *with* netem
  where the refusal needs one without) stays a plain pytest.skip.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

REQUIRE_ENV = "TFOLAB_REQUIRE_REAL"

NEEDS = frozenset(
    {
        "root",
        "network namespaces",
        "user namespaces",
        "NFQUEUE",
        "delay backend",
        "packet capture",
        "strace",
        "nginx",
        "tcpdump",
        "chromium",
        "playwright",
        "C compiler",
        "unshare",
        "iproute2",
        "cmake",
        "tfo-delay",
        "netem",
        "a host network",  # devices besides lo: a namespace the lab must not touch
    }
)


def require_real() -> bool:
    """True under TFOLAB_REQUIRE_REAL=1: a missing environment is a failure."""
    return os.environ.get(REQUIRE_ENV, "") == "1"


def require_or_skip(what: str, reason: str) -> NoReturn:
    """Skip because `what` is missing here, or fail under TFOLAB_REQUIRE_REAL=1."""
    if what not in NEEDS:
        raise ValueError(f"not an environment need: {what!r} (one of {sorted(NEEDS)})")
    if require_real():
        pytest.fail(f"{REQUIRE_ENV}=1 but {what} is missing here: {reason}", pytrace=False)
    pytest.skip(f"{what} missing: {reason}")


def user_namespace_refused(stderr: str) -> bool:
    """A failed command under `unshare --user` failed because the namespace was refused:
    unshare's own refusal or tfolab's sentence about user namespaces, not any traceback."""
    return "Traceback" not in stderr and (
        "unshare failed" in stderr or "user namespace" in stderr.lower()
    )

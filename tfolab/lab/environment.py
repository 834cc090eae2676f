"""A quick look, at startup, at whether real runs can work here, and why not.

Rules:
- Cheap and read-only: platform, uid, a few /proc files, the kernel's config
  (a delay backend: netem or NFQUEUE) and whether the native parts are built.
  No subprocess and no namespace: the full answer is `tfolab doctor`, and a
  real run that still fails reports its own UserError.
- Every "no" carries the reason and the fix, shown in the UI's banner.
- `tfolab serve` probes once, for real, as the user its sessions run as, and
  hands a "no" to every session in TFOLAB_REAL_RUNS_OFF ("reason|fix", written
  and read only by RealRunStatus); a served session then says that instead of
  guessing.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from pathlib import Path

from tfolab.core import native
from tfolab.core.errors import UserError
from tfolab.runner.backends import likely_backend


@dataclass(frozen=True)
class RealRunStatus:
    possible: bool
    reason: str
    fix: str = ""

    def banner(self) -> str:
        if self.possible:
            return f"Real runs: on ({self.reason}). Press r in a lab to measure."
        return f"Real runs off: {self.reason}. {self.fix}".strip()

    def off_value(self) -> str:
        """This "no" as TFOLAB_REAL_RUNS_OFF says it to a served session ("reason|fix")."""
        return f"{self.reason.replace('|', '/')}|{self.fix}"

    @classmethod
    def from_off_value(cls, value: str) -> RealRunStatus:
        reason, _, fix = value.partition("|")
        return cls(False, reason, fix)


def _read_int(path: str) -> int | None:
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return None


def user_namespaces_blocked() -> str | None:
    """Why an unprivileged user cannot make a user namespace here, or None."""
    if _read_int("/proc/sys/user/max_user_namespaces") == 0:
        return "user namespaces are disabled (user.max_user_namespaces = 0)"
    if _read_int("/proc/sys/kernel/unprivileged_userns_clone") == 0:
        return "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone = 0)"
    if _read_int("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == 1:
        return "AppArmor restricts unprivileged user namespaces"
    return None


REAL_RUNS_OFF_ENV = "TFOLAB_REAL_RUNS_OFF"


def quick_check() -> RealRunStatus:
    if off := os.environ.get(REAL_RUNS_OFF_ENV):
        return RealRunStatus.from_off_value(off)
    if platform.system() != "Linux":
        return RealRunStatus(
            False,
            f"real runs need Linux, this is {platform.system()}",
            "The model and the ladder work anywhere.",
        )
    try:
        native.executable_path("tfo-echo-server")
    except native.NativeError:
        return RealRunStatus(
            False,
            "the native parts are not built",
            "Reinstall tfolab so its C parts are built (see `tfolab doctor`).",
        )
    if os.geteuid() == 0:
        how = "root, a private network namespace per run"
    else:
        blocked = user_namespaces_blocked()
        if blocked:
            return RealRunStatus(
                False,
                f"not root and {blocked}",
                "Start tfolab as root, or allow unprivileged user namespaces "
                "(see `tfolab doctor`).",
            )
        how = "user namespaces, no root needed"
    try:
        backend = likely_backend("auto", 1.0, native.optional_executable("tfo-delay"))
    except UserError as err:
        return RealRunStatus(False, err.reason, f"{err.fix[0].upper()}{err.fix[1:]}.")
    return RealRunStatus(True, f"{how}, {backend} delay")

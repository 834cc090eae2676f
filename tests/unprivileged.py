"""A Python the unprivileged user `nobody` can run, with this checkout's tfolab, for tests of
what runs as nobody (tfolab serve's sessions, slots shared across users).

Where this venv's interpreter is not readable by nobody (e.g. it lives under
/root), a venv is made from the system's python3 of the same version, with a
.pth line that adds this venv's site-packages (tfolab, its native parts and
its dependencies): no build and no download.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AS_NOBODY = (sys.executable, "-m", "tests.as_user", "nobody")


def runs_as_nobody(python: str) -> str | None:
    """None if nobody can import tfolab with `python`, else why not."""
    done = subprocess.run(
        [
            *AS_NOBODY,
            python,
            "-c",
            "import tfolab.core.native as n; n.executable_path('tfo-delay')",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    return None if done.returncode == 0 else (done.stderr.strip().splitlines() or ["?"])[-1]


def python_for_nobody() -> tuple[str | None, str]:
    """(a python nobody can use, "") or (None, why there is none)."""
    if os.geteuid() != 0:
        return None, "needs root (to become nobody)"
    why = runs_as_nobody(sys.executable)
    if why is None:
        return sys.executable, ""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = shutil.which(version, path="/usr/bin:/usr/local/bin")
    if system is None:
        return (
            None,
            f"nobody cannot run {sys.executable} ({why}) and there is no /usr/bin/{version}",
        )
    folder = Path(tempfile.mkdtemp(prefix="tfolab-nobody-python-"))
    os.chmod(folder, 0o755)
    subprocess.run([system, "-m", "venv", "--without-pip", str(folder)], check=True)
    (packages,) = (Path(p) for p in site.getsitepackages() if Path(p).is_dir())
    target = folder / "lib" / version / "site-packages" / "tfolab-checkout.pth"
    target.write_text(f"import site; site.addsitedir({str(packages)!r})\n")
    python = str(folder / "bin" / "python")
    why = runs_as_nobody(python)
    if why is not None:
        return None, f"nobody cannot run tfolab with {system} either: {why}"
    return python, ""

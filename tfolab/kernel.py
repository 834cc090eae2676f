"""Facts about the running kernel that the model needs as parameters.

Rules: read-only; every function has a safe answer when the fact cannot be
found (the model then uses its documented default), and says where it came from.
"""

from __future__ import annotations

import gzip
import os
import platform
import re
from pathlib import Path

DEFAULT_HZ = 250


def kernel_release() -> str:
    return platform.release().split("-")[0] or platform.release()


def kernel_hz() -> tuple[int, str]:
    """CONFIG_HZ of the running kernel and where it was read, else (250, 'default')."""
    candidates = [Path("/proc/config.gz"), Path(f"/boot/config-{platform.release()}")]
    for path in candidates:
        try:
            raw = path.read_bytes()
        except OSError:
            continue
        text = (
            gzip.decompress(raw).decode(errors="replace")
            if path.suffix == ".gz"
            else (raw.decode(errors="replace"))
        )
        match = re.search(r"^CONFIG_HZ=(\d+)$", text, re.MULTILINE)
        if match:
            return int(match.group(1)), f"read from {path}"
    return DEFAULT_HZ, "assumed: the kernel config is not readable here"


def read_sysctl(name: str) -> str | None:
    path = Path("/proc/sys") / name.replace(".", "/")
    try:
        return path.read_text().strip()
    except OSError:
        return None


def is_root() -> bool:
    return os.geteuid() == 0

"""`tfolab doctor`: what this machine can do, each check with its one-line fix.

Rules: it never changes the host. Namespace, netem and NFQUEUE are tried in a
throwaway namespace owned by a probe process (tfolab/runner/probe.py), which
also says which way the NFQUEUE rule went in (nf_tables, ip_tables, a binary);
each backend's fix follows the kind of its Trial, never the words of its detail.
"Real runs: possible" only when the namespace, a delay backend and the native
parts all work; every missing part carries the fix for this machine.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
from dataclasses import asdict, dataclass
from importlib import metadata

from tfolab.core import kernel, native
from tfolab.runner.backends import BACKENDS, NO_BACKEND_FIX, REINSTALL_FIX, Trial
from tfolab.runner.probe import ProbeFailed, ProbeReport, run_probe


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _probe(is_linux: bool) -> ProbeReport:
    if not is_linux:
        return ProbeReport(namespace_error="not Linux")
    try:
        return run_probe()
    except ProbeFailed as err:
        return ProbeReport(namespace_error=f"probe failed: {err}")


def checks() -> list[Check]:
    found: list[Check] = []
    is_linux = platform.system() == "Linux"
    found.append(
        Check(
            "linux",
            is_linux,
            f"{platform.system()} {platform.release()}",
            "" if is_linux else "real runs need Linux; `tfolab simulate` works anywhere",
        )
    )
    root = os.geteuid() == 0
    found.append(Check("privileges", True, "root" if root else f"user {os.geteuid()} (not root)"))
    probe = _probe(is_linux)
    refused = probe.namespace_error
    found.append(
        Check(
            "network namespace",
            refused is None,
            f"a fresh namespace works ({probe.namespace})" if refused is None else refused,
            "" if refused is None else "run tfolab as root, or allow unprivileged user namespaces",
        )
    )
    netem, nfqueue = probe.netem, probe.nfqueue
    netem_fix = _fix("netem", netem)
    if not netem.works and nfqueue.works:
        netem_fix = "nothing to do: the bundled NFQUEUE delayer stands in for netem"
    found.append(Check("netem", netem.works, netem.detail, netem_fix))
    found.append(Check("nfqueue delayer", nfqueue.works, nfqueue.detail, _fix("nfqueue", nfqueue)))
    backend = "netem" if netem.works else "nfqueue" if nfqueue.works else "none"
    found.append(
        Check(
            "delay backend (auto)",
            backend != "none",
            f"{backend} will be used"
            if backend != "none"
            else "none: only undelayed runs (--backend none --delay 0) are possible",
            "" if backend != "none" else NO_BACKEND_FIX,
        )
    )
    fastopen = kernel.read_sysctl("net.ipv4.tcp_fastopen")
    found.append(
        Check(
            "tcp_fastopen (host)",
            fastopen is not None,
            f"{fastopen} on the host; labs set their own value inside their namespace"
            if fastopen is not None
            else "net.ipv4.tcp_fastopen not found",
            "" if fastopen is not None else "a kernel with TCP Fast Open (Linux 3.7+)",
        )
    )
    hz, source = kernel.kernel_hz()
    found.append(Check("kernel HZ", True, f"{hz} ({source}); the model uses it for timer ticks"))
    found.append(_native_check())
    for tool in ("ip", "tc"):
        path = shutil.which(tool)
        found.append(
            Check(
                tool,
                path is not None,
                path or "not found",
                "" if path else "install iproute2 (apt-get install iproute2)",
            )
        )
    found.append(_nginx_check())
    found.append(Check("python", True, platform.python_version()))
    textual = _version("textual")
    found.append(
        Check(
            "textual",
            textual is not None,
            textual or "not installed",
            "" if textual else "pip install textual (or reinstall tfolab)",
        )
    )
    return found


def _fix(backend: str, trial: Trial) -> str:
    """What fixes a backend that did not work, by the kind of its failure."""
    match trial.kind:
        case "works":
            return ""
        case "not_built":
            return REINSTALL_FIX
        case "not_tried":
            return "first make network namespaces work (see above)"
        case "unsupported":
            return BACKENDS[backend].fix


REAL_RUN_NEEDS = ("linux", "network namespace", "delay backend (auto)", "native parts")


def real_runs(found: list[Check]) -> Check:
    """Possible only when every part a delayed real run needs works here."""
    missing = [c for c in found if c.name in REAL_RUN_NEEDS and not c.ok]
    if not missing:
        return Check("real runs", True, "possible")
    names = ", ".join(c.name for c in missing)
    return Check("real runs", False, f"not possible here: {names} missing", missing[0].fix)


def _native_check() -> Check:
    try:
        library = native.library_path()
        native.load_library()
        for name in NATIVE_EXECUTABLES:
            native.executable_path(name)
    except native.NativeError as err:
        return Check("native parts", False, str(err), REINSTALL_FIX)
    return Check(
        "native parts",
        True,
        f"libtfolab.so, {', '.join(NATIVE_EXECUTABLES)} in {library.parent}",
    )


NATIVE_EXECUTABLES = ("tfo-echo-server", "tfo-echo-client", "tfo-bench-client", "tfo-delay")


NGINX_FIX = "apt-get install nginx (tfolab starts its own copy; its service may stay off)"


def _nginx_check() -> Check:
    """The bench's peer: optional, so its absence is said, never a failure of real runs."""
    from tfolab.runner.nginx import find_nginx

    path = find_nginx()
    return Check(
        "nginx (the bench's peer)",
        path is not None,
        path or "not found: `tfolab bench` runs without the peer",
        ""
        if path
        else "apt-get install nginx (tfolab starts its own copy; the service may stay off)",
    )


def report_text(found: list[Check]) -> str:
    width = max(len(c.name) for c in found)
    lines = ["tfolab doctor: what this machine can do", ""]
    for check in found:
        mark = "ok     " if check.ok else "missing"
        lines.append(f"  {mark}  {check.name.ljust(width)}  {check.detail}")
        if check.fix:
            lines.append(f"  {'':7}  {'':{width}}  fix: {check.fix}")
    verdict = real_runs(found)
    lines.append("")
    if verdict.ok:
        lines.append("real runs: possible")
    else:
        lines.append(
            f"real runs: {verdict.detail}; `tfolab simulate` and the UI's model still work"
        )
        lines.append(f"fix: {verdict.fix}")
    return "\n".join(lines)


def report_json(found: list[Check]) -> str:
    verdict = real_runs(found)
    return json.dumps(
        {
            "real_runs": {"possible": verdict.ok, "detail": verdict.detail, "fix": verdict.fix},
            "checks": [asdict(c) for c in found],
        },
        indent=2,
    )

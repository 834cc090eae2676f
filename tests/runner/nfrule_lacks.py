"""Why a way of installing the NFQUEUE rule may be refused, checked against this kernel.

Rules:
- A way's refusal is accepted only as one of LACKS: its sentence matches the lack's
  pattern AND the lack is true of this kernel, read from its build config (a
  CONFIG_X neither built in nor an installed module) or, for the binary, from PATH.
  A sentence that merely looks like a lack, on a kernel that has what it names,
  is a broken way.
- `verify` answers "lacking" (with the fact), "present", or None when the kernel's
  config cannot be read here (the caller decides: skip, or fail under
  TFOLAB_REQUIRE_REAL).
- Pure given a Kernel; `this_kernel()` is the one place the machine is read.
"""

from __future__ import annotations

import contextlib
import platform
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from tfolab.core import kernel

# The module a tristate option builds, for CONFIG_X=m (bool options have none).
MODULES = {
    "NETFILTER_NETLINK": "nfnetlink",
    "NETFILTER_NETLINK_QUEUE": "nfnetlink_queue",
    "NF_TABLES": "nf_tables",
    "NFT_QUEUE": "nft_queue",
    "NFT_COMPAT": "nft_compat",
    "NETFILTER_XT_TARGET_NFQUEUE": "xt_NFQUEUE",
    "IP_NF_IPTABLES": "ip_tables",
    "IP_NF_FILTER": "iptable_filter",
}
IPTABLES_BINARIES = ("iptables", "iptables-nft", "iptables-legacy")


@dataclass(frozen=True)
class Kernel:
    config: dict[str, str] | None  # CONFIG_X -> value; None when unreadable
    config_path: str
    modules: frozenset[str]  # loaded or installed for this release
    iptables: str | None  # an iptables binary on PATH


@dataclass(frozen=True)
class Lack:
    name: str
    ways: tuple[str, ...]
    refusal: re.Pattern[str]
    options: tuple[str, ...] = ()  # lacking when any of these is missing
    binary: bool = False  # lacking when no iptables binary is on PATH


NFT_LACKS = r"nf_tables refused it \((ENOENT|EOPNOTSUPP|EAFNOSUPPORT|EPROTONOSUPPORT)\)"
NO_NFNETLINK = r"no nfnetlink socket \((Protocol not supported|Address family not supported)"

LACKS = (
    Lack(
        "no nf_tables for IPv4",
        ("nf_tables queue", "nf_tables + xt NFQUEUE"),
        re.compile(f"{NFT_LACKS}|{NO_NFNETLINK}"),
        ("NETFILTER_NETLINK", "NF_TABLES", "NF_TABLES_IPV4"),
    ),
    Lack(
        "no nf_tables queue expression",
        ("nf_tables queue",),
        re.compile(NFT_LACKS),
        ("NFT_QUEUE", "NETFILTER_NETLINK_QUEUE"),
    ),
    Lack(
        "no xtables compatibility or NFQUEUE target",
        ("nf_tables + xt NFQUEUE",),
        re.compile(NFT_LACKS),
        ("NFT_COMPAT", "NETFILTER_XT_TARGET_NFQUEUE", "NETFILTER_NETLINK_QUEUE"),
    ),
    Lack(
        "no legacy ip_tables or its filter table",
        ("ip_tables (legacy)",),
        re.compile(r"ip_tables: (Protocol not available|No such file or directory)"),
        ("IP_NF_IPTABLES", "IP_NF_FILTER"),
    ),
    Lack(
        "no NFQUEUE target for ip_tables",
        ("ip_tables (legacy)",),
        re.compile(r"ip_tables refused it \((No such file or directory|Protocol not available)\)"),
        ("NETFILTER_XT_TARGET_NFQUEUE", "NETFILTER_NETLINK_QUEUE"),
    ),
    Lack(
        "no iptables binary",
        ("iptables binary",),
        re.compile(r"^iptables binary: no iptables binary on PATH$"),
        binary=True,
    ),
)


def missing(found: Kernel, option: str) -> bool:
    """CONFIG_option is neither built in nor a module this machine has (found.config set)."""
    assert found.config is not None
    value = found.config.get(f"CONFIG_{option}")
    if value == "y":
        return False
    if value == "m":
        return MODULES.get(option, "") not in found.modules
    return True


def verify(way: str, refusal: str, found: Kernel) -> tuple[str, str] | str | None:
    """(lack, fact) when `refusal` is a lack of `way` true of `found`; otherwise a sentence
    saying why not; None when the fact hinges on a config that cannot be read here."""
    named = [lack for lack in LACKS if way in lack.ways and lack.refusal.search(refusal)]
    if not named:
        return f"{way} refused for no lack it may have: {refusal}"
    unknown = False
    for lack in named:
        if lack.binary:
            if found.iptables is None:
                return lack.name, "no iptables binary on PATH"
            continue
        if found.config is None:
            unknown = True
            continue
        gone = [f"CONFIG_{o}" for o in lack.options if missing(found, o)]
        if gone:
            return lack.name, f"{', '.join(gone)} not built or installed ({found.config_path})"
    if unknown:
        return None
    names = " or ".join(lack.name for lack in named)
    return f"{way} refused ({refusal}) as if {names}, but this kernel has it ({found.config_path})"


def _modules() -> frozenset[str]:
    names: set[str] = set()
    with contextlib.suppress(OSError):
        names |= {line.split()[0] for line in Path("/proc/modules").read_text().splitlines()}
    try:
        dep = Path("/lib/modules", platform.release(), "modules.dep").read_text()
    except OSError:
        dep = ""
    for line in dep.splitlines():
        stem = Path(line.split(":", 1)[0]).name.split(".ko", 1)[0]
        names.add(stem.replace("-", "_"))
    return frozenset(names)


def this_kernel() -> Kernel:
    config = kernel.kernel_config()
    binary = next((name for name in IPTABLES_BINARIES if shutil.which(name)), None)
    return Kernel(
        config[0] if config else None,
        config[1] if config else "no readable kernel config",
        _modules(),
        binary,
    )

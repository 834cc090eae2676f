"""The NFQUEUE rule installed without any binary (tfolab.runner.backends.nfrule).

Pure tests pin the messages' layout; the real tests install the rule each way
this kernel accepts, in a throwaway namespace, and prove packets are queued.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import LabMachine
from tests.environment import require_or_skip
from tests.runner import nfrule_lacks
from tfolab.runner.backends import nfrule

CHECK = Path(__file__).with_name("nfrule_check.py")


def _messages(batch: bytes) -> list[tuple[int, int, bytes]]:
    found, offset = [], 0
    while offset < len(batch):
        length, kind, flags, _seq, _pid = struct.unpack_from("=IHHII", batch, offset)
        found.append((kind, flags, batch[offset + 16 : offset + length]))
        offset += length
    return found


def test_attributes_are_padded_to_four_bytes() -> None:
    assert nfrule.attr(1, b"lo\0") == struct.pack("=HH", 7, 1) + b"lo\0\0"
    assert len(nfrule.nested(4, nfrule.attr(1, b"x"))) == 12


def test_the_batch_is_one_transaction_of_table_chain_and_rule() -> None:
    batch = nfrule.nft_batch(nfrule.compat_target_expression(7))
    kinds = [kind for kind, _flags, _body in _messages(batch)]
    subsystem = nfrule.NFNL_SUBSYS_NFTABLES << 8
    assert kinds == [
        nfrule.NFNL_MSG_BATCH_BEGIN,
        subsystem | nfrule.NFT_MSG_NEWTABLE,
        subsystem | nfrule.NFT_MSG_NEWCHAIN,
        subsystem | nfrule.NFT_MSG_NEWRULE,
        nfrule.NFNL_MSG_BATCH_END,
    ]
    chain, rule = _messages(batch)[2][2], _messages(batch)[3][2]
    assert b"input\0" in chain  # the receiving end: INPUT, iif lo
    hook = nfrule.attr(nfrule.NFTA_HOOK_HOOKNUM, nfrule.be32(nfrule.NF_INET_LOCAL_IN))
    assert hook in chain
    assert nfrule.attr(nfrule.NFTA_META_KEY, nfrule.be32(nfrule.NFT_META_IIF)) in rule
    assert b"NFQUEUE\0" in rule and b"meta\0" in rule and b"cmp\0" in rule
    # xt_NFQ_info_v3: queue 7, one queue, bypass; padded to XT_ALIGN
    assert struct.pack("=HHH", 7, 1, 1) + b"\0\0" in rule


def test_the_legacy_entry_matches_in_lo_tcp() -> None:
    entry = nfrule.legacy_rule_entry(7)
    assert len(entry) == nfrule.IPT_ENTRY_SIZE + 40  # xt_entry_target (32) + info (8)
    fields = nfrule.IPT_ENTRY_HEAD.unpack_from(entry)
    # ipt_ip: src, dst, their masks, iniface, outiface, their masks, proto
    assert fields[4].rstrip(b"\0") == b"lo" and fields[5] == bytes(16)
    assert fields[6].rstrip(b"\0") == b"\xff" * 3 and fields[8] == socket.IPPROTO_TCP
    assert fields[12:14] == (nfrule.IPT_ENTRY_SIZE, len(entry))


def test_acks_and_errors_are_read_from_the_reply() -> None:
    ack = struct.pack("=IHHII", 36, nfrule.NLMSG_ERROR, 0, 5, 0) + struct.pack("=i", 0) + bytes(16)
    nak = struct.pack("=IHHII", 36, nfrule.NLMSG_ERROR, 0, 6, 0) + struct.pack("=i", -2) + bytes(16)
    assert nfrule.parse_acks(ack + nak) == [(5, 0), (6, 2)]


def test_every_way_refused_names_each_reason() -> None:
    def refuse(_queue: int, _protocol: int) -> None:
        raise nfrule.RuleRefused("not here")

    ways = (nfrule.Way("a", refuse), nfrule.Way("b", refuse))
    with pytest.raises(nfrule.RuleRefused, match="a: not here; b: not here"):
        nfrule.install_rule(ways=ways)


@pytest.mark.parametrize("way", [way.name for way in nfrule.WAYS])
def test_each_way_queues_for_real_or_is_refused_for_what_this_kernel_lacks(
    lab_machine: LabMachine, way: str
) -> None:
    """A way this kernel offers must queue; a way refused must be refused for one of
    nfrule_lacks.LACKS that is true of this kernel (its config, its modules, PATH), so
    one broken way cannot hide behind another that works."""
    env = {**os.environ, "PATH": _path_without_iptables()} if way != "iptables binary" else None
    done = subprocess.run(
        [sys.executable, str(CHECK), way], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    if "refused" in result:
        verdict = nfrule_lacks.verify(way, result["refused"], nfrule_lacks.this_kernel())
        if verdict is None:
            require_or_skip(
                "NFQUEUE",
                f"{way} was refused ({result['refused']}) and no kernel config is "
                "readable here to confirm this kernel lacks it",
            )
        assert isinstance(verdict, tuple), verdict
        return
    assert result["way"] == way
    # SYN and SYN-ACK each held 20 ms: the packets went through the queue.
    assert result["connect_ms"] >= 2 * 20.0


def _kernel(
    config: dict[str, str] | None, modules: str = "", binary: str | None = None
) -> nfrule_lacks.Kernel:
    return nfrule_lacks.Kernel(config, "test config", frozenset(modules.split()), binary)


FULL = {
    f"CONFIG_{option}": "y"
    for option in (
        "NETFILTER_NETLINK", "NETFILTER_NETLINK_QUEUE", "NF_TABLES", "NF_TABLES_IPV4",
        "NFT_QUEUE", "NFT_COMPAT", "NETFILTER_XT_TARGET_NFQUEUE", "IP_NF_IPTABLES",
        "IP_NF_FILTER",
    )
}  # fmt: skip


def test_a_refusal_counts_only_when_the_kernel_lacks_what_it_names() -> None:
    enoent = "nf_tables queue: nf_tables refused it (ENOENT)"
    # The text of a lack on a kernel that has everything: a broken way, not a lack.
    said = nfrule_lacks.verify("nf_tables queue", enoent, _kernel(FULL))
    assert isinstance(said, str) and "but this kernel has it" in said
    without = {**FULL, "CONFIG_NFT_QUEUE": "n"}
    assert nfrule_lacks.verify("nf_tables queue", enoent, _kernel(without)) == (
        "no nf_tables queue expression",
        "CONFIG_NFT_QUEUE not built or installed (test config)",
    )
    # A module counts as present when it is loaded or installed for this release.
    as_module = {**FULL, "CONFIG_NFT_QUEUE": "m"}
    assert isinstance(nfrule_lacks.verify("nf_tables queue", enoent, _kernel(as_module)), tuple)
    loaded = _kernel(as_module, "nft_queue")
    assert isinstance(nfrule_lacks.verify("nf_tables queue", enoent, loaded), str)
    # Refusals that are never a lack: a malformed message, a refusal as root.
    for refusal in ("nf_tables refused it (EINVAL)", "nf_tables refused it (EPERM)"):
        said = nfrule_lacks.verify("nf_tables queue", refusal, _kernel(without))
        assert isinstance(said, str) and "for no lack it may have" in said
    # A lack of one way does not excuse another.
    said = nfrule_lacks.verify("nf_tables + xt NFQUEUE", enoent, _kernel(without))
    assert isinstance(said, str)
    # Unknown without a config; the binary is read from PATH.
    assert nfrule_lacks.verify("nf_tables queue", enoent, _kernel(None)) is None
    no_binary = "iptables binary: no iptables binary on PATH"
    assert isinstance(nfrule_lacks.verify("iptables binary", no_binary, _kernel(None)), tuple)
    with_binary = _kernel(None, binary="iptables")
    assert isinstance(nfrule_lacks.verify("iptables binary", no_binary, with_binary), str)


def _path_without_iptables() -> str:
    keep = []
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        names = ("iptables", "iptables-nft", "iptables-legacy")
        if not any((Path(folder) / name).exists() for name in names):
            keep.append(folder)
    return os.pathsep.join(keep)


def test_some_way_is_accepted(lab_machine: LabMachine) -> None:
    """The probe installed the rule one way or another (CI's machine must)."""
    if not lab_machine.nfqueue:
        require_or_skip("NFQUEUE", lab_machine.why_no_delay)

"""The NFQUEUE rule, installed by tfolab itself: INPUT `-i lo -p tcp -j NFQUEUE --queue-bypass`.

The bundled delayer (tfo-delay) holds each packet that a netfilter rule sends
to its queue. This module puts that rule in place inside the lab's namespace
without any `iptables` or `nft` binary, by speaking to the kernel directly.

Rules:
- Call it only inside the lab's namespace: the rule lives and dies with it.
- The rule sits at the receiving end (the INPUT hook, packets arriving on lo),
  never in OUTPUT: loopback_xmit has orphaned the skb by then, so the sender's
  socket is no longer charged for a packet on its way, as on a real path and as
  with netem (which orphans at its enqueue). A packet held in OUTPUT stays
  charged, and TCP Small Queues holds the sender's next skb for it
  (docs/TCP-NOTES.md, "Delay emulation").
- The ways are tried in this order, the first the kernel accepts wins:
  1. nf_tables over netlink with the native `queue` expression (CONFIG_NFT_QUEUE);
  2. nf_tables with the xtables-compatible NFQUEUE target (what iptables-nft
     sends; CONFIG_NFT_COMPAT + CONFIG_NETFILTER_XT_TARGET_NFQUEUE);
  3. the legacy ip_tables socket interface (IPT_SO_SET_REPLACE on "filter");
  4. an `iptables` binary, when one is on PATH.
  `install_rule` says which one took, and why the others were refused.
- Messages are built by small pure functions (tested byte for byte); the only
  side effects are the netlink / setsockopt calls in the `_send_*` helpers.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import socket
import struct
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field

from tfolab.core import kernel

QUEUE_NUMBER = 7
LOOPBACK_IFINDEX = 1  # lo is ifindex 1 in every network namespace
TABLE = b"tfolab"
CHAIN = b"input"

# linux/netlink.h, linux/netfilter/nfnetlink.h, linux/netfilter/nf_tables.h
NETLINK_NETFILTER = 12
NLM_F_REQUEST, NLM_F_ACK, NLM_F_EXCL, NLM_F_CREATE, NLM_F_APPEND = 0x1, 0x4, 0x200, 0x400, 0x800
NLMSG_ERROR = 0x2
NLA_F_NESTED = 0x8000
NFNL_MSG_BATCH_BEGIN, NFNL_MSG_BATCH_END = 0x10, 0x11
NFNL_SUBSYS_NFTABLES = 10
NFT_MSG_NEWTABLE, NFT_MSG_NEWCHAIN, NFT_MSG_NEWRULE = 0, 3, 6
NFPROTO_IPV4 = 2
NF_INET_LOCAL_IN = 1
NF_ACCEPT = 1
NFTA_TABLE_NAME = 1
NFTA_CHAIN_TABLE, NFTA_CHAIN_NAME, NFTA_CHAIN_HOOK, NFTA_CHAIN_POLICY, NFTA_CHAIN_TYPE = (
    1, 3, 4, 5, 7,
)  # fmt: skip
NFTA_HOOK_HOOKNUM, NFTA_HOOK_PRIORITY = 1, 2
NFTA_RULE_TABLE, NFTA_RULE_CHAIN, NFTA_RULE_EXPRESSIONS = 1, 2, 4
NFTA_LIST_ELEM = 1
NFTA_EXPR_NAME, NFTA_EXPR_DATA = 1, 2
NFTA_META_DREG, NFTA_META_KEY = 1, 2
NFT_META_IIF, NFT_META_L4PROTO = 4, 16
NFTA_CMP_SREG, NFTA_CMP_OP, NFTA_CMP_DATA = 1, 2, 3
NFTA_DATA_VALUE = 1
NFT_CMP_EQ = 0
NFT_REG_1 = 1
NFTA_QUEUE_NUM, NFTA_QUEUE_TOTAL, NFTA_QUEUE_FLAGS = 1, 2, 3
NFT_QUEUE_FLAG_BYPASS = 0x01
NFTA_TARGET_NAME, NFTA_TARGET_REV, NFTA_TARGET_INFO = 1, 2, 3
NFQ_FLAG_BYPASS = 0x01  # linux/netfilter/xt_NFQUEUE.h, revision 3


_PROTOCOL_NUMBERS = {"tcp": socket.IPPROTO_TCP, "udp": socket.IPPROTO_UDP}
_PROTOCOL_NAMES = {number: name for name, number in _PROTOCOL_NUMBERS.items()}


class RuleRefused(Exception):
    """One way of installing the rule was refused; the text says why."""


# -- netlink message building (pure) ------------------------------------------


def _align4(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % 4)


def attr(kind: int, payload: bytes) -> bytes:
    return _align4(struct.pack("=HH", 4 + len(payload), kind) + payload)


def nested(kind: int, *children: bytes) -> bytes:
    return attr(kind | NLA_F_NESTED, b"".join(children))


def be32(value: int) -> bytes:
    return struct.pack("!I", value)


def be16(value: int) -> bytes:
    return struct.pack("!H", value)


def cstr(value: bytes) -> bytes:
    return value + b"\0"


def message(kind: int, flags: int, seq: int, family: int, body: bytes, res_id: int = 0) -> bytes:
    """One netlink message with its nfgenmsg header (version 0)."""
    nfgen = struct.pack("!BBH", family, 0, res_id)
    header = struct.pack("=IHHII", 16 + len(nfgen) + len(body), kind, flags, seq, 0)
    return header + nfgen + body


def _expression(name: bytes, *data: bytes) -> bytes:
    return nested(NFTA_LIST_ELEM, attr(NFTA_EXPR_NAME, cstr(name)), nested(NFTA_EXPR_DATA, *data))


def _meta_cmp(key: int, value: bytes) -> list[bytes]:
    """`meta KEY == value` as two expressions: load into reg 1, compare."""
    return [
        _expression(b"meta", attr(NFTA_META_DREG, be32(NFT_REG_1)), attr(NFTA_META_KEY, be32(key))),
        _expression(
            b"cmp",
            attr(NFTA_CMP_SREG, be32(NFT_REG_1)),
            attr(NFTA_CMP_OP, be32(NFT_CMP_EQ)),
            nested(NFTA_CMP_DATA, attr(NFTA_DATA_VALUE, value)),
        ),
    ]


def queue_expression(queue: int) -> bytes:
    """The native nf_tables `queue num Q bypass` (net/netfilter/nft_queue.c)."""
    return _expression(
        b"queue",
        attr(NFTA_QUEUE_NUM, be16(queue)),
        attr(NFTA_QUEUE_TOTAL, be16(1)),
        attr(NFTA_QUEUE_FLAGS, be16(NFT_QUEUE_FLAG_BYPASS)),
    )


def compat_target_expression(queue: int) -> bytes:
    """xt_NFQUEUE revision 3 through nft_compat, padded to XT_ALIGN (8) as iptables-nft does."""
    info = struct.pack("=HHH", queue, 1, NFQ_FLAG_BYPASS).ljust(8, b"\0")
    return _expression(
        b"target",
        attr(NFTA_TARGET_NAME, cstr(b"NFQUEUE")),
        attr(NFTA_TARGET_REV, be32(3)),
        attr(NFTA_TARGET_INFO, info),
    )


def nft_batch(verdict: bytes, protocol: int = socket.IPPROTO_TCP, seq: int = 1) -> bytes:
    """Table, input chain and rule `iif lo, l4proto PROTOCOL, <verdict>` in one transaction."""
    kind = NFNL_SUBSYS_NFTABLES << 8
    create = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE
    match = [*_meta_cmp(NFT_META_IIF, struct.pack("=I", LOOPBACK_IFINDEX))]
    match += _meta_cmp(NFT_META_L4PROTO, bytes([protocol]))
    parts = [
        message(NFNL_MSG_BATCH_BEGIN, NLM_F_REQUEST, seq, 0, b"", NFNL_SUBSYS_NFTABLES),
        message(kind | NFT_MSG_NEWTABLE, create, seq + 1, NFPROTO_IPV4,
                attr(NFTA_TABLE_NAME, cstr(TABLE))),
        message(kind | NFT_MSG_NEWCHAIN, create, seq + 2, NFPROTO_IPV4, b"".join([
            attr(NFTA_CHAIN_TABLE, cstr(TABLE)),
            attr(NFTA_CHAIN_NAME, cstr(CHAIN)),
            nested(NFTA_CHAIN_HOOK, attr(NFTA_HOOK_HOOKNUM, be32(NF_INET_LOCAL_IN)),
                   attr(NFTA_HOOK_PRIORITY, be32(0))),
            attr(NFTA_CHAIN_POLICY, be32(NF_ACCEPT)),
            attr(NFTA_CHAIN_TYPE, cstr(b"filter")),
        ])),
        message(kind | NFT_MSG_NEWRULE, create | NLM_F_APPEND, seq + 3, NFPROTO_IPV4, b"".join([
            attr(NFTA_RULE_TABLE, cstr(TABLE)),
            attr(NFTA_RULE_CHAIN, cstr(CHAIN)),
            nested(NFTA_RULE_EXPRESSIONS, *match, verdict),
        ])),
        message(NFNL_MSG_BATCH_END, NLM_F_REQUEST, seq + 4, 0, b"", NFNL_SUBSYS_NFTABLES),
    ]  # fmt: skip
    return b"".join(parts)


def parse_acks(data: bytes) -> list[tuple[int, int]]:
    """(sequence, errno) of every NLMSG_ERROR in a netlink reply (errno 0 is an ACK)."""
    found = []
    offset = 0
    while offset + 16 <= len(data):
        length, kind, _flags, seq, _pid = struct.unpack_from("=IHHII", data, offset)
        if length < 16:
            break
        if kind == NLMSG_ERROR and length >= 20:
            (error,) = struct.unpack_from("=i", data, offset + 16)
            found.append((seq, -error))
        offset += (length + 3) & ~3
    return found


def _send_nft(batch: bytes, expected: int) -> None:
    try:
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    except OSError as err:
        raise RuleRefused(f"no nfnetlink socket ({err.strerror})") from None
    with sock:
        sock.settimeout(5)
        sock.bind((0, 0))
        sock.send(batch)
        acked = 0
        while acked < expected:
            try:
                reply = sock.recv(65536)
            except TimeoutError:
                raise RuleRefused("nf_tables did not answer") from None
            for _seq, code in parse_acks(reply):
                if code:
                    raise RuleRefused(f"nf_tables refused it ({errno.errorcode.get(code, code)})")
                acked += 1


# -- legacy ip_tables (IPT_SO_SET_REPLACE) --------------------------------------

IPT_SO_SET_REPLACE = 64
IPT_SO_GET_INFO = 64
IPT_SO_GET_ENTRIES = 65
NF_IP_NUMHOOKS = 5
IPT_ENTRY_SIZE = 112  # struct ipt_entry on 64-bit Linux (ipt_ip 84, then 28 with counters)
XT_TARGET_HEADER = 32  # struct xt_entry_target: u16 size, char name[29], u8 revision
IPT_ENTRY_HEAD = struct.Struct("=4s4s4s4s16s16s16s16sHBBIHHI16s")  # ipt_ip .. counters
GETINFO = struct.Struct("=32sI5I5III")


def _xt_target(name: bytes, revision: int, data: bytes) -> bytes:
    size = XT_TARGET_HEADER + len(data)
    size += -size % 8
    return struct.pack("=H29sB", size, name, revision) + data.ljust(size - XT_TARGET_HEADER, b"\0")


def legacy_rule_entry(queue: int, protocol: int = socket.IPPROTO_TCP) -> bytes:
    """`-i lo -p PROTOCOL -j NFQUEUE --queue-num Q --queue-bypass` as one struct ipt_entry."""
    target = _xt_target(b"NFQUEUE", 3, struct.pack("=HHH", queue, 1, NFQ_FLAG_BYPASS))
    iniface = b"lo".ljust(16, b"\0")
    mask = b"\xff\xff\xff"  # "lo" plus its NUL, as iptables masks an exact name
    head = IPT_ENTRY_HEAD.pack(
        b"", b"", b"", b"", iniface, b"", mask.ljust(16, b"\0"), b"",
        protocol, 0, 0, 0, IPT_ENTRY_SIZE, IPT_ENTRY_SIZE + len(target), 0, b"",
    )  # fmt: skip
    return head + target


def legacy_replace(
    info: bytes, entries: bytes, queue: int, protocol: int = socket.IPPROTO_TCP
) -> tuple[bytes, int]:
    """A new filter table: the old one with the rule first in INPUT (and the old entry count)."""
    _name, valid, *rest = GETINFO.unpack(info)
    hook_entry, underflow = list(rest[:5]), list(rest[5:10])
    num_entries, size = rest[10], rest[11]
    rule = legacy_rule_entry(queue, protocol)
    at = hook_entry[NF_INET_LOCAL_IN]
    new_entries = entries[:at] + rule + entries[at:size]
    for hook in range(NF_IP_NUMHOOKS):
        if valid & (1 << hook) and hook != NF_INET_LOCAL_IN and hook_entry[hook] >= at:
            hook_entry[hook] += len(rule)
        if valid & (1 << hook) and underflow[hook] >= at:
            underflow[hook] += len(rule)
    header = struct.pack(
        "=32sIII5I5IIQ", b"filter", valid, num_entries + 1, len(new_entries),
        *hook_entry, *underflow, num_entries, 0,
    )  # fmt: skip
    return header + new_entries, num_entries


IPT_REPLACE_COUNTERS_AT = 88  # offsetof(struct ipt_replace, counters)
IPT_GET_ENTRIES_HEADER = 40  # sizeof(struct ipt_get_entries): name, size, padding to 8


def _getsockopt(fd: int, option: int, request: bytes, size: int) -> bytes:
    """getsockopt with an input buffer (ip_tables reads the table name from it)."""
    libc = ctypes.CDLL(None, use_errno=True)
    buffer = ctypes.create_string_buffer(request.ljust(size, b"\0"), size)
    length = ctypes.c_uint(size)
    if libc.getsockopt(fd, socket.IPPROTO_IP, option, buffer, ctypes.byref(length)) != 0:
        code = ctypes.get_errno()
        raise RuleRefused(f"ip_tables: {os.strerror(code)}")
    return buffer.raw[: length.value]


def _send_legacy(queue: int, protocol: int) -> None:
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    except OSError as err:
        raise RuleRefused(f"no raw socket ({err.strerror})") from None
    with sock:
        name = b"filter".ljust(32, b"\0")
        info = _getsockopt(sock.fileno(), IPT_SO_GET_INFO, name, GETINFO.size)
        size = GETINFO.unpack(info)[-1]
        request = struct.pack("=32sI", b"filter", size)
        got = _getsockopt(sock.fileno(), IPT_SO_GET_ENTRIES, request, IPT_GET_ENTRIES_HEADER + size)
        replace, old_count = legacy_replace(info, got[IPT_GET_ENTRIES_HEADER:], queue, protocol)
        counters = ctypes.create_string_buffer(16 * max(old_count, 1))
        # struct ipt_replace ends with a user pointer where the kernel writes the old counters.
        blob = bytearray(replace)
        struct.pack_into("=Q", blob, IPT_REPLACE_COUNTERS_AT, ctypes.addressof(counters))
        try:
            sock.setsockopt(socket.IPPROTO_IP, IPT_SO_SET_REPLACE, bytes(blob))
        except OSError as err:
            raise RuleRefused(f"ip_tables refused it ({err.strerror})") from None


# -- the iptables binary --------------------------------------------------------


def iptables_binary() -> str | None:
    for name in ("iptables", "iptables-nft", "iptables-legacy"):
        if shutil.which(name):
            return name
    return None


def iptables_args(iptables: str, queue: int, protocol: str = "tcp") -> list[str]:
    """Send every PROTOCOL packet arriving on lo to the queue (bypassed if no one listens)."""
    return [iptables, "-w", "-A", "INPUT", "-i", "lo", "-p", protocol,
            "-j", "NFQUEUE", "--queue-num", str(queue), "--queue-bypass"]  # fmt: skip


def _run_iptables(queue: int, protocol: int) -> None:
    binary = iptables_binary()
    if binary is None:
        raise RuleRefused("no iptables binary on PATH")
    done = subprocess.run(
        iptables_args(binary, queue, _PROTOCOL_NAMES[protocol]),
        capture_output=True,
        text=True,
        timeout=10,
    )
    if done.returncode != 0:
        raise RuleRefused(f"{binary} failed: {done.stderr.strip() or done.returncode}")


# -- the order of attempts --------------------------------------------------------


@dataclass(frozen=True)
class Way:
    name: str
    install: Callable[[int, int], None]


WAYS: tuple[Way, ...] = (
    Way("nf_tables queue", lambda q, p: _send_nft(nft_batch(queue_expression(q), p), 3)),
    Way(
        "nf_tables + xt NFQUEUE",
        lambda q, p: _send_nft(nft_batch(compat_target_expression(q), p), 3),
    ),
    Way("ip_tables (legacy)", _send_legacy),
    Way("iptables binary", _run_iptables),
)


@dataclass
class InstalledRule:
    way: str
    refused: list[str] = field(default_factory=list)


def install_rule(
    queue: int = QUEUE_NUMBER, protocol: str = "tcp", ways: tuple[Way, ...] = WAYS
) -> InstalledRule:
    """Install the rule in this namespace the first way the kernel accepts.

    Raises RuleRefused naming every way and why it failed when none works.
    """
    refused: list[str] = []
    for way in ways:
        try:
            way.install(queue, _PROTOCOL_NUMBERS[protocol])
        except RuleRefused as err:
            refused.append(f"{way.name}: {err}")
            continue
        return InstalledRule(way.name, refused)
    raise RuleRefused("; ".join(refused))


def kernel_may_queue() -> str | None:
    """A cheap look (no namespace) at whether this kernel can queue packets at all.

    None when it can, or when it cannot be told (no readable config); otherwise why not.
    """
    found = kernel.kernel_config()
    if found is None:
        return None
    config = found[0]
    if not kernel.config_has(config, "NETFILTER_NETLINK_QUEUE"):
        return "this kernel has no NFQUEUE (CONFIG_NETFILTER_NETLINK_QUEUE)"
    if kernel.config_has(config, "NF_TABLES", "NFT_QUEUE"):
        return None
    if kernel.config_has(config, "NETFILTER_XT_TARGET_NFQUEUE") and (
        kernel.config_has(config, "NF_TABLES", "NFT_COMPAT")
        or kernel.config_has(config, "IP_NF_IPTABLES")
        or iptables_binary()
    ):
        return None
    return "this kernel has neither nf_tables' queue nor the xtables NFQUEUE target"

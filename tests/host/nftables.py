"""The nf_tables ruleset of the caller's network namespace, read over netlink.

Rules:
- No nft binary, no libnftnl: a NFNL_SUBSYS_NFTABLES dump (GETTABLE, GETCHAIN,
  GETRULE, every family) on a NETLINK_NETFILTER socket, written here
  independently of tfolab's own rule code so that it can judge it.
- Only the structure is kept: tables, chains, and rules by their handle. A
  rule's counters move with traffic, so expressions are not compared.
- A kernel without nf_tables answers with an error; `ruleset` then returns one
  line naming it, which stays the same before and after.
"""

from __future__ import annotations

import errno
import os
import socket
import struct

NETLINK_NETFILTER = 12
NFNL_SUBSYS_NFTABLES = 10
GETTABLE, GETCHAIN, GETRULE = 1, 4, 7  # NFT_MSG_GET*; the answers are NEW* (0, 3, 6)
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
NLMSGHDR = struct.Struct("=IHHII")
NFGENMSG = struct.Struct("=BBH")  # family, version, res_id (big-endian, unused here)
NLATTR = struct.Struct("=HH")
NLA_TYPE_MASK = 0x3FFF
# NFTA_TABLE_NAME = 1; NFTA_CHAIN_TABLE = 1, NFTA_CHAIN_NAME = 3;
# NFTA_RULE_TABLE = 1, NFTA_RULE_CHAIN = 2, NFTA_RULE_HANDLE = 3 (big-endian u64)
FAMILIES = {0: "unspec", 1: "inet", 2: "ip", 3: "arp", 5: "netdev", 7: "bridge", 10: "ip6"}


def _attributes(data: bytes, offset: int) -> dict[int, bytes]:
    found: dict[int, bytes] = {}
    while offset + NLATTR.size <= len(data):
        length, kind = NLATTR.unpack_from(data, offset)
        if length < NLATTR.size:
            break
        found[kind & NLA_TYPE_MASK] = data[offset + NLATTR.size : offset + length]
        offset += (length + 3) & ~3
    return found


def _text(value: bytes | None) -> str:
    return (value or b"").rstrip(b"\0").decode(errors="replace")


def _dump(sock: socket.socket, kind: int, seq: int) -> list[tuple[int, dict[int, bytes]]]:
    """Every answer to one dump request: (family, attributes)."""
    request = NLMSGHDR.pack(
        NLMSGHDR.size + NFGENMSG.size,
        (NFNL_SUBSYS_NFTABLES << 8) | kind,
        NLM_F_REQUEST | NLM_F_DUMP,
        seq,
        0,
    ) + NFGENMSG.pack(socket.AF_UNSPEC, 0, 0)
    sock.send(request)
    answers: list[tuple[int, dict[int, bytes]]] = []
    while True:
        data = sock.recv(1 << 20)
        offset = 0
        while offset + NLMSGHDR.size <= len(data):
            length, msg_type, _flags, _seq, _pid = NLMSGHDR.unpack_from(data, offset)
            body = offset + NLMSGHDR.size
            if msg_type == NLMSG_DONE:
                return answers
            if msg_type == NLMSG_ERROR:
                (code,) = struct.unpack_from("=i", data, body)
                if code:
                    raise OSError(-code, os.strerror(-code))
                return answers
            family = data[body]
            answers.append((family, _attributes(data[: offset + length], body + NFGENMSG.size)))
            offset += (length + 3) & ~3
        if not data:
            return answers


def ruleset() -> list[str]:
    """Sorted lines: `table FAMILY NAME`, `chain FAMILY TABLE NAME`, `rule FAMILY TABLE
    CHAIN #HANDLE`; or one line saying why nf_tables cannot be read here."""
    try:
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    except OSError as err:
        return [f"no nf_tables netlink here: {errno.errorcode.get(err.errno or 0, err)}"]
    lines: list[str] = []
    with sock:
        try:
            for family, attrs in _dump(sock, GETTABLE, 1):
                lines.append(f"table {FAMILIES.get(family, family)} {_text(attrs.get(1))}")
            for family, attrs in _dump(sock, GETCHAIN, 2):
                where = f"{FAMILIES.get(family, family)} {_text(attrs.get(1))}"
                lines.append(f"chain {where} {_text(attrs.get(3))}")
            for family, attrs in _dump(sock, GETRULE, 3):
                handle = int.from_bytes(attrs.get(3, b""), "big")
                where = f"{FAMILIES.get(family, family)} {_text(attrs.get(1))}"
                lines.append(f"rule {where} {_text(attrs.get(2))} #{handle}")
        except OSError as err:
            return [f"nf_tables cannot be dumped here: {errno.errorcode.get(err.errno or 0, err)}"]
    return sorted(lines)

"""TCP Fast Open: cookies, the client's cookie cache, and both sides' decisions.

Rules (net/ipv4/tcp_fastopen.c, tcp_output.c, tcp_input.c, tcp_metrics.c):
- net.ipv4.tcp_fastopen bits: 0x1 client, 0x2 server, 0x4 client sends SYN
  data without a cookie, 0x200 server accepts SYN data without a cookie,
  0x400 server TFO on listeners without the TCP_FASTOPEN sockopt.
- A cookie is 8 bytes computed from the server key and the two IP addresses
  only; the model derives it deterministically from the key generation.
- Client (tcp_send_syn_data / tcp_fastopen_cookie_check): with a cached cookie
  the SYN carries it and min(data, MTU - 40 - 40) bytes (MAX_TCP_OPTION_SPACE
  is reserved: 1420 B at MTU 1500), at most what the skb can hold: before
  6.5 a linear head of one page ("limit to order-0 allocations":
  SKB_MAX_HEAD(MAX_TCP_HEADER), 3456 B), from 6.5 the page fragment it is
  copied into (32 KiB); with 0x4 the SYN carries data and no
  option; otherwise a regular SYN with an empty cookie option (a request),
  in the experimental kind 254 when the previous request went unanswered
  (try_exp 1), and back to kind 34 after that (try_exp 2).
- Server (tcp_try_fastopen): a SYN with a cookie option counts CookieReqd if
  the cookie is empty; TFO needs bit 0x2, a queue (qlen > 0) that is not full
  (ListenOverflow otherwise), then either 0x200, or a cookie valid under the
  current key (the child socket is created and the data accepted: Passive),
  or an invalid one (PassiveFail, the data is dropped). The SYN-ACK carries a
  fresh cookie when one was asked for or the one sent was not valid.
- Client on the SYN-ACK (tcp_rcv_fastopen_synack): a cookie is cached; SYN
  data not acknowledged is retransmitted at once (ActiveFail); acknowledged
  SYN data counts Active.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from tfolab.model.events import CookieInfo
from tfolab.model.rcv_space import MAX_TCP_HEADER, SHINFO_BYTES

TFO_CLIENT_ENABLE = 0x1
TFO_SERVER_ENABLE = 0x2
TFO_CLIENT_NO_COOKIE = 0x4
TFO_SERVER_COOKIE_NOT_REQD = 0x200
TFO_SERVER_WO_SOCKOPT1 = 0x400
MAX_TCP_OPTION_SPACE = 40
TFO_COOKIE_LEN = 8
SYN_DATA_FRAG_LIMIT = 32768  # the page fragment the SYN data is copied into (6.5+)
PAGE_SIZE = 4096
# before 6.5: SKB_MAX_HEAD(MAX_TCP_HEADER), the data an order-0 linear head holds
SYN_DATA_HEAD_LIMIT = PAGE_SIZE - MAX_TCP_HEADER - SHINFO_BYTES


def cookie_for(key_generation: int) -> str:
    """The 8-byte cookie for 127.0.0.1 -> 127.0.0.1 under one server key (hex)."""
    digest = hashlib.blake2b(
        f"tfolab key {key_generation}: 127.0.0.1 -> 127.0.0.1".encode(), digest_size=8
    )
    return digest.hexdigest()


def syn_data_space(mtu: int, *, linear: bool) -> int:
    """How many bytes of data a SYN can carry (tcp_send_syn_data): MSS without options,
    minus 40, at most what its skb holds: one page's linear head where the kernel still
    builds it so (`linear`, before 6.5: 3456 B), else its page fragment."""
    mss_no_options = min(mtu, 65535) - 20 - 20
    limit = SYN_DATA_HEAD_LIMIT if linear else SYN_DATA_FRAG_LIMIT
    return max(0, min(mss_no_options - MAX_TCP_OPTION_SPACE, limit))


@dataclass
class CookieCache:
    """The client's tcp_metrics entry for 127.0.0.1 (one destination)."""

    cookie_hex: str = ""
    key_generation: int = 0
    try_exp: int = 0

    def flush(self) -> None:
        self.cookie_hex, self.key_generation, self.try_exp = "", 0, 0


@dataclass(frozen=True)
class SynPlan:
    """What the client's SYN carries."""

    tfo_attempted: bool  # tp->syn_fastopen
    cookie: CookieInfo | None  # the option in the SYN (None: no TFO option)
    data_bytes: int  # bytes of the request carried in the SYN
    explanation: str


def plan_client_syn(
    *,
    sysctl: int,
    cache: CookieCache,
    request_bytes: int,
    mtu: int,
    use_fastopen: bool,
    syn_data_linear: bool = False,
) -> SynPlan:
    """What the client's SYN carries; `syn_data_linear`: the kernel builds the SYN's data
    into a linear head (before 6.5, ReceiveMemory.syn_data_linear)."""
    if not use_fastopen:
        return SynPlan(False, None, 0, "a plain SYN: the client does not use Fast Open")
    if sysctl & TFO_CLIENT_NO_COOKIE:
        size = min(request_bytes, syn_data_space(mtu, linear=syn_data_linear))
        return SynPlan(
            True, None, size, "tcp_fastopen has 0x4: the SYN carries data without any cookie"
        )
    if cache.cookie_hex:
        size = min(request_bytes, syn_data_space(mtu, linear=syn_data_linear))
        info = CookieInfo(34, TFO_COOKIE_LEN, cache.cookie_hex, cache.key_generation)
        more = "" if size == request_bytes else f" (the first {size} B of {request_bytes})"
        return SynPlan(True, info, size, f"the SYN carries the cached cookie and the request{more}")
    kind = 254 if cache.try_exp == 1 else 34
    info = CookieInfo(kind, 0)
    why = "no cookie cached for 127.0.0.1: the SYN asks for one and carries no data"
    if kind == 254:
        why += " (the last request went unanswered, so it tries the experimental option)"
    return SynPlan(True, info, 0, why)


@dataclass
class FastOpenServer:
    """The listener's Fast Open state: key, queue, the namespace's sysctl."""

    sysctl: int
    qlen: int
    queue_full: bool
    key_generation: int = 1
    pending: int = 0  # TFO children waiting for the final ACK
    counters: dict[str, int] = field(default_factory=dict)

    @property
    def max_qlen(self) -> int:
        if self.qlen:
            return self.qlen
        if self.sysctl & TFO_SERVER_WO_SOCKOPT1 and self.sysctl & TFO_SERVER_ENABLE:
            return 128  # inet_listen() tunes the queue to the backlog
        return 0

    def rotate_key(self) -> None:
        self.key_generation += 1


@dataclass(frozen=True)
class SynDecision:
    accept_data: bool  # a child socket is made from the SYN and its data
    reply_cookie: CookieInfo | None  # the option in the SYN-ACK
    counters: tuple[str, ...]
    explanation: str


def server_decide(
    srv: FastOpenServer, cookie: CookieInfo | None, syn_data: int, counting: bool
) -> SynDecision:
    """tcp_try_fastopen(): what the listener does with one SYN."""
    counters: list[str] = []
    if cookie is not None and cookie.length == 0:
        counters.append("TCPFastOpenCookieReqd")
    tfo_syn = syn_data > 0 or cookie is not None
    if not srv.sysctl & TFO_SERVER_ENABLE or not tfo_syn or srv.max_qlen == 0:
        why = "a plain SYN"
        if tfo_syn and not srv.sysctl & TFO_SERVER_ENABLE:
            why = "server TFO is off (tcp_fastopen lacks 0x2): the SYN is handled as a plain one"
        elif tfo_syn:
            why = "the listener has no TCP_FASTOPEN queue (qlen 0): the SYN is a plain one"
        return _decided(srv, False, None, counters, why, counting)
    if srv.queue_full or srv.pending >= srv.max_qlen:
        counters.append("TCPFastOpenListenOverflow")
        why = "the TFO queue is full: the SYN is handled as a plain one (ListenOverflow)"
        return _decided(srv, False, None, counters, why, counting)
    kind = cookie.option_kind if cookie is not None else 34
    fresh = CookieInfo(kind, TFO_COOKIE_LEN, cookie_for(srv.key_generation), srv.key_generation)
    if srv.sysctl & TFO_SERVER_COOKIE_NOT_REQD:
        counters.append("TCPFastOpenPassive")
        why = "tcp_fastopen has 0x200: the server accepts SYN data without a cookie"
        return _decided(srv, True, None, counters, why, counting)
    if cookie is None:
        why = "SYN data without a cookie: the server drops the data and acks only the SYN"
        return _decided(srv, False, None, counters, why, counting)
    if cookie.length == 0:
        why = "cookie request: the SYN-ACK carries a new cookie"
        return _decided(srv, False, fresh, counters, why, counting)
    if cookie.value_hex == fresh.value_hex:
        counters.append("TCPFastOpenPassive")
        why = "valid cookie: the server accepts the SYN data and acks it in the SYN-ACK"
        return _decided(srv, True, None, counters, why, counting)
    counters.append("TCPFastOpenPassiveFail")
    why = (
        "invalid cookie (the key changed): the SYN data is dropped, the SYN-ACK acks "
        "only the SYN and carries a new cookie"
    )
    return _decided(srv, False, fresh, counters, why, counting)


def _decided(
    srv: FastOpenServer,
    accept: bool,
    reply: CookieInfo | None,
    counters: list[str],
    why: str,
    counting: bool,
) -> SynDecision:
    if counting:
        for name in counters:
            srv.counters[name] = srv.counters.get(name, 0) + 1
    if accept:
        srv.pending += 1
    return SynDecision(accept, reply, tuple(counters), why)


def client_learns(
    cache: CookieCache,
    reply: CookieInfo | None,
    syn_data: int,
    plan: SynPlan,
    *,
    syn_resent: bool = False,
    syn_data_acked: bool = False,
) -> str | None:
    """tcp_rcv_fastopen_synack -> tcp_fastopen_cache_set(): update the cache from a
    SYN-ACK; returns a note. `syn_resent`: the SYN timed out (tp->total_retrans), so
    the SYN-ACK may answer a SYN sent again without the option (6.1 and 6.18);
    `syn_data_acked`: it acknowledges the SYN's data, so tcp_ack emptied the
    retransmit queue first and syn_drop (cookie->len < 0 && data) is false: the
    first SYN arrived, only its SYN-ACK came after the timer."""
    if not plan.tfo_attempted:
        return None
    if reply is not None and reply.length > 0:
        changed = reply.value_hex != cache.cookie_hex
        cache.cookie_hex, cache.key_generation = reply.value_hex, reply.key_generation
        return "client caches the new TFO cookie for 127.0.0.1" if changed else None
    if syn_resent:
        if syn_data and syn_data_acked:
            return (
                "no SYN loss: the SYN timed out, yet this SYN-ACK acknowledges its data; the "
                "first SYN arrived and only the round trip outlasted the timer, so nothing "
                "counts as a SYN loss (tcp_fastopen_cache_set resets syn_loss) and the "
                "cookie stays"
            )
        # no try_exp: the server saw only the SYN sent again, without the option
        if syn_data:
            return (
                "SYN-data taken for lost: after a SYN timeout this SYN-ACK acknowledges none "
                "of the SYN's data, so tcp_rcv_fastopen_synack takes the SYN-data for lost "
                "(syn_drop); the cache counts it (syn_loss) and keeps the cookie, so the next "
                "connection sends SYN-data again (tcp_fastopen_cookie_check no longer reads "
                "syn_loss)"
            )
        return (
            "nothing cached: after a SYN timeout tcp_rcv_fastopen_synack cannot tell which "
            "SYN this SYN-ACK answers (the one sent again carried no Fast Open option), so "
            "its missing cookie says nothing; the option kind is kept"
        )
    if plan.cookie is not None and plan.cookie.length == 0 and syn_data == 0:
        try_exp = 2 if plan.cookie.option_kind == 254 else 1
        if try_exp > cache.try_exp and not cache.cookie_hex:
            cache.try_exp = try_exp
        return "the cookie request went unanswered: nothing cached"
    return None

"""When a queued segment may leave: Nagle, Minshall, TCP_CORK, MSG_MORE (not autocorking).

Rules (net/ipv4/tcp_output.c and tcp.c):
- `tcp_nagle_check`: a partial segment (smaller than the MSS) is held when the
  socket is corked (TCP_CORK, or MSG_MORE on this call), or when Nagle is on
  (no TCP_NODELAY), packets are in flight and `tcp_minshall_check` holds: the
  last small segment sent (snd_sml) is not yet acknowledged.
- Only the last segment of the queue is tested with the socket's own mode;
  segments in the middle of the queue are pushed (TCP_NAGLE_PUSH).
- A retransmission is never held by Nagle.
- Autocorking (`tcp_should_autocork`) is not modelled: it holds a small
  write only while an earlier skb of the socket is still queued below TCP
  and charged to it, and on loopback with netem the queued skb is orphaned
  (netem_enqueue), as it is with the NFQUEUE stand-in, whose rule holds
  packets at the receiving end (loopback_xmit's skb_orphan comes first).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SendMode:
    """The socket's nonagle state plus this push's flags."""

    nodelay: bool = False  # TCP_NODELAY (TCP_NAGLE_OFF)
    corked: bool = False  # TCP_CORK set (TCP_NAGLE_CORK)
    msg_more: bool = False  # this push comes from a send with MSG_MORE
    push: bool = False  # TCP_NAGLE_PUSH: a forced push (uncork with nodelay, retransmit)


def minshall_check(snd_sml: int, snd_una: int, snd_nxt: int) -> bool:
    """tcp_minshall_check: a small segment is still in flight."""
    return snd_sml > snd_una and snd_sml <= snd_nxt


def hold_reason(
    *,
    partial: bool,
    last: bool,
    mode: SendMode,
    packets_out: int,
    snd_sml: int,
    snd_una: int,
    snd_nxt: int,
) -> str | None:
    """Why tcp_nagle_test() keeps this segment back, or None if it may go."""
    if not partial or not last or mode.push:
        return None
    if mode.corked:
        return "TCP_CORK is set: partial segments wait until the socket is uncorked"
    if mode.msg_more:
        return "MSG_MORE: the application said more data follows, so the partial segment waits"
    if mode.nodelay:
        return None
    if packets_out and minshall_check(snd_sml, snd_una, snd_nxt):
        return (
            "Nagle holds it: an earlier small segment is still unacknowledged "
            "(tcp_nagle_check / tcp_minshall_check)"
        )
    return None

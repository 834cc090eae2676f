"""The TCP states and every transition between them, in one table (h11 style).

Rules:
- A socket's state changes only through `next_state(state, event)`, which
  `TcpSock.move()` calls (sock.py). The code that handles a segment or an
  application call names the event that happened; the table alone says
  which state it leads to. No other module assigns a state.
- An event with no entry for the current state is a bug in the model, never
  bad input: `next_state` raises ImpossibleTransition, naming both.
- The table is RFC 793's diagram as Linux walks it (tcp_set_state() callers):
  tcp_connect (CLOSED -> SYN_SENT), tcp_conn_request + the child socket
  (LISTEN -> SYN_RECV; a Fast Open child is readable and writable there),
  tcp_rcv_synsent_state_process (SYN_SENT -> ESTABLISHED),
  tcp_rcv_state_process (SYN_RECV -> ESTABLISHED on the ACK of the SYN-ACK;
  FIN_WAIT1 -> FIN_WAIT2, CLOSING -> TIME_WAIT, LAST_ACK -> CLOSED once the
  FIN is acknowledged), tcp_close_state (ESTABLISHED or SYN_RECV ->
  FIN_WAIT1, CLOSE_WAIT -> LAST_ACK as the FIN is sent) and tcp_fin
  (ESTABLISHED or SYN_RECV -> CLOSE_WAIT, FIN_WAIT1 -> CLOSING,
  FIN_WAIT2 -> TIME_WAIT).
- Resets: a RST at exactly rcv_nxt closes the socket (tcp_validate_incoming
  -> tcp_reset); only the replay scenario meets one (replay.py).
- Not modelled: retransmission timeouts, and the 2MSL timer that takes
  TIME_WAIT to CLOSED (tcp_time_wait); the scripts end before it.
- `SENDS_DATA`: the states in which tcp_write_xmit may send queued data.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType


class TcpState(enum.Enum):
    """The kernel's TCP_* socket states (include/net/tcp_states.h)."""

    CLOSED = "CLOSED"
    LISTEN = "LISTEN"
    SYN_SENT = "SYN_SENT"
    SYN_RECV = "SYN_RECV"
    ESTABLISHED = "ESTABLISHED"
    FIN_WAIT1 = "FIN_WAIT1"
    FIN_WAIT2 = "FIN_WAIT2"
    CLOSING = "CLOSING"
    TIME_WAIT = "TIME_WAIT"
    CLOSE_WAIT = "CLOSE_WAIT"
    LAST_ACK = "LAST_ACK"


class TcpEvent(enum.Enum):
    """What happened to a socket; the value reads as a sentence."""

    CONNECT = "connect() sends the SYN"
    RECV_SYN = "a SYN reaches the listener"
    RECV_SYNACK = "the SYN-ACK arrives"
    RECV_ACK_OF_SYN = "the ACK of the SYN-ACK arrives"
    SEND_FIN = "close() sends the FIN"
    RECV_FIN = "the peer's FIN arrives"
    RECV_ACK_OF_FIN = "the FIN is acknowledged"
    RECV_RST = "an acceptable RST arrives"


_S = TcpState
_E = TcpEvent

TRANSITIONS: Mapping[tuple[TcpState, TcpEvent], TcpState] = MappingProxyType(
    {
        # opening
        (_S.CLOSED, _E.CONNECT): _S.SYN_SENT,
        (_S.LISTEN, _E.RECV_SYN): _S.SYN_RECV,
        (_S.SYN_SENT, _E.RECV_SYNACK): _S.ESTABLISHED,
        (_S.SYN_RECV, _E.RECV_ACK_OF_SYN): _S.ESTABLISHED,
        # this side closes first (or after the peer)
        (_S.ESTABLISHED, _E.SEND_FIN): _S.FIN_WAIT1,
        (_S.SYN_RECV, _E.SEND_FIN): _S.FIN_WAIT1,
        (_S.CLOSE_WAIT, _E.SEND_FIN): _S.LAST_ACK,
        # the peer's FIN
        (_S.ESTABLISHED, _E.RECV_FIN): _S.CLOSE_WAIT,
        (_S.SYN_RECV, _E.RECV_FIN): _S.CLOSE_WAIT,
        (_S.FIN_WAIT1, _E.RECV_FIN): _S.CLOSING,
        (_S.FIN_WAIT2, _E.RECV_FIN): _S.TIME_WAIT,
        # our FIN acknowledged
        (_S.FIN_WAIT1, _E.RECV_ACK_OF_FIN): _S.FIN_WAIT2,
        (_S.CLOSING, _E.RECV_ACK_OF_FIN): _S.TIME_WAIT,
        (_S.LAST_ACK, _E.RECV_ACK_OF_FIN): _S.CLOSED,
        # tcp_reset: a RST at exactly rcv_nxt (only the replayed child meets one)
        (_S.SYN_RECV, _E.RECV_RST): _S.CLOSED,
        (_S.ESTABLISHED, _E.RECV_RST): _S.CLOSED,
        (_S.CLOSE_WAIT, _E.RECV_RST): _S.CLOSED,
    }
)

SENDS_DATA: frozenset[TcpState] = frozenset({_S.SYN_RECV, _S.ESTABLISHED, _S.CLOSE_WAIT})


class ImpossibleTransition(RuntimeError):
    """The model tried a transition TCP does not have: a bug in the model, never bad input."""

    def __init__(self, state: TcpState, event: TcpEvent) -> None:
        allowed = sorted(e.name for (s, e) in TRANSITIONS if s is state)
        super().__init__(
            f"no TCP transition from {state.name} on {event.name} ({event.value}); "
            f"{state.name} only moves on: {', '.join(allowed) or 'nothing'}"
        )
        self.from_state = state
        self.event = event


def next_state(state: TcpState, event: TcpEvent) -> TcpState:
    """The state `event` leads to from `state`, or ImpossibleTransition."""
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise ImpossibleTransition(state, event) from None

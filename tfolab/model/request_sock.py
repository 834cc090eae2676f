"""The server's request sock: what the listener remembers of a SYN it answered.

Rules (struct request_sock, struct tcp_request_sock; 6.1 and 6.18):
- num_timeout counts the SYN-ACK timer's expiries, num_retrans every SYN-ACK
  sent again (by that timer, or for a retransmitted SYN: tcp_check_req).
- last_oow_ack_jiffies is the request's own rate limit for SYN-ACKs that answer
  retransmitted SYNs (tcp_openreq_init starts it at 0: never); the timer's
  resends do not touch it.
- first_synack_ns is snt_synack: the first SYN-ACK's time, which the ACK's
  TSecr must echo for tcp_try_undo_spurious_syn to clear the undo marker.
- generation names the armed timer: mod_timer replaces the previous one, so a
  callback whose generation is not the current one is a timer that no longer
  exists.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Request:
    first_synack_ns: int
    num_timeout: int = 0
    num_retrans: int = 0
    last_oow_ack_jiffies: int | None = None
    generation: int = 0

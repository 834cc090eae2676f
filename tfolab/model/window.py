"""The receive window's scale in the SYN and SYN-ACK, derived as the kernel derives it.

tcp_select_initial_window (tcp_output.c): with window scaling on, the scale is
chosen for the largest window the socket might ever want,
space = max(tcp_rmem[2], rmem_max) capped by the window clamp (65535 << 14),
and rcv_wscale = clamp(ilog2(space) - 15, 0, TCP_MAX_WSCALE). tcp_rmem[2]'s
default of 6 MiB (before Linux 6.16) gives 7; 32 MiB, the default since,
gives 10. The caller passes the kernel's value: the model never reads /proc.
"""

from __future__ import annotations

TCP_MAX_WSCALE = 14
MAX_TCP_WINDOW = 65535
DEFAULT_RECEIVE_SPACE = 6_291_456  # Linux's default net.ipv4.tcp_rmem[2]


def initial_wscale(receive_space_bytes: int) -> int:
    """rcv_wscale for a socket whose largest receive space is `receive_space_bytes`."""
    space = min(max(receive_space_bytes, 1), MAX_TCP_WINDOW << TCP_MAX_WSCALE)
    return max(0, min(space.bit_length() - 1 - 15, TCP_MAX_WSCALE))

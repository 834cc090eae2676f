"""Only a genuine refusal makes the capture "unavailable"; any other error fails loudly.

A run without packets is allowed only where the kernel or sandbox refuses the
capture (EPERM, EACCES, EAFNOSUPPORT, ...); EINVAL from a wrong ring request or
filter is a bug, and must never be reported (or skipped) as "not supported".
"""

from __future__ import annotations

import errno
import os

import pytest

from tests.environment import require_or_skip
from tfolab.runner.capture_ring import (
    CaptureFailed,
    CaptureUnavailable,
    PacketRing,
    refused_as_unavailable,
)


def _raising(code: int) -> None:
    raise OSError(code, os.strerror(code))


@pytest.mark.parametrize(
    ("code", "why"),
    [
        (errno.EPERM, "not permitted (no CAP_NET_RAW in this namespace) (EPERM)"),
        (errno.EACCES, "not permitted (no CAP_NET_RAW in this namespace) (EACCES)"),
        (errno.EAFNOSUPPORT, "not supported by this kernel or sandbox (EAFNOSUPPORT)"),
        (errno.EPROTONOSUPPORT, "not supported by this kernel or sandbox (EPROTONOSUPPORT)"),
        (errno.ENOPROTOOPT, "not supported by this kernel or sandbox (ENOPROTOOPT)"),
    ],
)
def test_a_refusal_is_unavailable_with_its_errno(code: int, why: str) -> None:
    with pytest.raises(CaptureUnavailable) as caught:
        refused_as_unavailable(lambda: _raising(code), "the step")
    assert caught.value.reason == f"packet capture refused: the step: {why}"


@pytest.mark.parametrize("code", [errno.EINVAL, errno.ENOMEM, errno.EBUSY, errno.EFAULT])
def test_any_other_error_is_a_failure_not_a_refusal(code: int) -> None:
    with pytest.raises(CaptureFailed, match=rf"the step: .*\({errno.errorcode[code]}\)"):
        refused_as_unavailable(lambda: _raising(code), "the step")


def test_a_wrong_ring_request_fails_loudly() -> None:
    """A block size that is not a multiple of the page size: the kernel says EINVAL."""
    if os.geteuid() != 0:
        require_or_skip("root", "an AF_PACKET socket needs CAP_NET_RAW")
    with pytest.raises(CaptureFailed, match=r"PACKET_RX_RING.*\(EINVAL\)"):
        PacketRing.open("lo", block_bytes=4096 + 1, blocks=4, snaplen=256)

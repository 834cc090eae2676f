"""The lab's device setters refuse the host's own namespace (netns.require_lab_namespace).

The attack, as it happened: an offline script called truesize.skb_heads() in the
host's namespace, which set the host's lo to MTU 1280 and turned its TSO and GSO
off. Here each setter is called for real from the test process (the host's
namespace): each must raise before any ioctl, and lo must stay as it was.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.environment import require_or_skip
from tfolab.runner import netns, truesize


def _lo() -> str:
    shown = subprocess.run(["ip", "-d", "link", "show", "lo"], capture_output=True, text=True)
    return shown.stdout


def _devices() -> list[str]:
    with open("/proc/self/net/dev") as shown:
        return [line.split(":")[0].strip() for line in shown.read().splitlines()[2:]]


@pytest.mark.parametrize(
    "change",
    [
        lambda: netns.set_loopback(True, 1280),
        lambda: netns.set_loopback(False),
        lambda: netns.set_segmentation_offload(False),
        lambda: truesize.skb_heads({1280}),
    ],
    ids=["mtu", "down", "offload", "skb-heads"],
)
def test_the_hosts_lo_is_never_changed(change) -> None:  # type: ignore[no-untyped-def]
    if _devices() == ["lo"]:
        require_or_skip("a host network", "this test runs where lo is the only device")
    before = _lo()
    with pytest.raises(RuntimeError, match="not inside a lab namespace"):
        change()
    assert _lo() == before


def test_inside_a_lab_namespace_the_setters_work() -> None:
    """The same calls in a process that entered its own namespace (the runner's way)."""
    code = (
        "from tfolab.runner import netns\n"
        "netns.enter_new_netns()\n"
        "netns.set_loopback(True, 1280)\n"
        "netns.set_segmentation_offload(False)\n"
        "import subprocess\n"
        "shown = subprocess.run(['ip', 'link', 'show', 'lo'], capture_output=True, text=True)\n"
        "print(shown.stdout)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode and "cannot create a network namespace" in done.stderr + done.stdout:
        require_or_skip("network namespaces", "unshare(CLONE_NEWNET) was refused")
    assert done.returncode == 0, done.stderr
    assert "mtu 1280" in done.stdout

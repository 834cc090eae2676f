"""Run as a script: install the NFQUEUE rule one given way in a throwaway namespace
and prove it queues: a TCP connect through tfo-delay at D takes 2D.

Prints one JSON object: {"way": ..., "connect_ms": ...} or {"refused": reason}.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

from tfolab.core import lifetime, native
from tfolab.runner import netns
from tfolab.runner.backends import nfrule
from tfolab.runner.backends.nfqueue import delayer_args

DELAY_MS = 20.0


def main(way_name: str) -> dict[str, object]:
    lifetime.die_with_parent()
    netns.enter_new_netns()
    netns.set_loopback(True)
    ways = tuple(way for way in nfrule.WAYS if way.name == way_name)
    try:
        installed = nfrule.install_rule(ways=ways)
    except nfrule.RuleRefused as err:
        return {"refused": str(err)}
    delayer = subprocess.Popen(
        delayer_args(str(native.executable_path("tfo-delay")), DELAY_MS),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert delayer.stdout is not None and delayer.stdout.readline().strip() == "READY"
        with socket.socket() as server, socket.socket() as client:
            server.bind(("127.0.0.1", 0))
            server.listen()
            started = time.monotonic()
            client.connect(server.getsockname())
            connect_ms = (time.monotonic() - started) * 1000
    finally:
        delayer.terminate()
        delayer.communicate(timeout=5)
    return {"way": installed.way, "connect_ms": connect_ms}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))

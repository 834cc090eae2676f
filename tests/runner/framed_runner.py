"""A stand-in runner for tests/runner/test_framing.py: `python -m tests.runner.framed_runner`.

FRAMED_RUNNER_MODE picks what it writes. big: a Captured event carrying a 5 MB
frame, then Done. torn: half of a frame, then exit 1 with a line on stderr.
garbage: a well-framed body that is no Event. silent: nothing for a minute.
"""

from __future__ import annotations

import os
import struct
import sys
import time

from tfolab.runner.protocol import Captured, Done, frame

BIG_FRAME_BYTES = 5_000_000


def main() -> int:
    sys.stdin.read()  # the Job, as a real runner reads it
    out = sys.stdout.buffer
    mode = os.environ.get("FRAMED_RUNNER_MODE", "big")
    if mode == "big":
        out.write(frame(Captured("big", [], [(1, b"\x07" * BIG_FRAME_BYTES)])))
        out.write(frame(Done()))
    elif mode == "torn":
        whole = frame(Captured("torn", [], [(1, b"\x07" * 100_000)]))
        out.write(whole[: len(whole) // 2])
        out.flush()
        print("torn on purpose", file=sys.stderr)
        return 1
    elif mode == "silent":
        time.sleep(60)
    else:
        out.write(struct.pack(">I", 9) + b'{"x": 1}\n')
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

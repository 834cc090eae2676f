"""What every delay backend is: one interface, and what an installed one leaves running.

A backend adds the one-way delay D to every packet on the lab namespace's lo,
so RTT = 2D. Each lives in a module of its own (netem.py, nfqueue.py, none.py)
and answers the same questions:

- `unavailable(delayer)`: a cheap look, without a namespace, at whether it can
  work here (None) or why not. The parent asks before anything is started.
- `probe(delayer)`: a real try, inside a throwaway namespace (doctor's probe):
  a Trial, whose kind (not its wording) says what would fix a failure.
- `install(delay_ms, delayer, record=...)`: put it in place inside the lab's
  namespace, with `record` a backend that delays in a program of its own
  records what it releases (the NFQUEUE capture); `InstalledDelay.stop()`
  removes what needs removing (the rest dies with the namespace).
- `per_packet_error_ms`: how exact it is, for the model's tolerance bands.
- `fix`: what to do where it is missing.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from typing import Literal, Protocol

import msgspec

from tfolab.core.errors import UserError
from tfolab.model.drops import Drop
from tfolab.runner.delayer_lines import read_line
from tfolab.runner.protocol import DelayerLateness

Backend = Literal["netem", "nfqueue", "none"]
BackendChoice = Literal["auto", "netem", "nfqueue", "none"]

# Scheduling and first-use costs of one measured interval on a quiet host, ms,
# with the lab's processes at real-time priority.
HOST_OVERHEAD_MS = 1.0
# The same on normal scheduling (a user namespace may not raise priority): a
# woken lab process can wait out another task's slice, about 3 ms with EEVDF.
HOST_OVERHEAD_NORMAL_SCHEDULING_MS = 4.0
REINSTALL_FIX = "reinstall tfolab so its C parts are built: pip install -e ."
PLAN_TIMEOUT_S = 5.0
NO_BACKEND_FIX = (
    "use a kernel with sch_netem, or one with NFQUEUE in nf_tables or ip_tables; "
    "`tfolab doctor` shows what is missing"
)


# works; the bundled part it needs is not built; this machine lacks what it needs;
# not tried (the probe had no namespace to try it in).
TrialKind = Literal["works", "not_built", "unsupported", "not_tried"]


class Trial(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A backend tried for real: of which kind the outcome is, and what was seen."""

    kind: TrialKind
    detail: str

    @property
    def works(self) -> bool:
        return self.kind == "works"


@dataclass
class InstalledDelay:
    """What is running in the namespace; `stop` collects the delayer's statistics."""

    backend: Backend
    delay_ms: float
    notes: list[str] = field(default_factory=list)
    delayer: subprocess.Popen[str] | None = None
    rule_way: str = ""
    record_fd: int | None = None  # the memory file the delayer records its packets into
    drop_record_fd: int | None = None  # and the one it records the packets it drops into
    late_record_fd: int | None = None  # and the one it records each release's lateness into

    @property
    def drops_packets(self) -> bool:
        """Can this backend lose the packets a drop plan names (tfo-delay --control)?"""
        return self.drop_record_fd is not None

    def plan_drops(self, server_port: int, drops: tuple[Drop, ...]) -> None:
        """Tell the delayer which packets of the next connection to `server_port` to drop
        (native/delay/drop.c: counted from that connection's first SYN)."""
        listed = ",".join(f"{d.sender}:{d.index}" for d in drops) or "-"
        self._say(f"DROP {server_port} {listed}", "DROPPING", "drop plan")

    def set_middlebox(self, server_port: int, mode: str) -> None:
        """Tell the delayer what middlebox stands on the path to and from `server_port`
        from now on (native/delay/middlebox.c): none, drop-syn-data, strip-tfo-option
        or drop-tfo-syn."""
        self._say(f"MIDDLEBOX {server_port} {mode}", f"MIDDLEBOX {mode}", "middlebox")

    def _say(self, line: str, expected: str, what: str) -> None:
        """One control line to the delayer, and its answer checked."""
        delayer = self.delayer
        if delayer is None or delayer.stdin is None or delayer.stdout is None:
            raise UserError(f"this delay backend cannot act as a {what}", "use --backend nfqueue")
        try:
            delayer.stdin.write(line + "\n")
            delayer.stdin.flush()
            answer = read_line(delayer.stdout.fileno(), PLAN_TIMEOUT_S).decode().strip()
        except (OSError, TimeoutError, EOFError) as err:
            raise UserError(
                f"the NFQUEUE delayer did not take the {what} line ({type(err).__name__})",
                "run `tfolab doctor`; if it persists, report it",
            ) from None
        if answer != expected:
            raise UserError(f"the NFQUEUE delayer refused the {what} line: {answer}")

    def stop(self) -> str:
        """Stop the delayer (if any) and close the records; its statistics line, or ""."""
        for fd in (self.record_fd, self.drop_record_fd, self.late_record_fd):
            if fd is not None:
                os.close(fd)  # the delayer holds its own copy until it exits
        self.record_fd = self.drop_record_fd = self.late_record_fd = None
        if self.delayer is None:
            return ""
        if self.delayer.poll() is None:
            self.delayer.terminate()
        try:
            out, _ = self.delayer.communicate(timeout=3)
        except subprocess.TimeoutExpired:
            self.delayer.kill()
            out, _ = self.delayer.communicate()
        self.delayer = None
        lines = [line for line in out.splitlines() if not line.startswith("FLUSHED ")]
        return lines[-1].strip() if lines else ""


def delayer_lateness(stats: str) -> DelayerLateness | None:
    """The lateness figures of tfo-delay's statistics line (its JSON), or None where there
    is no such line (no delayer) or it lacks them."""
    if not stats.startswith("{"):
        return None
    try:
        data = json.loads(stats)
        return msgspec.convert(
            {
                "median_us": data["late_median_us"],
                "p99_us": data["late_p99_us"],
                "max_us": data["late_max_us"],
            },
            DelayerLateness,
        )
    except (ValueError, TypeError, KeyError, msgspec.ValidationError):
        return None


class DelayBackend(Protocol):
    name: Backend
    per_packet_error_ms: float
    fix: str

    def unavailable(self, delayer: str | None) -> str | None: ...

    def probe(self, delayer: str | None) -> Trial: ...

    def install(
        self, delay_ms: float, delayer: str | None, *, record: bool = False
    ) -> InstalledDelay: ...

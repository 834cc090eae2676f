"""none: plain loopback, no delay at all; only ever at D = 0, and said loudly."""

from __future__ import annotations

from tfolab.runner.backends.base import Backend, InstalledDelay, Trial


class NoDelay:
    name: Backend = "none"
    per_packet_error_ms = 0.1  # only the stack's own processing
    fix = ""

    def unavailable(self, delayer: str | None) -> str | None:
        return None

    def probe(self, delayer: str | None) -> Trial:
        return Trial("works", "plain loopback")

    def install(
        self, delay_ms: float, delayer: str | None, *, record: bool = False
    ) -> InstalledDelay:
        return InstalledDelay("none", 0.0, ["NO DELAY EMULATION: plain loopback"])


NONE = NoDelay()

"""Delay presets for the delay field: typical round-trip times, stated as D and RTT.

Rules: pure data. D is the one-way delay the lab adds (RTT = 2D); every preset
lies within the model's MAX_DELAY_MS (tests/tui/test_predict.py checks). The
figures are typical, not exact:
- LAN: a switched Ethernet LAN answers pings in about 0.5 ms (RTT).
- continental: within one continent, e.g. Paris-Berlin or New York-Chicago,
  about 30 ms (RTT).
- transcontinental: across an ocean, e.g. London-San Francisco, about 150 ms.
- satellite: a geostationary satellite hop (36 000 km up and down, both ways)
  takes about 600 ms of RTT at the speed of light plus processing.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Preset:
    name: str
    one_way_ms: float
    example: str

    @property
    def rtt_ms(self) -> float:
        return 2 * self.one_way_ms

    def label(self) -> str:
        """Short, for the side panel's select: "LAN 0.25/0.5" (D/RTT in ms)."""
        return f"{self.name} {self.one_way_ms:g}/{self.rtt_ms:g}"

    def words(self) -> str:
        return (
            f"{self.name} ({self.example}): D = {self.one_way_ms:g} ms one way, "
            f"RTT = {self.rtt_ms:g} ms"
        )


PRESETS: tuple[Preset, ...] = (
    Preset("LAN", 0.25, "a switched Ethernet LAN"),
    Preset("continental", 15.0, "within a continent, e.g. Paris-Berlin"),
    Preset("transcontinental", 75.0, "across an ocean, e.g. London-San Francisco"),
    Preset("satellite", 300.0, "a geostationary satellite hop"),
)


def preset_for(one_way_ms: float) -> Preset | None:
    return next((p for p in PRESETS if p.one_way_ms == one_way_ms), None)

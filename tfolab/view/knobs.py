"""Which scenario settings the parameters panel offers for a lab, and how.

Rules:
- Pure data over ScenarioConfig fields; no Textual here.
- What a lab gets is decided from its scenarios (the lab files), never from
  its name: a write-write-read lab gets the Nagle and delayed-ACK switches, a
  lab that uses Fast Open anywhere gets the TFO knobs. Adding a lab is adding
  files under labs/, not code here.
- A knob turns a widget value into the `--set` string lab.plan.plan expects,
  and only where it differs from the scenario's own value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tfolab.lab.catalog import Lab
from tfolab.model.scenario import CHOICES, ScenarioConfig

KnobKind = Literal["switch", "choice", "enabled"]
ENABLED_QLEN = 16


@dataclass(frozen=True)
class Knob:
    field: str
    label: str
    kind: KnobKind
    choices: tuple[str, ...] = ()

    def value_of(self, config: ScenarioConfig) -> bool | str:
        """The widget value for a scenario's config."""
        raw = getattr(config, self.field)
        if self.kind == "enabled":
            return bool(raw)
        return raw if self.kind == "choice" else bool(raw)

    def setting(self, config: ScenarioConfig, value: bool | str) -> str | None:
        """The `--set` value for a widget value, or None when it matches the scenario."""
        if value == self.value_of(config):
            return None
        if self.kind == "enabled":
            return str(ENABLED_QLEN if value else 0)
        if self.kind == "switch":
            return "true" if value else "false"
        return str(value)


NAGLE_KNOBS = (
    Knob("nodelay", "TCP_NODELAY (client)", "switch"),
    Knob("cork", "TCP_CORK (client)", "switch"),
    Knob("msg_more", "MSG_MORE (1st write)", "switch"),
    Knob("single_write", "a single write", "switch"),
    Knob("server_quickack", "TCP_QUICKACK (server)", "switch"),
)

FASTOPEN_KNOBS = (
    Knob("client_fastopen", "client Fast Open", "choice", CHOICES["client_fastopen"]),
    Knob("cookie_cache", "cookie cache", "choice", CHOICES["cookie_cache"]),
    Knob("server_fastopen_qlen", "TCP_FASTOPEN (server)", "enabled"),
    Knob("fastopen_queue_full", "TFO queue full (model)", "switch"),
)


def knobs_for(lab: Lab) -> tuple[Knob, ...]:
    configs = [scenario.config for scenario in lab.scenarios]
    knobs: tuple[Knob, ...] = ()
    if any(config.pattern == "wwr" for config in configs):
        knobs += NAGLE_KNOBS
    if any(c.client_fastopen != "off" or c.server_fastopen_qlen > 0 for c in configs):
        knobs += FASTOPEN_KNOBS
    return knobs


def settings_for(
    knobs: tuple[Knob, ...], config: ScenarioConfig, values: dict[str, bool | str]
) -> dict[str, str]:
    """The `--set` overrides that the widget values make to a scenario."""
    settings: dict[str, str] = {}
    for knob in knobs:
        if knob.field in values:
            setting = knob.setting(config, values[knob.field])
            if setting is not None:
                settings[knob.field] = setting
    return settings

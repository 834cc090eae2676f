"""The ScenarioConfig behind every scenario name the CLI uses (lab, scenario).

The labs themselves come from labs/*.toml; these are the model's reading of
them, used by the tests and the benchmark. `iterations` is the default count.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tfolab.model import ScenarioConfig

FASTOPEN = ScenarioConfig(
    pattern="rr", client_fastopen="sendto", server_fastopen_qlen=16, fastopen_sysctl=0x3
)
DELACK = ScenarioConfig(pattern="wwr", fresh_connection_each_iteration=False)


@dataclass(frozen=True)
class NamedScenario:
    lab: str
    name: str
    config: ScenarioConfig
    iterations: int


def _fo(name: str, iterations: int = 3, **changes: object) -> NamedScenario:
    return NamedScenario("fastopen", name, dataclasses.replace(FASTOPEN, **changes), iterations)


def _dl(name: str, iterations: int = 5, **changes: object) -> NamedScenario:
    return NamedScenario("delack", name, dataclasses.replace(DELACK, **changes), iterations)


SCENARIOS: tuple[NamedScenario, ...] = (
    NamedScenario("handshake", "plain", ScenarioConfig(client_fastopen="off"), 3),
    _fo("cookie-request", 1, cookie_cache="flush"),
    _fo("cookie", cookie_cache="warm"),
    _fo("plain", client_fastopen="off"),
    _fo("invalid-cookie", 2, cookie_cache="warm", rotate_key_before_iteration=1),
    _fo("server-off", server_fastopen_qlen=0),
    _fo("large-data", mtu=1500, request_bytes=3000),
    _fo("no-cookie", fastopen_sysctl=0x4 | 0x200 | 0x3),
    _fo("replay", 2, cookie_cache="warm", replay_syn=True),
    _dl("nagle"),
    _dl("nodelay", nodelay=True),
    _dl("single-write", single_write=True),
    _dl("cork", cork=True),
    _dl("quickack", server_quickack=True),
)


def scenario(lab: str, name: str) -> NamedScenario:
    for item in SCENARIOS:
        if (item.lab, item.name) == (lab, name):
            return item
    raise KeyError((lab, name))

"""The runner's two streams: a job (JSON on stdin) and events (JSON lines on stdout).

Rules: plain dicts on the wire, one JSON object per line, each event with an
"event" key. The job is built and read only through these helpers, so both
sides agree on its shape.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from tfolab.model.scenario import ScenarioConfig


@dataclass(frozen=True)
class JobScenario:
    name: str
    iterations: int
    config: ScenarioConfig


@dataclass(frozen=True)
class Job:
    lab: str
    delay_ms: float
    backend: str
    scenarios: tuple[JobScenario, ...]

    def to_json(self) -> str:
        return json.dumps(
            {
                "lab": self.lab,
                "delay_ms": self.delay_ms,
                "backend": self.backend,
                "scenarios": [
                    {
                        "name": s.name,
                        "iterations": s.iterations,
                        "config": dataclasses.asdict(s.config),
                    }
                    for s in self.scenarios
                ],
            }
        )

    @staticmethod
    def from_json(text: str) -> Job:
        data = json.loads(text)
        scenarios = tuple(
            JobScenario(s["name"], int(s["iterations"]), ScenarioConfig(**s["config"]))
            for s in data["scenarios"]
        )
        return Job(data["lab"], float(data["delay_ms"]), data["backend"], scenarios)


def event_line(event: str, **fields: Any) -> str:
    return json.dumps({"event": event, **fields}, separators=(",", ":"))

"""A real run in progress, as the front ends see it: lab-level steps, not the runner's wire.

Rules:
- One frozen type per step a student may be shown; the runner's events
  (tfolab.runner.protocol) become these in one place (lab/session.py), so
  neither front end imports the runner.
- The wording of each is tfolab.view.run_summary.progress_words: the CLI's
  stderr line and the UI's status line say the same.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LabReady:
    """The lab's namespace, delay and server are up."""

    setup_ms: float
    backend: str
    namespace: str
    scenarios: int  # how many scenarios will be measured


@dataclass(frozen=True)
class InLine:
    """Waiting for a machine-wide measurement slot, `ahead` runs first."""

    ahead: int


@dataclass(frozen=True)
class Measuring:
    """A slot is held: measuring starts, after `waited_ms` in line."""

    waited_ms: float


@dataclass(frozen=True)
class ScenarioRunning:
    name: str


@dataclass(frozen=True)
class IterationMeasured:
    scenario: str
    i: int
    measured_ms: float


@dataclass(frozen=True)
class RunNote:
    text: str


Progress = LabReady | InLine | Measuring | ScenarioRunning | IterationMeasured | RunNote

"""Lab definitions: read `labs/*.toml` into Lab and LabScenario objects.

A lab file has a `[lab]` table (name, title, summary, guide, order, headline),
a `[defaults]` table of scenario settings, and `[[scenario]]` tables (name,
summary, iterations, and any further scenario settings). Settings are the
fields of `tfolab.model.scenario.ScenarioConfig`; the loader type-checks them.

Rules: adding a lab is adding files to the labs folder, never code. A broken
file raises UserError naming the file, the line and the problem.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from tfolab.errors import UserError
from tfolab.model.scenario import ScenarioConfig, SettingError

LABS_DIR_ENV = "TFOLAB_LABS_DIR"
_SCENARIO_KEYS = {"name", "summary", "iterations"}
_LAB_KEYS = {"name", "title", "summary", "guide", "order", "headline"}


@dataclass(frozen=True)
class LabScenario:
    name: str
    summary: str
    iterations: int
    config: ScenarioConfig


@dataclass(frozen=True)
class Lab:
    name: str
    title: str
    summary: str
    headline: str
    order: int
    guide_path: Path
    source: Path
    scenarios: tuple[LabScenario, ...]

    def scenario(self, name: str) -> LabScenario:
        for scenario in self.scenarios:
            if scenario.name == name:
                return scenario
        known = ", ".join(s.name for s in self.scenarios)
        raise UserError(f"lab {self.name!r} has no scenario {name!r}", f"pick one of: {known}")

    def guide_text(self) -> str:
        try:
            return self.guide_path.read_text(encoding="utf-8")
        except OSError:
            return f"# {self.title}\n\n(The guide {self.guide_path.name} is missing.)\n"


def labs_dir() -> Path:
    """Where the lab files are: $TFOLAB_LABS_DIR, else the copy the install made.

    A wheel carries a copy of labs/; an editable install records the path of
    the source checkout's labs/ so edits show up without reinstalling.
    """
    override = os.environ.get(LABS_DIR_ENV)
    if override:
        return Path(override)
    installed = resources.files("tfolab._native")
    pointer = installed / "labs.path"
    if pointer.is_file():
        return Path(pointer.read_text(encoding="utf-8").strip())
    return Path(str(installed / "labs"))


def load_labs(directory: Path | None = None) -> list[Lab]:
    """Every lab in the folder, in their `order`."""
    folder = directory or labs_dir()
    if not folder.is_dir():
        raise UserError(
            f"the labs folder {folder} does not exist",
            f"reinstall tfolab, or point {LABS_DIR_ENV} at a folder of lab files",
        )
    labs = [load_lab_file(path) for path in sorted(folder.glob("*.toml"))]
    return sorted(labs, key=lambda lab: (lab.order, lab.name))


def find_lab(name: str, directory: Path | None = None) -> Lab:
    labs = load_labs(directory)
    for lab in labs:
        if lab.name == name:
            return lab
    known = ", ".join(lab.name for lab in labs)
    raise UserError(f"unknown lab {name!r}", f"pick one of: {known} (see `tfolab list`)")


def load_lab_file(path: Path) -> Lab:
    text = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        at_line = re.search(r"\(at line (\d+), column \d+\)", str(err))
        where = f"{path}:{at_line.group(1)}" if at_line else str(path)
        problem = re.sub(r"\s*\(at line.*\)", "", str(err))
        raise UserError(f"{where}: {problem}", "fix the TOML syntax at that line") from None
    problems = _Problems(path, text)
    lab_table = data.get("lab")
    if not isinstance(lab_table, dict):
        problems.fail(None, "no [lab] table", "add [lab] with name, title, summary, guide")
    for key in lab_table:
        if key not in _LAB_KEYS:
            problems.fail(key, f"unknown key {key!r} in [lab]", f"known: {sorted(_LAB_KEYS)}")
    name = _text(lab_table, "name", problems)
    defaults = data.get("defaults", {})
    base = _apply(ScenarioConfig(), defaults, problems, where="[defaults]")
    raw_scenarios = data.get("scenario")
    if not isinstance(raw_scenarios, list) or not raw_scenarios:
        problems.fail(None, "no [[scenario]] tables", "add at least one [[scenario]] with a name")
    scenarios: list[LabScenario] = []
    for raw in raw_scenarios:
        scenario_name = _text(raw, "name", problems)
        if any(s.name == scenario_name for s in scenarios):
            problems.fail("name", f"scenario {scenario_name!r} is defined twice", "rename one")
        settings = {k: v for k, v in raw.items() if k not in _SCENARIO_KEYS}
        iterations = raw.get("iterations", 3)
        if not isinstance(iterations, int) or isinstance(iterations, bool) or iterations < 1:
            problems.fail(
                "iterations", f"iterations must be a whole number >= 1, got {iterations!r}"
            )
        config = _apply(base, settings, problems, where=f"scenario {scenario_name!r}")
        scenarios.append(
            LabScenario(scenario_name, str(raw.get("summary", "")), iterations, config)
        )
    guide = str(lab_table.get("guide", f"{name}.md"))
    return Lab(
        name=name,
        title=str(lab_table.get("title", name)),
        summary=str(lab_table.get("summary", "")),
        headline=str(lab_table.get("headline", "")),
        order=int(lab_table.get("order", 100)),
        guide_path=path.parent / guide,
        source=path,
        scenarios=tuple(scenarios),
    )


class _Problems:
    """Turns a problem with a key into a UserError that names file and line."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = text.splitlines()

    def line_of(self, key: str | None) -> int | None:
        if key is None:
            return None
        pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
        for number, line in enumerate(self.lines, start=1):
            if pattern.match(line):
                return number
        return None

    def fail(self, key: str | None, problem: str, fix: str = "") -> None:
        line = self.line_of(key)
        where = f"{self.path}:{line}" if line else str(self.path)
        raise UserError(f"{where}: {problem}", fix or "see the other labs/*.toml for the format")


def _text(table: dict, key: str, problems: _Problems) -> str:
    value = table.get(key)
    if not isinstance(value, str) or not value:
        problems.fail(key, f"missing or empty {key!r}", f'add {key} = "..."')
    return value


def _apply(
    base: ScenarioConfig, settings: dict, problems: _Problems, *, where: str
) -> ScenarioConfig:
    try:
        return base.with_settings(settings)
    except SettingError as err:
        bad_key = next((k for k in settings if k in str(err)), None)
        problems.fail(bad_key, f"{where}: {err}", "fix or remove that setting")
    raise AssertionError("unreachable")

"""The lab catalogue: read `*.toml` lab files into Lab and LabScenario objects.

A lab file has a `[lab]` table (name, title, summary, guide, order, headline,
headline_last_byte), a `[defaults]` table of scenario settings, and
`[[scenario]]` tables (name,
summary, iterations, predict: the headline quantities a student predicts, see
tfolab.lab.quantities; and any further scenario settings); its schema is
tfolab.lab.lab_file's. Settings are the fields of
`tfolab.model.scenario.ScenarioConfig`; the loader type-checks them there, and
checks every scenario's finished settings together (`ScenarioConfig.check`).

Where the lab files are: `--labs-dir DIR` on the command line, else the
environment variable TFOLAB_LABS_DIR, else the package's own (tfolab/lab/labs/).

Rules: adding a lab is adding files to the labs folder, never code. Each file
loads on its own: a broken one becomes a BrokenLab whose message names the
file, the exact line of the offending key and the problem, and the other labs
still load.

A lab's `guide` is a file name in the lab file's own folder (a subfolder is
allowed): an absolute path or a `..` is refused when the file loads, and a
guide that resolves outside that folder (a link), is not a regular file or
is over MAX_GUIDE_BYTES reads as missing.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from tfolab.core.errors import UserError
from tfolab.core.regular_file import NotReadable, read_regular
from tfolab.lab import lab_file
from tfolab.lab.lab_file import LabFile, Misfit
from tfolab.lab.quantities import parse_selector
from tfolab.lab.toml_lines import KeyPath, line_of
from tfolab.model.scenario import ScenarioConfig, SettingError, parse_settings

LABS_DIR_ENV = "TFOLAB_LABS_DIR"
MAX_GUIDE_BYTES = 1 << 20  # a guide is a few kB of Markdown


@dataclass(frozen=True)
class LabScenario:
    name: str
    summary: str
    iterations: int
    config: ScenarioConfig
    # The headline quantities a student predicts (tfolab.lab.quantities selectors);
    # () asks for the defaults.
    predict: tuple[str, ...] = ()


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
    headline_last_byte: str = ""

    def headline_for(self, config: ScenarioConfig) -> str:
        """What the headline measures in a scenario of this config (model/apps.py's rule)."""
        if config.response_bytes and self.headline_last_byte:
            return self.headline_last_byte
        return self.headline

    def scenario(self, name: str) -> LabScenario:
        for scenario in self.scenarios:
            if scenario.name == name:
                return scenario
        known = ", ".join(s.name for s in self.scenarios)
        raise UserError(f"lab {self.name!r} has no scenario {name!r}", f"pick one of: {known}")

    def guide_text(self) -> str:
        try:
            path = self.guide_path.resolve()
            path.relative_to(self.source.parent.resolve())  # ValueError: outside the folder
            return read_regular(path, MAX_GUIDE_BYTES).decode("utf-8")
        except (OSError, ValueError, NotReadable):
            return f"# {self.title}\n\n(The guide {self.guide_path.name} is missing.)\n"


@dataclass(frozen=True)
class BrokenLab:
    """A lab file that did not load: what it is called and why (`file:line: problem`)."""

    name: str  # its [lab] name where that could be read, else the file's stem
    source: Path
    reason: str
    fix: str

    def error(self) -> UserError:
        return UserError(self.reason, self.fix)

    @property
    def message(self) -> str:
        return self.error().one_line()

    def matches(self, name: str) -> bool:
        return name in (self.name, self.source.stem)


class LabList(list[Lab]):
    """The labs that loaded, in their `order`; `broken` holds the files that did not."""

    def __init__(
        self, labs: list[Lab] | tuple[Lab, ...] = (), broken: tuple[BrokenLab, ...] = ()
    ) -> None:
        super().__init__(labs)
        self.broken: tuple[BrokenLab, ...] = tuple(broken)


class LabFileError(UserError):
    """A broken lab file; `lab_name` is its [lab] name if that much could be read."""

    def __init__(self, reason: str, fix: str = "", lab_name: str | None = None) -> None:
        super().__init__(reason, fix)
        self.lab_name = lab_name


def labs_dir(override: str | Path | None = None) -> Path:
    """Where the lab files are: `override` (--labs-dir), $TFOLAB_LABS_DIR, else the package's.

    The labs ship inside the package (tfolab/lab/labs/, found through
    importlib.resources), so reading them needs neither the C part nor a build.
    """
    if override:
        return Path(override).expanduser()
    from_env = os.environ.get(LABS_DIR_ENV)
    if from_env:
        return Path(from_env).expanduser()
    return Path(str(resources.files("tfolab.lab") / "labs"))


def check_labs_dir(directory: str | Path | None = None) -> Path:
    """The labs folder, or one-line UserError if it is not a folder."""
    folder = labs_dir(directory)
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise UserError(
            f"the labs folder {folder} {what}",
            f"point --labs-dir or {LABS_DIR_ENV} at a folder of lab files, or reinstall tfolab",
        )
    return folder


def load_labs(directory: str | Path | None = None) -> LabList:
    """Every lab in the folder, in their `order`; files that fail are in `.broken`."""
    folder = check_labs_dir(directory)
    labs: list[Lab] = []
    broken: list[BrokenLab] = []
    for path in sorted(folder.glob("*.toml")):
        try:
            lab = load_lab_file(path)
        except LabFileError as err:
            broken.append(BrokenLab(err.lab_name or path.stem, path, err.reason, err.fix))
            continue
        except UserError as err:
            broken.append(BrokenLab(path.stem, path, err.reason, err.fix))
            continue
        first = next((other for other in labs if other.name == lab.name), None)
        if first is not None:
            line = line_of(path.read_text(encoding="utf-8"), ("lab", "name"))
            where = f"{path}:{line}" if line else str(path)
            broken.append(
                BrokenLab(
                    lab.name,
                    path,
                    f"{where}: lab name {lab.name!r} is already used by {first.source}",
                    "give one of the two labs another name",
                )
            )
            continue
        labs.append(lab)
    labs.sort(key=lambda lab: (lab.order, lab.name))
    return LabList(labs, tuple(broken))


def find_lab(name: str, directory: str | Path | None = None) -> Lab:
    labs = load_labs(directory)
    for lab in labs:
        if lab.name == name:
            return lab
    for broken in labs.broken:
        if broken.matches(name):
            raise broken.error()
    if not labs:
        raise UserError(
            f"unknown lab {name!r}: there are no working lab files in {labs_dir(directory)}",
            "see `tfolab list`",
        )
    known = ", ".join(lab.name for lab in labs)
    raise UserError(f"unknown lab {name!r}", f"pick one of: {known}; see `tfolab list`")


def load_lab_file(path: Path) -> Lab:
    """One lab file, or LabFileError naming the file, the line and the problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise LabFileError(
            f"{path}: not UTF-8 text ({err.reason} at byte {err.start})", "save it as UTF-8"
        ) from None
    except OSError as err:
        raise LabFileError(
            f"{path}: cannot read it ({err.strerror})", "check the file's permissions"
        ) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        at_line = re.search(r"\(at line (\d+), column \d+\)", str(err))
        where = f"{path}:{at_line.group(1)}" if at_line else str(path)
        problem = re.sub(r"\s*\(at (line|end of document).*\)", "", str(err))
        raise LabFileError(f"{where}: {problem}", "fix the TOML syntax at that line") from None
    try:
        return _lab(path, lab_file.read(data))
    except lab_file.Misfit as misfit:
        line = line_of(text, misfit.where)
        place = f"{path}:{line}" if line else str(path)
        raise LabFileError(f"{place}: {misfit.problem}", misfit.fix, _lab_name(data)) from None


def _lab_name(data: dict[str, Any]) -> str | None:
    """The [lab] name of a file that does not load, where that much can be read."""
    table = data.get("lab")
    name = table.get("name") if isinstance(table, dict) else None
    return name if isinstance(name, str) and name else None


def _lab(path: Path, file: LabFile) -> Lab:
    """The Lab a lab file that fits the schema describes, or the Misfit its values make."""
    base = _with_settings(ScenarioConfig(), file.defaults, ("defaults",), "[defaults]")
    scenarios: list[LabScenario] = []
    for index, table in enumerate(file.scenario):
        where = ("scenario", index)
        if any(s.name == table.name for s in scenarios):
            raise Misfit(
                (*where, "name"), f"scenario {table.name!r} is defined twice", "rename one"
            )
        for selector in table.predict:
            try:
                parse_selector(selector)
            except ValueError as err:
                raise Misfit((*where, "predict"), str(err)) from None
        label = f"scenario {table.name!r}"
        config = _with_settings(base, table.settings, where, label)
        try:
            config.check()
        except SettingError as err:
            blame = _blame(err, where, table.settings, file.defaults)
            raise Misfit(blame, f"{label}: {err}", "fix those settings") from None
        scenarios.append(
            LabScenario(table.name, table.summary, table.iterations, config, table.predict)
        )
    lab = file.lab
    guide = f"{lab.name}.md" if lab.guide is None else lab.guide
    if Path(guide).is_absolute() or ".." in Path(guide).parts or not guide.strip():
        raise Misfit(
            ("lab", "guide"),
            f"guide must be a file name in the lab file's folder, not {guide!r}",
            'name a guide beside the lab file, e.g. guide = "mylab.md"',
        )
    return Lab(
        name=lab.name,
        title=lab.name if lab.title is None else lab.title,
        summary=lab.summary,
        headline=lab.headline,
        headline_last_byte=lab.headline_last_byte,
        order=lab.order,
        guide_path=path.parent / guide,
        source=path,
        scenarios=tuple(scenarios),
    )


def _with_settings(
    config: ScenarioConfig, settings: dict[str, Any], where: KeyPath, label: str
) -> ScenarioConfig:
    """`config` with a table's settings, each checked by ScenarioConfig's schema on its own."""
    typed: dict[str, object] = {}
    for key, value in settings.items():
        try:
            typed |= parse_settings({key: value})
        except SettingError as err:
            raise Misfit((*where, key), f"{label}: {err}", "fix or remove that setting") from None
    return config.with_typed(typed)


def _blame(
    err: SettingError, where: KeyPath, settings: dict[str, Any], defaults: dict[str, Any]
) -> KeyPath:
    """The line to point at: an involved key set in the scenario, else in [defaults]."""
    for key in err.keys:
        if key in settings:
            return (*where, key)
    for key in err.keys:
        if key in defaults:
            return ("defaults", key)
    return where

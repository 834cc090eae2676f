"""The lab catalogue: read `*.toml` lab files into Lab and LabScenario objects.

A lab file has a `[lab]` table (name, title, summary, guide, order, headline),
a `[defaults]` table of scenario settings, and `[[scenario]]` tables (name,
summary, iterations, predict: the headline quantities a student predicts, see
tfolab.lab.quantities; and any further scenario settings). Settings are the
fields of `tfolab.model.scenario.ScenarioConfig`; the loader type-checks them,
and checks every scenario's finished settings together (`ScenarioConfig.check`).

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

import contextlib
import os
import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, NoReturn

from tfolab.core.errors import UserError
from tfolab.core.regular_file import NotReadable, read_regular
from tfolab.lab.quantities import SELECTOR_FORMS, parse_selector
from tfolab.model.scenario import MAX_ITERATIONS, ScenarioConfig, SettingError, parse_settings

LABS_DIR_ENV = "TFOLAB_LABS_DIR"
_TOP_KEYS = {"lab", "defaults", "scenario"}
_SCENARIO_KEYS = {"name", "summary", "iterations", "predict"}
MAX_GUIDE_BYTES = 1 << 20  # a guide is a few kB of Markdown
_LAB_KEYS = {"name", "title", "summary", "guide", "order", "headline"}
_LAB_TEXT_KEYS = ("title", "summary", "guide", "headline")


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


# Where a value sits in a lab file: table names, array indexes, the key.
KeyPath = tuple[str | int, ...]


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
            line = _TomlIndex(path.read_text(encoding="utf-8")).line_of("lab", "name")
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
    return _Loader(path, text, data).lab()


class _Loader:
    """Checks one parsed lab file key by key; every failure names the key's own line."""

    def __init__(self, path: Path, text: str, data: dict[str, Any]) -> None:
        self.path = path
        self.index = _TomlIndex(text)
        self.data = data
        lab_table = data.get("lab")
        name = lab_table.get("name") if isinstance(lab_table, dict) else None
        self.lab_name = name if isinstance(name, str) and name else None

    def fail(self, where: KeyPath | None, problem: str, fix: str = "") -> NoReturn:
        line = self.index.line_of(*where) if where else None
        place = f"{self.path}:{line}" if line else str(self.path)
        raise LabFileError(
            f"{place}: {problem}",
            fix or "see the other labs/*.toml for the format",
            self.lab_name,
        )

    def lab(self) -> Lab:
        data = self.data
        for key in data:
            if key not in _TOP_KEYS:
                self.fail(
                    (key,),
                    f"unknown table or key {key!r}",
                    "a lab file has [lab], [defaults] and [[scenario]] tables",
                )
        lab_table = data.get("lab")
        if not isinstance(lab_table, dict):
            self.fail(
                ("lab",) if "lab" in data else None,
                "no [lab] table",
                "add [lab] with name, title, summary, guide",
            )
        for key in lab_table:
            if key not in _LAB_KEYS:
                self.fail(
                    ("lab", key), f"unknown key {key!r} in [lab]", f"known: {sorted(_LAB_KEYS)}"
                )
        name = self.text(lab_table, "name", ("lab",))
        for key in _LAB_TEXT_KEYS:
            if key in lab_table and not isinstance(lab_table[key], str):
                self.fail(("lab", key), f"{key} must be a string, got {lab_table[key]!r}")
        order = lab_table.get("order", 100)
        if not isinstance(order, int) or isinstance(order, bool):
            self.fail(("lab", "order"), f"order must be a whole number, got {order!r}")
        base = self.defaults()
        scenarios = self.scenarios(base)
        guide = lab_table.get("guide", f"{name}.md")
        if Path(guide).is_absolute() or ".." in Path(guide).parts or not guide.strip():
            self.fail(
                ("lab", "guide"),
                f"guide must be a file name in the lab file's folder, not {guide!r}",
                'name a guide beside the lab file, e.g. guide = "mylab.md"',
            )
        return Lab(
            name=name,
            title=lab_table.get("title", name),
            summary=lab_table.get("summary", ""),
            headline=lab_table.get("headline", ""),
            order=order,
            guide_path=self.path.parent / guide,
            source=self.path,
            scenarios=tuple(scenarios),
        )

    def text(self, table: dict[str, Any], key: str, where: KeyPath) -> str:
        value = table.get(key)
        if not isinstance(value, str) or not value.strip():
            self.fail((*where, key), f"missing or empty {key!r}", f'add {key} = "..."')
        return value

    def settings(self, raw: dict[str, Any], where: KeyPath, label: str) -> dict[str, object]:
        typed: dict[str, object] = {}
        for key, value in raw.items():
            try:
                typed |= parse_settings({key: value})
            except SettingError as err:
                self.fail((*where, key), f"{label}: {err}", "fix or remove that setting")
        return typed

    def defaults(self) -> ScenarioConfig:
        raw = self.data.get("defaults", {})
        if not isinstance(raw, dict):
            self.fail(("defaults",), "defaults must be a table: [defaults]")
        self.default_keys = set(raw)
        return ScenarioConfig().with_settings(self.settings(raw, ("defaults",), "[defaults]"))

    def scenarios(self, base: ScenarioConfig) -> list[LabScenario]:
        raw_scenarios = self.data.get("scenario")
        if isinstance(raw_scenarios, dict):
            self.fail(
                ("scenario",),
                "[scenario] is a single table",
                "write [[scenario]] (two brackets) before each scenario",
            )
        if not isinstance(raw_scenarios, list) or not raw_scenarios:
            self.fail(
                ("scenario",) if "scenario" in self.data else None,
                "no [[scenario]] tables",
                "add at least one [[scenario]] with a name",
            )
        scenarios: list[LabScenario] = []
        for index, raw in enumerate(raw_scenarios):
            where = ("scenario", index)
            if not isinstance(raw, dict):
                self.fail(where, "every scenario must be a [[scenario]] table")
            name = self.text(raw, "name", where)
            if any(s.name == name for s in scenarios):
                self.fail((*where, "name"), f"scenario {name!r} is defined twice", "rename one")
            summary = raw.get("summary", "")
            if not isinstance(summary, str):
                self.fail((*where, "summary"), f"summary must be a string, got {summary!r}")
            iterations = raw.get("iterations", 3)
            if (
                not isinstance(iterations, int)
                or isinstance(iterations, bool)
                or not 1 <= iterations <= MAX_ITERATIONS
            ):
                self.fail(
                    (*where, "iterations"),
                    f"iterations must be a whole number from 1 to {MAX_ITERATIONS}, "
                    f"got {iterations!r}",
                )
            predict = self.predict(raw, where)
            label = f"scenario {name!r}"
            settings = {k: v for k, v in raw.items() if k not in _SCENARIO_KEYS}
            config = base.with_settings(self.settings(settings, where, label))
            try:
                config.check()
            except SettingError as err:
                self.fail(self.blame(err, where, settings), f"{label}: {err}", "fix those settings")
            scenarios.append(LabScenario(name, summary, iterations, config, predict))
        return scenarios

    def predict(self, raw: dict[str, Any], where: KeyPath) -> tuple[str, ...]:
        """The scenario's `predict` list of quantity selectors, each checked."""
        value = raw.get("predict", [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.fail(
                (*where, "predict"),
                f"predict must be a list of strings, got {value!r}",
                f"e.g. predict = [{SELECTOR_FORMS}]",
            )
        for text in value:
            try:
                parse_selector(text)
            except ValueError as err:
                self.fail((*where, "predict"), str(err))
        return tuple(value)

    def blame(self, err: SettingError, where: KeyPath, settings: dict[str, Any]) -> KeyPath:
        """The line to point at: an involved key set in the scenario, else in [defaults]."""
        for key in err.keys:
            if key in settings:
                return (*where, key)
        for key in err.keys:
            if key in self.default_keys:
                return ("defaults", key)
        return where


class _TomlIndex:
    """The line of every table header and key in a (valid) TOML text.

    tomllib gives no positions, so this scans the text itself: it follows
    strings (all four kinds, multi-line ones included), comments, arrays and
    inline tables, so a `[` or a `key =` inside a value is never taken for a
    header or a key. Paths are tuples: ("lab", "name"), ("defaults", "mtu"),
    ("scenario", 2, "nodelay") for the third [[scenario]]'s key.
    """

    _BARE = re.compile(r"[A-Za-z0-9_-]+")

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines: dict[KeyPath, int] = {}
        with contextlib.suppress(IndexError):  # not valid TOML after all: keep what was found
            self._scan()

    def line_of(self, *path: str | int) -> int | None:
        """The line of `path`, else of its nearest enclosing table or key that has one."""
        for end in range(len(path), 0, -1):
            line = self.lines.get(tuple(path[:end]))
            if line is not None:
                return line
        return None

    def _line_at(self, pos: int) -> int:
        return self.text.count("\n", 0, pos) + 1

    def _scan(self) -> None:
        text, pos = self.text, 0
        table: KeyPath = ()
        arrays: dict[KeyPath, int] = {}
        while True:
            pos = self._skip_blank(pos, newlines=True)
            if pos >= len(text):
                return
            start = pos
            if text[pos] == "[":
                is_array = text.startswith("[[", pos)
                parts, pos = self._key(pos + (2 if is_array else 1))
                resolved = self._resolve(parts[:-1] if is_array else parts, arrays)
                if is_array:
                    resolved = (*resolved, parts[-1])
                    arrays[resolved] = arrays.get(resolved, -1) + 1
                    resolved = (*resolved, arrays[resolved])
                table = resolved
                self.lines.setdefault(table, self._line_at(start))
                pos = self._end_of_line(pos)
                continue
            parts, pos = self._key(pos)
            for end in range(1, len(parts) + 1):
                self.lines.setdefault((*table, *parts[:end]), self._line_at(start))
            pos = self._skip_blank(pos)
            if pos < len(text) and text[pos] == "=":
                pos += 1
            pos = self._skip_value(pos)

    @staticmethod
    def _resolve(parts: list[str], arrays: dict[KeyPath, int]) -> KeyPath:
        resolved: KeyPath = ()
        for part in parts:
            resolved = (*resolved, part)
            if resolved in arrays:
                resolved = (*resolved, arrays[resolved])
        return resolved

    def _skip_blank(self, pos: int, *, newlines: bool = False) -> int:
        text = self.text
        while pos < len(text):
            char = text[pos]
            if char in " \t\r" or (newlines and char == "\n"):
                pos += 1
            elif char == "#" and newlines:
                pos = self._end_of_line(pos)
            else:
                break
        return pos

    def _end_of_line(self, pos: int) -> int:
        end = self.text.find("\n", pos)
        return len(self.text) if end < 0 else end + 1

    def _key(self, pos: int) -> tuple[list[str], int]:
        """A (dotted) key or header name from pos; returns its parts and the position after."""
        text = self.text
        parts: list[str] = []
        while True:
            pos = self._skip_blank(pos)
            if text[pos] in "\"'":
                end = self._skip_string(pos)
                raw = text[pos + 1 : end - 1]
                parts.append(raw if text[pos] == "'" else _unescape(raw))
                pos = end
            else:
                match = self._BARE.match(text, pos)
                if match is None:
                    raise IndexError(pos)
                parts.append(match.group())
                pos = match.end()
            pos = self._skip_blank(pos)
            if pos < len(text) and text[pos] == ".":
                pos += 1
                continue
            return parts, pos

    def _skip_string(self, pos: int) -> int:
        """The position just after the string (any of the four kinds) that starts at pos."""
        text = self.text
        quote = text[pos]
        if text.startswith(quote * 3, pos):
            pos += 3
            while True:
                if quote == '"' and text[pos] == "\\":
                    pos += 2
                elif text.startswith(quote * 3, pos):
                    pos += 3
                    extra = 0
                    while extra < 2 and pos < len(text) and text[pos] == quote:
                        pos += 1
                        extra += 1
                    return pos
                else:
                    pos += 1
        pos += 1
        while text[pos] != quote:
            pos += 2 if quote == '"' and text[pos] == "\\" else 1
        return pos + 1

    def _skip_value(self, pos: int) -> int:
        """Past one value: up to the end of its line, or of its last line for arrays."""
        text = self.text
        depth = 0
        while pos < len(text):
            char = text[pos]
            if char in "\"'":
                pos = self._skip_string(pos)
                continue
            if char in "[{":
                depth += 1
            elif char in "]}":
                depth -= 1
            elif char == "#":
                pos = self._end_of_line(pos)
                if depth <= 0:
                    return pos
                continue
            elif char == "\n" and depth <= 0:
                return pos + 1
            pos += 1
        return pos


def _unescape(raw: str) -> str:
    try:
        return str(tomllib.loads(f'k = "{raw}"')["k"])
    except tomllib.TOMLDecodeError:
        return raw

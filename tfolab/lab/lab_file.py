"""The one schema of a lab file (msgspec Structs), and where and why a file does not fit it.

Rules:
- Every table and key a lab file may have is declared here once, with its type,
  limits and fix; unknown ones are refused (forbid_unknown_fields).
- A [[scenario]] table's own keys are ScenarioTable's; every other key in it is
  a scenario setting, moved into its `settings` for the loader to check with the
  settings' own schema (tfolab.model.scenario.ScenarioConfig), as [defaults].
- A misfit is worded from these declarations (msgspec.inspect) and the value in
  the file; of msgspec's message only the path (`$.scenario[2].iterations`) is read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec
from msgspec import Meta, Struct
from msgspec import inspect as schema

from tfolab.lab.quantities import SELECTOR_FORMS
from tfolab.lab.toml_lines import KeyPath, holds
from tfolab.model.scenario import MAX_ITERATIONS

FORMAT_FIX = "see the other labs/*.toml for the format"

Name = Annotated[str, Meta(pattern=r"\S", extra={"fix": 'add name = "..."'})]


class LabTable(Struct, frozen=True, forbid_unknown_fields=True):
    name: Name
    title: str | None = None  # TOML has no null: None is a key left out
    summary: str = ""
    # A file name in the lab file's folder (the loader checks it); None: "<name>.md".
    guide: str | None = None
    order: int = 100
    headline: str = ""
    # The headline where it runs to the answer's last byte (response_bytes set);
    # "" where `headline` already says so.
    headline_last_byte: str = ""


class ScenarioTable(Struct, frozen=True, forbid_unknown_fields=True):
    name: Name
    summary: str = ""
    iterations: Annotated[int, Meta(ge=1, le=MAX_ITERATIONS)] = 3
    # The headline quantities a student predicts (tfolab.lab.quantities selectors).
    predict: Annotated[
        tuple[str, ...], Meta(extra={"fix": f"e.g. predict = [{SELECTOR_FORMS}]"})
    ] = ()
    settings: dict[str, Any] = {}  # the table's other keys, unchecked here


class LabFile(Struct, frozen=True, forbid_unknown_fields=True):
    lab: Annotated[LabTable, Meta(extra={"fix": "add [lab] with name, title, summary, guide"})]
    scenario: Annotated[
        list[ScenarioTable],
        Meta(
            min_length=1, extra={"fix": "add [[scenario]] tables (two brackets), each with a name"}
        ),
    ]
    defaults: dict[str, Any] = {}  # scenario settings every scenario starts from


class Misfit(Exception):
    """Where a lab file goes wrong (the key or table to point at), the problem and the fix."""

    def __init__(self, where: KeyPath, problem: str, fix: str = FORMAT_FIX) -> None:
        super().__init__(problem)
        self.where, self.problem, self.fix = where, problem, fix


def read(data: dict[str, Any]) -> LabFile:
    """A parsed lab file (tomllib's dict) as a LabFile, or the Misfit where it does not fit."""
    own = set(ScenarioTable.__struct_fields__) - {"settings"}
    tables = data.get("scenario")
    if isinstance(tables, list):
        data = {**data, "scenario": [_settings_apart(table, own) for table in tables]}
    try:
        return msgspec.convert(data, LabFile)
    except msgspec.ValidationError as err:
        raise _misfit(data, _error_path(err), str(err)) from None


def _settings_apart(table: object, own: set[str]) -> object:
    if not isinstance(table, dict):
        return table
    settings = {key: value for key, value in table.items() if key not in own}
    return {key: value for key, value in table.items() if key in own} | {"settings": settings}


_AT = re.compile(r" - at `\$((?:\.\w+|\[\d+\])*)`$")
_STEP = re.compile(r"\.(\w+)|\[(\d+)\]")


def _error_path(err: msgspec.ValidationError) -> KeyPath:
    """msgspec's `$.scenario[2].iterations` as ("scenario", 2, "iterations"); () for the top."""
    at = _AT.search(str(err))
    steps = _STEP.findall(at.group(1)) if at else []
    return tuple(int(index) if index else key for key, index in steps)


def _bare(kind: schema.Type) -> schema.Type:
    return kind.type if isinstance(kind, schema.Metadata) else kind


@dataclass(frozen=True)
class _Place:
    """What the schema declares at a path: the last field on the way, and the type there."""

    field: schema.Field | None  # None: the file's top level
    field_path: KeyPath
    kind: schema.Type  # without its Meta


def _place(path: KeyPath) -> _Place | None:
    place = _Place(None, (), schema.type_info(LabFile))
    for depth, step in enumerate(path):
        kind = place.kind
        if isinstance(kind, schema.StructType):
            field = next((f for f in kind.fields if f.encode_name == step), None)
            if field is None:
                return None
            place = _Place(field, path[: depth + 1], _bare(field.type))
        elif isinstance(kind, schema.ListType | schema.VarTupleType):
            place = _Place(place.field, place.field_path, _bare(kind.item_type))
        else:
            return None
    return place


def _misfit(data: dict[str, Any], path: KeyPath, said: str) -> Misfit:
    """Why the value at `path` misfits: a table's unknown or missing key, or a wrong value."""
    for at in (path, ()):  # () too: a key that quotes msgspec's format misleads its path
        place = _place(at) if holds(data, at) else None
        if place is None:
            continue
        value = _value_at(data, at)
        if isinstance(place.kind, schema.StructType) and isinstance(value, dict):
            found = _inside_table(place.kind, value, at)
            if found is not None:
                return found
        elif place.field is not None:
            return _wrong_value(place, _value_at(data, place.field_path), at, said)
    return Misfit((), _words(said))


def _value_at(data: dict[str, Any], path: KeyPath) -> Any:
    value: Any = data
    for step in path:
        value = value[step]
    return value


def _words(said: str) -> str:
    """msgspec's own message without its path (for a type this module does not word)."""
    return said.split(" - at `$")[0]


def _inside_table(kind: schema.StructType, table: dict[str, Any], path: KeyPath) -> Misfit | None:
    known = [f.encode_name for f in kind.fields]
    unknown = next((key for key in table if key not in known), None)
    if unknown is not None and not path:
        return Misfit(
            (unknown,),
            f"unknown table or key {unknown!r}",
            "a lab file has [lab], [defaults] and [[scenario]] tables",
        )
    if unknown is not None:
        return Misfit(
            (*path, unknown), f"unknown key {unknown!r} in [{path[0]}]", f"known: {sorted(known)}"
        )
    missing = next((f for f in kind.fields if f.required and f.encode_name not in table), None)
    return None if missing is None else Misfit(path, _missing(missing), _fix(missing))


def _wrong_value(place: _Place, value: object, path: KeyPath, said: str) -> Misfit:
    """The field's value misfits, or (`path` deeper than the field) an item of it does."""
    assert place.field is not None
    name, kind, fix = place.field.encode_name, _bare(place.field.type), _fix(place.field)
    if _tables(kind) and isinstance(value, dict):
        return Misfit(path, f"[{name}] is a single table", fix)
    if path == place.field_path and isinstance(value, _PYTHON.get(type(kind), ())):
        # Of the right type and still refused: a length or pattern limit, all against empty.
        return Misfit(path, _missing(place.field), fix)
    wants = _wants(kind, name)
    if wants is None:
        return Misfit(path, f"{name}: {_words(said)}", fix)
    return Misfit(path, f"{name} must be {wants}, got {value!r}", fix)


# The types whose limits (pattern, min_length) ask for something not empty.
_PYTHON: dict[type[schema.Type], type] = {schema.StrType: str, schema.ListType: list}


def _tables(kind: schema.Type) -> bool:
    """Whether `kind` is an array of tables ([[name]] in TOML)."""
    return isinstance(kind, schema.ListType) and isinstance(
        _bare(kind.item_type), schema.StructType
    )


def _missing(field: schema.Field) -> str:
    kind = _bare(field.type)
    if isinstance(kind, schema.StructType):
        return f"no [{field.encode_name}] table"
    if _tables(kind):
        return f"no [[{field.encode_name}]] tables"
    return f"missing or empty {field.encode_name!r}"


def _wants(kind: schema.Type, name: str) -> str | None:
    """What a value of `kind` is, in a lab file's words."""
    if isinstance(kind, schema.UnionType):  # `str | None`: None is the key left out
        kind = next(k for k in kind.types if not isinstance(k, schema.NoneType))
    if isinstance(kind, schema.IntType):
        bounded = kind.ge is not None and kind.le is not None
        return f"a whole number from {kind.ge} to {kind.le}" if bounded else "a whole number"
    if isinstance(kind, schema.StrType):
        return "a string"
    if isinstance(kind, schema.StructType | schema.DictType):
        return f"a table ([{name}])"
    if _tables(kind):
        return f"[[{name}]] tables"
    strings = isinstance(kind, schema.ListType | schema.VarTupleType) and isinstance(
        _bare(kind.item_type), schema.StrType
    )
    return "a list of strings" if strings else None


def _fix(field: schema.Field) -> str:
    extra = field.type.extra if isinstance(field.type, schema.Metadata) else None
    return str((extra or {}).get("fix", FORMAT_FIX))

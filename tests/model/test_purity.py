"""The model is pure and layered: no I/O, clocks or threads, and no import circle inside it.

Both checks read every import statement with ast, wherever it is: at the top,
inside a function, or under TYPE_CHECKING (which still ties the modules together
for a reader and a type checker, even if not at run time).
"""

from __future__ import annotations

import ast
from pathlib import Path

import tfolab.model

FORBIDDEN = {
    "asyncio",
    "socket",
    "ctypes",
    "subprocess",
    "threading",
    "textual",
    "time",
    "datetime",
}
MODEL_DIR = Path(tfolab.model.__file__).parent


def imported_modules(source: str) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def forbidden_in(source: str) -> set[str]:
    return {name for name in imported_modules(source) if name.split(".")[0] in FORBIDDEN}


def model_module_name(path: Path) -> str:
    """model/endpoint.py -> 'tfolab.model.endpoint'; model/__init__.py -> 'tfolab.model'."""
    parts = path.relative_to(MODEL_DIR).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(("tfolab", "model", *parts))


def model_imports(source: str, importer: str, modules: set[str]) -> set[str]:
    """The modules among `modules` that `source` (the module `importer`) imports, in any form.

    `from tfolab.model import nagle` names the submodule nagle; `from tfolab.model import
    simulate` names the package itself (its __init__); relative imports are resolved.
    """
    package = importer if importer == "tfolab.model" else importer.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                found.add(submodule if submodule in modules else base)
    return {name for name in found if name in modules} - {importer}


def import_graph(sources: dict[str, str]) -> dict[str, set[str]]:
    modules = set(sources)
    return {name: model_imports(text, name, modules) for name, text in sources.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle as [a, b, ..., a], or None when the graph is a DAG."""
    done: set[str] = set()
    path: list[str] = []
    on_path: set[str] = set()

    def visit(node: str) -> list[str] | None:
        path.append(node)
        on_path.add(node)
        for target in sorted(graph[node]):
            if target in on_path:
                return [*path[path.index(target) :], target]
            if target not in done and (cycle := visit(target)):
                return cycle
        path.pop()
        on_path.discard(node)
        done.add(node)
        return None

    for start in sorted(graph):
        if start not in done and (cycle := visit(start)):
            return cycle
    return None


def model_sources() -> dict[str, str]:
    return {model_module_name(p): p.read_text() for p in sorted(MODEL_DIR.rglob("*.py"))}


def test_model_imports_nothing_impure() -> None:
    files = sorted(MODEL_DIR.rglob("*.py"))
    assert len(files) >= 10
    offenders = {
        str(path.relative_to(MODEL_DIR)): sorted(bad)
        for path in files
        if (bad := forbidden_in(path.read_text()))
    }
    assert offenders == {}


def test_the_checker_catches_every_import_form() -> None:
    assert forbidden_in("import time") == {"time"}
    assert forbidden_in("import os, asyncio.events") == {"asyncio.events"}
    assert forbidden_in("from datetime import datetime") == {"datetime"}
    assert forbidden_in("from textual.app import App") == {"textual.app"}
    assert forbidden_in("def f():\n    import socket\n") == {"socket"}
    assert forbidden_in("import timeit") == set()


def test_the_model_has_no_import_circle() -> None:
    graph = import_graph(model_sources())
    assert len(graph) >= 10
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def test_the_cycle_checker_sees_every_import_form() -> None:
    def graph(**sources: str) -> dict[str, set[str]]:
        return import_graph({f"tfolab.model.{k}": v for k, v in sources.items()})

    inside_a_function = graph(
        endpoint="from tfolab.model.receive import receive_segment\n",
        receive="def f():\n    from tfolab.model.endpoint import TcpEndpoint\n",
    )
    assert find_cycle(inside_a_function) == [
        "tfolab.model.endpoint",
        "tfolab.model.receive",
        "tfolab.model.endpoint",
    ]
    type_checking = graph(
        wire="from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from tfolab.model.endpoint import TcpEndpoint\n",
        endpoint="from tfolab.model import wire\n",
    )
    assert find_cycle(type_checking) is not None
    relative = graph(a="from . import b\n", b="from .a import x\n")
    assert find_cycle(relative) is not None
    plain_import = graph(a="import tfolab.model.b\n", b="import tfolab.model.c\n", c="")
    assert find_cycle(plain_import) is None
    assert plain_import["tfolab.model.a"] == {"tfolab.model.b"}
    through_the_package = {
        "tfolab.model": "from tfolab.model.loop import World\n",
        "tfolab.model.loop": "from tfolab.model import simulate\n",
    }
    assert find_cycle(import_graph(through_the_package)) is not None

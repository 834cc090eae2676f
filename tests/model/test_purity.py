"""The model is pure: nothing under tfolab/model may import I/O, clocks or threads."""

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

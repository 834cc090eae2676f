"""The layers hold: every import inside tfolab points down, never up.

Low to high: core < model < runner < lab < view < tui < cli. A module may
import its own layer and the layers below it; the model, pure, imports only
itself (tests/model/test_purity.py keeps I/O and clocks out of it); the
presentation layers (view, tui) never import the runner: they see a run
through the lab's typed results and progress. The checker reads every import
statement with ast, including those inside functions and under TYPE_CHECKING,
so nothing hides from it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import tfolab

PACKAGE = Path(tfolab.__file__).parent
LAYERS = ("core", "model", "runner", "lab", "view", "tui", "cli")
# Who may be imported by whom beyond "anything lower": the model stands alone.
ONLY_ITSELF = {"model"}
# Layers a layer may not import although they are lower: the front ends see no runner.
NEVER = {"view": {"runner"}, "tui": {"runner"}}


def layer_of(module: str) -> str | None:
    """'tfolab.lab.session' -> 'lab'; the package root's own files are the top."""
    parts = module.split(".")
    if parts[0] != "tfolab" or len(parts) == 1:
        return None
    if parts[1] in ("__init__", "__main__"):
        return "cli"
    return parts[1]


def imports_of(source: str) -> set[str]:
    """Every tfolab module a source names in an import, in any form or place."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name.startswith("tfolab.")}


def upward_imports(importer_layer: str, source: str) -> list[str]:
    """The imports of `source` that a module of `importer_layer` may not make."""
    rank = LAYERS.index(importer_layer)
    bad = []
    for target in sorted(imports_of(source)):
        layer = layer_of(target)
        if layer is None or layer == importer_layer:
            continue
        if (
            layer not in LAYERS
            or LAYERS.index(layer) > rank
            or importer_layer in ONLY_ITSELF
            or layer in NEVER.get(importer_layer, set())
        ):
            bad.append(target)
    return bad


def module_files() -> dict[str, Path]:
    files = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] == "_native":
            continue  # written by the C build, not part of the layers
        files[".".join(("tfolab", *relative.with_suffix("").parts))] = path
    return files


def test_the_package_root_holds_only_the_entry_points() -> None:
    loose = {p.name for p in PACKAGE.glob("*.py")}
    assert loose == {"__init__.py", "__main__.py"}
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders - {"_native"} == set(LAYERS)


def test_every_import_points_down() -> None:
    offenders = {}
    for module, path in module_files().items():
        layer = layer_of(module)
        assert layer in LAYERS, f"{module} is in no layer"
        if bad := upward_imports(layer, path.read_text()):
            offenders[module] = bad
    assert offenders == {}


@pytest.mark.parametrize(
    ("layer", "source", "bad"),
    [
        ("runner", "from tfolab.lab.session import run", ["tfolab.lab.session.run"]),
        ("core", "def f():\n    import tfolab.runner.netns\n", ["tfolab.runner.netns"]),
        ("view", "from tfolab import tui", ["tfolab.tui"]),
        ("model", "from tfolab.core.errors import UserError", ["tfolab.core.errors.UserError"]),
        ("lab", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import tfolab.cli\n",
         ["tfolab.cli"]),
        ("tui", "from tfolab.lab import session\nfrom tfolab.core import native", []),
        ("tui", "from tfolab.runner.protocol import Event", ["tfolab.runner.protocol.Event"]),
        ("view", "def f():\n    import tfolab.runner\n", ["tfolab.runner"]),
        ("runner", "from tfolab.model.scenario import ScenarioConfig", []),
    ],
)  # fmt: skip
def test_the_checker_catches_a_deliberate_upward_import(
    layer: str, source: str, bad: list[str]
) -> None:
    assert upward_imports(layer, source) == bad

"""The time-sequence graph of a real run: the kernel's panel is drawn from the capture."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.conftest import LabMachine, run_tfolab

SVG = "{http://www.w3.org/2000/svg}"


def panel_bars(root: ET.Element) -> tuple[list[str], list[str]]:
    """The bars' x positions of the model's panel (left) and the kernel's (right)."""
    bars = [line for line in root.iter(f"{SVG}line") if line.get("stroke-width") == "2"]
    xs = [str(line.get("x1")) for line in bars]
    half = len(xs) // 2
    return xs[:half], xs[half:]


def test_run_draws_the_kernels_graph_beside_the_models(
    delaying_machine: LabMachine, tmp_path: Path
) -> None:
    picture = tmp_path / "graph.svg"
    done = run_tfolab(
        "run", "fastopen", "--scenario", "large-data", "--delay", "5", "--iterations", "1",
        "--json", "--plot-svg", str(picture),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr  # the kernel agreed packet for packet
    assert json.loads(done.stdout)["scenarios"][0]["captured"]
    assert f"tfolab: 1 graph written to {picture}" in done.stderr
    root = ET.fromstring(picture.read_text())
    titles = [t.text or "" for t in root.iter(f"{SVG}text")]
    assert any(t.startswith("model: connection 1, the server's data") for t in titles)
    assert any(t.startswith("kernel: connection 1, the server's data") for t in titles)
    model, kernel = panel_bars(root)
    assert model and len(model) == len(kernel)  # the same segments, one bar each
    assert model != kernel  # placed at the capture's own times, not the model's again


def test_a_symbolic_link_in_the_pictures_place_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.svg"
    target.write_text("untouched")
    link = tmp_path / "graph.svg"
    link.symlink_to(target)
    done = run_tfolab("simulate", "fastopen", "--plot-svg", str(link))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "a symbolic link, never followed" in lines[0], done.stderr
    assert done.stdout == ""  # refused before anything ran
    assert target.read_text() == "untouched"

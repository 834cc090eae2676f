"""A hostile name typed into a real served session, over a real websocket: what lands in
serve's results folder is cleaned (no control or bidi characters) and cut to NAME_MAX,
and nothing is saved anywhere but that folder."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.serve.test_serve_autogroup import _sessions
from tests.serve.test_serve_budget import served_ui
from tfolab.lab.names import NAME_MAX

PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"  # what a browser's terminal sends on paste
# A title-setting escape, a bell, right-to-left override and isolate, a zero-width joiner,
# a line separator, then a name.
HOSTILE = "\x1b]0;pwned\x07\u202eevil\u2066\u200dAda\u2028 L."


@pytest.fixture
def class_folder() -> Iterator[Path]:
    """Where serve's results folder goes (serve makes it), under a folder every user may
    pass through, beside a folder any session could write in."""
    base = Path(tempfile.mkdtemp(prefix="tfolab-names-test-"))
    os.chmod(base, 0o755)
    (base / "elsewhere").mkdir(mode=0o777)
    os.chmod(base / "elsewhere", 0o777)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _unsafe(text: str) -> list[str]:
    return [c for c in text if unicodedata.category(c) in {"Cc", "Cf", "Zl", "Zp"}]


async def test_a_hostile_name_lands_cleaned_and_only_in_serves_folder(
    serve, class_folder: Path
) -> None:
    results = class_folder / "class"
    served = serve("--results", str(results))
    async with served_ui(served) as (screen, keys):
        await screen.wait_for("Your name for the class results")
        # Pasted, then a bidi override and 200 more characters typed as fast as a script can
        await keys(PASTE_START + HOSTILE + PASTE_END, "\u202e" + "y" * 200, "\r")
        await screen.wait_for("pwnedevilAda")  # in the field, drawn without its escapes
        (ui,) = _sessions(served.process.pid)
        home = next(
            Path(entry[5:].decode())
            for entry in Path(f"/proc/{ui}/environ").read_bytes().split(b"\0")
            if entry.startswith(b"HOME=")
        )
        await keys("\r")  # the first lab; the focus is on its first prediction
        await screen.wait_for("Predict first")
        await keys(*"4D", "\t", *"4D", "\t", "\r")  # on to the name (the session's); commit
        await screen.wait_for("saved as")
    (saved,) = results.glob("*.json")
    attempt = json.loads(saved.read_text())
    student = attempt["student"]
    assert _unsafe(student) == [] and len(student) <= NAME_MAX, repr(student)
    assert "pwnedevilAda L.yyy" in student and student.endswith("y"), repr(student)
    assert len(student) >= NAME_MAX - 15, repr(student)  # cut near the limit, not before
    assert _unsafe(saved.name) == [] and saved.name.isascii()
    assert attempt["session"].startswith("tab ")  # serve's identity, not the typed name
    assert list((class_folder / "elsewhere").iterdir()) == []
    assert not list(home.rglob("*.json")), list(home.rglob("*"))

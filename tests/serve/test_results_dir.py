"""Class results and the served session's own pieces, without a server: the files
save_result writes and the name asked once (serve's probe, for real: test_serve_probe.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.tui.conftest import SIZE
from tfolab.lab import session
from tfolab.lab.catalog import find_lab
from tfolab.lab.results_dir import RESULTS_DIR_ENV, save_result, slug
from tfolab.tui.app import TfolabApp
from tfolab.tui.classroom import SessionNameScreen


def test_each_result_is_one_whole_file(tmp_path: Path) -> None:
    first = save_result(tmp_path, "run", {"session": "Ada L.", "run": {"lab": "fastopen"}})
    second = save_result(tmp_path, "run", {"session": "Ada L.", "run": {"lab": "fastopen"}})
    assert first != second and first.name.startswith("run-") and "-ada-l-" in first.name
    document = json.loads(first.read_text())
    assert document["kind"] == "run" and document["payload"]["session"] == "Ada L."
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([first.name, second.name])
    with pytest.raises(ValueError):
        save_result(tmp_path, "../escape", {})
    assert slug("  ") == "anonymous" and slug("Éva / 2") == "va-2"


async def test_the_name_is_asked_once_and_runs_are_saved_with_it(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(RESULTS_DIR_ENV, str(tmp_path))
    app = TfolabApp(hz=250)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, SessionNameScreen)
        await pilot.press("enter")  # empty: asked again
        assert isinstance(app.screen, SessionNameScreen)
        await pilot.press(*"Ada", "enter")
        await pilot.pause()
        assert not isinstance(app.screen, SessionNameScreen)
        assert app.classroom.session == "Ada"
        lab = find_lab("handshake", None)
        result = session.predict(lab, session.plan(lab, "plain"), 10.0, hz=250)
        saved = app.classroom.save_run(result)
    assert saved is not None and saved.parent == tmp_path
    payload = json.loads(saved.read_text())["payload"]
    assert payload["session"] == "Ada" and payload["run"]["lab"] == "handshake"


async def test_without_results_nothing_is_asked(monkeypatch) -> None:
    monkeypatch.delenv(RESULTS_DIR_ENV, raising=False)
    app = TfolabApp(hz=250)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert not isinstance(app.screen, SessionNameScreen)
        assert app.classroom.save_run is not None and not app.classroom.collecting

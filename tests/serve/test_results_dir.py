"""Class results and the served session's own pieces, without a server: the files
save_result writes and the name asked once (serve's probe, for real: test_serve_probe.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.tui.conftest import SIZE
from tfolab.cli import serve as serve_cli
from tfolab.lab import environment
from tfolab.lab.catalog import find_lab
from tfolab.lab.environment import REAL_RUNS_OFF_ENV, RealRunStatus, quick_check
from tfolab.lab.plan import plan
from tfolab.lab.prediction import predict
from tfolab.lab.results_dir import RESULTS_DIR_ENV, save_result, slug
from tfolab.runner import probe
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


def test_a_probe_that_reports_nothing_turns_real_runs_off(monkeypatch) -> None:
    """A real process that prints no report (/bin/false) is a "no" with its fix, never a "yes";
    and a reason holding the separator still reaches the session whole."""
    monkeypatch.delenv(REAL_RUNS_OFF_ENV, raising=False)
    monkeypatch.setattr(environment, "quick_check", lambda: RealRunStatus(True, "root"))
    monkeypatch.setattr(probe.sys, "executable", "/bin/false")
    off = serve_cli.probe_real_runs()
    monkeypatch.undo()
    assert off == RealRunStatus(
        False, "the namespace probe failed (no report)", "run `tfolab doctor`"
    )
    monkeypatch.setenv(REAL_RUNS_OFF_ENV, RealRunStatus(False, "a|b", "c|d").off_value())
    assert quick_check() == RealRunStatus(False, "a/b", "c|d")


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
        result = predict(plan(lab, "plain", delay_ms=10.0), hz=250)
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

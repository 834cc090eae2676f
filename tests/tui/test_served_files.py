"""A served session's files: the results folder is serve's (not the form's), the name is
cleaned and bounded when typed, and every attempt carries the session's identity."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from textual.widgets import Input

from tests.tui.conftest import SIZE
from tests.tui.test_predict import type_into
from tfolab.core.errors import UserError
from tfolab.lab import attempts, identity, served_saves
from tfolab.lab.catalog import find_lab
from tfolab.lab.names import NAME_MAX
from tfolab.lab.plan import plan
from tfolab.lab.prediction import predict
from tfolab.lab.results_dir import save_result
from tfolab.runner.served_class import SERVED_BY_ENV
from tfolab.tui.classroom import SessionNameScreen
from tfolab.tui.screens.lab import LabScreen
from tfolab.tui.widgets.predict import PredictForm

BOTH = {"iteration 1": "2D", "iterations 2+": "2D"}


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    fixed = tmp_path / "class"
    fixed.mkdir()
    monkeypatch.setenv(SERVED_BY_ENV, "4242")
    monkeypatch.setenv(attempts.RESULTS_DIR_ENV, str(fixed))
    monkeypatch.delenv(identity.SESSION_ID_ENV, raising=False)
    identity.session_identity.cache_clear()
    yield fixed
    identity.session_identity.cache_clear()


async def test_the_folder_is_serves_and_the_name_is_cleaned(
    make_app, served: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    app = make_app(demo=False, open_lab="fastopen", open_scenario="cookie")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, SessionNameScreen)  # asked once, at start
        asked = app.screen.query_one("#session-name", Input)
        assert asked.max_length == NAME_MAX
        asked.value = "\x1b]0;x\x07\u202eBob" + "y" * 500  # set past the field's limit
        await pilot.press("enter")
        await pilot.pause()
        assert app.classroom.session == "]0;xBob" + "y" * (NAME_MAX - 7)
        screen = app.screen
        assert isinstance(screen, LabScreen)
        form = screen.query_one(PredictForm)
        folder = screen.query_one("#results-dir", Input)
        assert folder.disabled and folder.value == str(served)
        folder.value = str(elsewhere)  # as if the field could be edited anyway
        await type_into(pilot, "#predict-0", "2D")
        await type_into(pilot, "#predict-1", "2D")
        student = screen.query_one("#student", Input)
        assert student.max_length == NAME_MAX
        student.value = "\x1b[2J\u202eBob" + "x" * 500  # set past the field's limit
        student.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert not form.display
    assert list(elsewhere.iterdir()) == []
    (saved,) = served.glob("*.json")
    data = json.loads(saved.read_text())
    assert data["student"].startswith("[2JBob") and len(data["student"]) <= NAME_MAX
    assert not any(ord(c) < 0x20 or c == "\u202e" for c in data["student"])
    assert data["session"].startswith("tab 4242-")
    assert saved.stat().st_mode & 0o777 == attempts.FILE_MODE


def test_a_served_session_saves_nowhere_else(served: Path, tmp_path: Path) -> None:
    assert attempts.results_dir("/tmp") == served
    assert attempts.results_dir("") == served
    from tests.cli.test_grade import save_attempt

    with pytest.raises(UserError, match="only in the class's results folder"):
        save_attempt(tmp_path, "Bob", "fastopen", "cookie", BOTH, 1)
    assert not list(tmp_path.glob("*.json"))


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """This test's session starts with nothing saved, with bounds small enough to reach."""
    monkeypatch.setattr(served_saves, "SESSION", served_saves.SaveCount())
    monkeypatch.setattr(served_saves, "MAX_FILES", 3)
    monkeypatch.setattr(served_saves, "MAX_BYTES", 200_000)


@pytest.mark.usefixtures("counted")
def test_a_served_session_saves_a_bounded_number_of_files(served: Path) -> None:
    from tests.cli.test_grade import save_attempt

    first = save_attempt(served, "Bob", "fastopen", "cookie", BOTH, 1)
    save_attempt(served, "Bob", "fastopen", "cookie", BOTH, 2)
    save_result(served, "run", {"session": "Bob", "run": {"lab": "fastopen"}})
    with pytest.raises(UserError, match="saved 3 files for the class, the most one session may"):
        save_attempt(served, "Bob", "fastopen", "cookie", BOTH, 3)
    with pytest.raises(UserError, match="saved 3 files"):
        save_result(served, "run", {"session": "Bob", "run": {"lab": "fastopen"}})
    assert len(list(served.iterdir())) == 3  # nothing written, not even a staging file
    # The same attempt graded again after a run goes over its own file: no new file.
    again = msgspec.json.decode(first.read_bytes(), type=attempts.Attempt)
    assert attempts.save(served, again, first) == first
    assert len(list(served.iterdir())) == 3


@pytest.mark.usefixtures("counted")
def test_a_served_session_writes_a_bounded_number_of_bytes(served: Path) -> None:
    big = {"session": "Bob", "run": {"lab": "fastopen", "padding": "x" * 150_000}}
    save_result(served, "run", big)
    with pytest.raises(UserError, match=r"has written 0 MiB for the class; one session may"):
        save_result(served, "run", big)
    assert len(list(served.iterdir())) == 1


@pytest.mark.usefixtures("counted")
def test_outside_a_served_session_nothing_is_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SERVED_BY_ENV, raising=False)
    for _ in range(5):
        save_result(tmp_path, "run", {"session": "Teacher", "run": {}})
    assert len(list(tmp_path.iterdir())) == 5


@pytest.mark.usefixtures("counted")
async def test_a_run_past_the_bound_is_not_saved_and_the_session_says_so(
    make_app, served: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(served_saves, "MAX_FILES", 0)
    app = make_app(demo=False, open_lab="handshake")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, SessionNameScreen)
        await pilot.press(*"Bob", "enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LabScreen)
        lab = find_lab("handshake")
        screen._keep_for_class(predict(plan(lab, delay_ms=10.0), hz=250))
        await pilot.pause()
        said = [str(n.message) for n in app._notifications]
        assert any("Not saved for the class: this session has saved 0 files" in s for s in said)
    assert list(served.iterdir()) == []

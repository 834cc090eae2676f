"""An internal error is exit 3: one line naming it and a private file with the details."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tfolab import cli
from tfolab.cli import crash, listing


def _boom(args: object) -> int:
    raise RuntimeError("a deliberate bug\nwith a second line")


def test_a_bug_is_one_line_exit_3_and_a_0600_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(listing, "handle", _boom)
    assert cli.main(["list"]) == 3
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert out == "" and len(lines) == 1, err
    assert lines[0].startswith(
        "tfolab: internal error: RuntimeError: a deliberate bug; details in "
    )
    saved = Path(lines[0].split("details in ")[1].split(";")[0])
    assert saved.parent == tmp_path / "tfolab"
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    text = saved.read_text()
    assert "Traceback" in text and "command: tfolab list" in text and "_boom" in text


def test_a_planted_symlink_is_never_followed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another user's symlink where the file would go: the writer moves on to a fresh
    mkstemp name in the temporary folder, and the symlink's target stays as it was."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    temporary = _temporary_folder(monkeypatch, tmp_path)
    monkeypatch.setattr(listing, "handle", _boom)
    monkeypatch.setattr(crash.time, "strftime", lambda *_: "STAMP")
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    (tmp_path / "tfolab").mkdir()
    (tmp_path / "tfolab" / f"crash-STAMP-{os.getpid()}.txt").symlink_to(victim)
    assert cli.main(["list"]) == 3
    err = capsys.readouterr().err
    assert victim.read_text() == "untouched"
    saved = _saved(err)
    assert saved.parent == temporary and not saved.is_symlink()
    assert saved.name.startswith(f"crash-STAMP-{os.getpid()}-") and saved.suffix == ".txt"
    assert stat.S_IMODE(saved.lstat().st_mode) == 0o600
    assert "RuntimeError: a deliberate bug" in saved.read_text()


def test_an_unwritable_cache_falls_back_to_the_temporary_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    not_a_folder = tmp_path / "cache"
    not_a_folder.write_text("a file where the cache folder would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(not_a_folder))
    temporary = _temporary_folder(monkeypatch, tmp_path)
    monkeypatch.setattr(listing, "handle", _boom)
    assert cli.main(["list"]) == 3
    [line] = capsys.readouterr().err.splitlines()
    saved = _saved(line)
    assert saved.parent == temporary and stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert "Traceback" in saved.read_text()


def test_a_bug_inside_the_ui_is_exit_3_too(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    cli_args: Callable[..., list[str]],
) -> None:
    """`tfolab` without a command: Textual catches the app's exception; run_app raises it
    again, so the UI's bug is the same one line and crash file, not Textual's traceback."""
    from textual.app import App

    from tfolab.lab.environment import REAL_RUNS_OFF_ENV
    from tfolab.tui.app import TfolabApp

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv(REAL_RUNS_OFF_ENV, "off in this test|")

    def broken_mount(self: TfolabApp) -> None:
        raise RuntimeError("a deliberate bug in the UI")

    def headless(self: TfolabApp, **_: object) -> None:
        App.run(self, headless=True)

    monkeypatch.setattr(TfolabApp, "on_mount", broken_mount)
    monkeypatch.setattr(TfolabApp, "run", headless)
    assert cli.main(cli_args("--demo")) == 3
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    [line] = err.splitlines()
    assert line.startswith("tfolab: internal error: RuntimeError: a deliberate bug in the UI;")
    saved = _saved(line)
    assert saved.parent == tmp_path / "tfolab" and "broken_mount" in saved.read_text()
    assert "--demo" in saved.read_text().split("command: tfolab ")[1].splitlines()[0]


def _temporary_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The system's temporary folder, for this test only (tempfile.gettempdir())."""
    import tempfile

    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _saved(err: str) -> Path:
    return Path(err.split("details in ")[1].split(";")[0])


def test_the_real_command_line_exits_3_without_a_traceback(tmp_path: Path) -> None:
    """In a subprocess, through `python -m tfolab`: a command whose handler breaks."""
    import subprocess

    code = (
        "import sys; from tfolab.cli import listing, main; "
        "listing.handle = lambda args: 1 / 0; sys.exit(main(['list']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)},
        timeout=60,
    )
    assert done.returncode == 3
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "ZeroDivisionError: division by zero" in done.stderr

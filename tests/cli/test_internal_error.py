"""An internal error is exit 3: one line naming it and a private file with the details."""

from __future__ import annotations

import os
import stat
import sys
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
    """Another user's symlink where the file would go: the writer moves on, the target stays."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(listing, "handle", _boom)
    monkeypatch.setattr(crash.time, "strftime", lambda *_: "STAMP")
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    (tmp_path / "tfolab").mkdir()
    (tmp_path / "tfolab" / f"crash-STAMP-{os.getpid()}.txt").symlink_to(victim)
    assert cli.main(["list"]) == 3
    err = capsys.readouterr().err
    assert victim.read_text() == "untouched"
    saved = Path(err.split("details in ")[1].split(";")[0])
    assert saved.parent != tmp_path / "tfolab" and not saved.is_symlink()
    saved.unlink()


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

"""A broken lab file breaks only itself, and its message points at the exact line.

Every case below puts the offending key where a naive search would find
something else first: the same key earlier in the file, the key's name inside
a comment or a multi-line string, or a known setting named in the message.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.text import Text
from textual.widgets import Static, Tree

from tfolab import cli
from tfolab.core.errors import UserError
from tfolab.lab.catalog import BrokenLab, find_lab, load_lab_file, load_labs
from tfolab.lab.environment import RealRunStatus
from tfolab.lab.toml_lines import line_of
from tfolab.tui.app import TfolabApp
from tfolab.tui.screens.lab import LabScreen
from tfolab.tui.screens.start import StartScreen

LAB = '[lab]\nname = "x"\ntitle = "X"\n'


def numbered(*lines: str) -> str:
    return "\n".join(lines) + "\n"


# (file text, line of the problem, words the message must contain)
CASES = [
    pytest.param(
        numbered(
            "# line 1",
            "[lab]",
            'name = "x"',
            'title = "X"',
            "",
            "[defaults]",
            'pattern = "wwr"',
            "fresh_connection_each_iteration = false",
            "",
            "[[scenario]]",
            'name = "a"',
            "cork = true",
            "",
            "[[scenario]]",
            'name = "b"',
            "cork = true",
            "warp = 1",
        ),
        17,
        "unknown setting 'warp'",
        id="unknown-key-line-17-after-known-ones",
    ),
    pytest.param(
        numbered(
            LAB.rstrip("\n"),  # 1-3
            "",
            "[[scenario]]",
            'name = "a"',
            "iterations = 2",
            "[[scenario]]",
            'name = "b"',
            "iterations = 0",
        ),
        10,
        "iterations must be a whole number from 1 to 200",
        id="iterations-of-the-second-scenario",
    ),
    pytest.param(
        numbered(LAB.rstrip("\n"), "[[scenario]]", 'name = "a"', "[[scenario]]", 'name = "a"'),
        7,
        "scenario 'a' is defined twice",
        id="duplicate-scenario-name",
    ),
    pytest.param(
        numbered(LAB.rstrip("\n"), "[[scenario]]", 'name = "a"', "[[scenario]]", 'summary = "s"'),
        6,
        "missing or empty 'name'",
        id="missing-name-points-at-its-table",
    ),
    pytest.param(
        numbered(
            "[lab]",
            'name = "x"',
            'summary = """mtu = 0',
            "[defaults]",
            'mtu = 0"""',
            "# mtu = 0",
            "[defaults]",
            "mtu = 0",
            "[[scenario]]",
            'name = "a"',
        ),
        8,
        "[defaults]: setting mtu must be 128 to 65536",
        id="defaults-key-after-a-multiline-string-and-a-comment",
    ),
    pytest.param(
        numbered(
            LAB.rstrip("\n"),
            "[defaults]",
            'pattern = "wwr"',
            "single_write = true",
            "[[scenario]]",
            'name = "a"',
            "[[scenario]]",
            'name = "b"',
            "msg_more = true",
        ),
        11,
        "scenario 'b': single_write and msg_more do not combine",
        id="combination-blames-the-scenario-key",
    ),
    pytest.param(
        numbered(
            LAB.rstrip("\n"),
            "[defaults]",
            "single_write = true",
            "msg_more = true",
            "[[scenario]]",
            'name = "a"',
        ),
        6,
        "scenario 'a': single_write and msg_more do not combine",
        id="combination-set-in-defaults-blames-defaults",
    ),
    pytest.param(
        numbered(
            "[lab]",
            'name = "x"',
            "summary = '''",
            "colour = 1",
            "'''",
            "colour = 2",
            "[[scenario]]",
            'name = "a"',
        ),
        6,
        "unknown key 'colour' in [lab]",
        id="lab-key-after-a-literal-multiline-string",
    ),
    pytest.param(
        numbered(LAB.rstrip("\n"), "[[scenario]]", 'name = "a"', '"warp" = 1'),
        6,
        "unknown setting 'warp'",
        id="quoted-key",
    ),
    pytest.param(
        numbered(LAB.rstrip("\n"), "[scenario]", 'name = "a"'),
        4,
        "[scenario] is a single table",
        id="single-bracket-scenario",
    ),
    pytest.param(
        numbered(LAB.rstrip("\n"), "[defualts]", "mtu = 1500", "[[scenario]]", 'name = "a"'),
        4,
        "unknown table or key 'defualts'",
        id="misspelt-table",
    ),
    pytest.param(
        numbered(LAB.rstrip("\n"), 'order = "first"', "[[scenario]]", 'name = "a"'),
        4,
        "order must be a whole number",
        id="order-not-a-number",
    ),
    pytest.param(
        numbered(LAB.rstrip("\n"), "[[scenario]]", 'name = "a"', "nodelay = maybe"),
        6,
        "Invalid value",
        id="toml-syntax",
    ),
    pytest.param(
        numbered(LAB.rstrip("\n"), 'guide = "/etc/shadow"', "[[scenario]]", 'name = "a"'),
        4,
        "guide must be a file name in the lab file's folder, not '/etc/shadow'",
        id="guide-absolute",
    ),
    pytest.param(
        numbered(
            LAB.rstrip("\n"), 'guide = "notes/../../../etc/shadow"', "[[scenario]]", 'name = "a"'
        ),
        4,
        "guide must be a file name in the lab file's folder",
        id="guide-dot-dot",
    ),
    pytest.param(
        numbered(
            LAB.rstrip("\n"),
            "[[scenario]]",
            'name = "a"',
            'summary = "predict = [3]"',
            "predict = [",
            '  "iteration 1",',
            "  3,",
            "]",
        ),
        7,
        "predict must be a list of strings, got ['iteration 1', 3]",
        id="an-item-of-a-multi-line-array-blames-its-key",
    ),
    pytest.param(
        numbered('scenario = [{ name = "a" }, { name = "b", iterations = 0 }]', LAB.rstrip("\n")),
        1,
        "iterations must be a whole number from 1 to 200, got 0",
        id="scenarios-as-an-inline-array",
    ),
    pytest.param(
        numbered("scenario = [1, 2]", LAB.rstrip("\n")),
        1,
        "scenario must be [[scenario]] tables, got [1, 2]",
        id="scenarios-that-are-not-tables",
    ),
    pytest.param(
        numbered('"x` - at `$.lab" = 1', LAB.rstrip("\n"), "[[scenario]]", 'name = "a"'),
        1,
        "unknown table or key 'x` - at `$.lab'",
        id="a-key-that-quotes-msgspecs-path-format",
    ),
    pytest.param(
        numbered(LAB.rstrip("\n"), "[[scenario]]", 'name = "a"', "[[scenario]]", 'name = " "'),
        7,
        "missing or empty 'name'",
        id="a-blank-scenario-name",
    ),
    pytest.param(
        numbered("[lab]", "name = 5", "[[scenario]]", 'name = "a"'),
        2,
        "name must be a string, got 5",
        id="lab-name-not-a-string",
    ),
]


@pytest.mark.parametrize(("text", "line", "problem"), CASES)
def test_the_message_names_the_exact_line(
    tmp_path: Path, text: str, line: int, problem: str
) -> None:
    path = tmp_path / "lab.toml"
    path.write_text(text)
    assert text.splitlines()[line - 1].strip(), "the test points at a blank line"
    with pytest.raises(UserError) as caught:
        load_lab_file(path)
    message = caught.value.reason
    assert message.startswith(f"{path}:{line}: "), message
    assert problem in message


def test_lines_are_of_headers_and_keys_not_values() -> None:
    text = numbered(
        "# [x] and y = 1 in a comment",
        "[lab] # comment",
        'name = "x" # [y]',
        '"title" = """multi',
        "[defaults]",
        "nodelay = 1",
        '"""',
        "summary = 'a#b'",
        "arr = [",
        '  "[[scenario]]",  # comment ]',
        "  { a = 1 },",
        "]",
        "",
        "[[scenario]]",
        'name = "a"',
        "x.y = 1",
        "",
        "[[ scenario ]]",
        'name = "b"',
        "'k w' = '''x",
        "'''",
        'nodelay = "\\"" # q',
        "warp = 9",
    )
    tomllib.loads(text)  # valid TOML: lines are only ever looked up in files that parsed
    expected = {
        ("lab",): 2,
        ("lab", "name"): 3,
        ("lab", "title"): 4,
        ("lab", "summary"): 8,
        ("lab", "arr"): 9,
        ("lab", "arr", 1, "a"): 9,
        ("scenario", 0): 14,
        ("scenario", 0, "name"): 15,
        ("scenario", 0, "x"): 16,
        ("scenario", 0, "x", "y"): 16,
        ("scenario", 1): 18,
        ("scenario", 1, "name"): 19,
        ("scenario", 1, "k w"): 20,
        ("scenario", 1, "nodelay"): 22,
        ("scenario", 1, "warp"): 23,
    }
    assert {path: line_of(text, path) for path in expected} == expected
    assert line_of(text, ("scenario", 1, "missing")) == 18  # its table's header
    assert line_of(text, ("defaults", "nodelay")) is None  # that was inside a string
    assert line_of(text, ()) is None


def test_a_file_that_is_not_utf8_is_broken_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "latin.toml").write_bytes(b'[lab]\nname = "caf\xe9"\n')
    labs = load_labs(tmp_path)
    [broken] = labs.broken
    assert list(labs) == [] and "not UTF-8" in broken.reason


# --- one broken file among good ones -------------------------------------------------

GOOD = '[lab]\nname = "good"\ntitle = "Good"\n\n[[scenario]]\nname = "a"\niterations = 1\n'
BROKEN = '[lab]\nname = "bad"\ntitle = "Bad"\n\n[[scenario]]\nname = "a"\nmtu = 0\n'


@pytest.fixture
def labs_dir(tmp_path: Path) -> Path:
    (tmp_path / "good.toml").write_text(GOOD)
    (tmp_path / "bad.toml").write_text(BROKEN)
    (tmp_path / "syntax.toml").write_text("[lab\n")
    return tmp_path


def test_good_labs_load_beside_broken_ones(labs_dir: Path) -> None:
    labs = load_labs(labs_dir)
    assert [lab.name for lab in labs] == ["good"]
    broken = {b.name: b for b in labs.broken}
    assert set(broken) == {"bad", "syntax"}  # a file that does not parse: its stem
    assert broken["bad"].reason.startswith(f"{labs_dir / 'bad.toml'}:7: scenario 'a': ")
    assert broken["syntax"].reason.startswith(f"{labs_dir / 'syntax.toml'}:1: ")
    assert find_lab("good", labs_dir).name == "good"
    for name in ("bad", "syntax"):
        with pytest.raises(UserError) as caught:
            find_lab(name, labs_dir)
        assert caught.value.reason == broken[name].reason


def test_the_same_lab_name_twice(labs_dir: Path) -> None:
    (labs_dir / "zz-again.toml").write_text(GOOD)
    labs = load_labs(labs_dir)
    assert [lab.name for lab in labs] == ["good"]
    again = next(b for b in labs.broken if b.source.name == "zz-again.toml")
    assert again.reason.startswith(f"{labs_dir / 'zz-again.toml'}:2: lab name 'good' is already")


def test_cli_list_shows_broken_labs_and_exits_0(
    labs_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["list", "--labs-dir", str(labs_dir)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.startswith("good ")
    assert f"bad        BROKEN: {labs_dir / 'bad.toml'}:7: " in out
    assert f"syntax     BROKEN: {labs_dir / 'syntax.toml'}:1: " in out


@pytest.mark.parametrize("command", ["simulate", "run"])
def test_cli_broken_lab_is_exit_2_and_others_work(
    command: str,
    labs_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    cli_args: Callable[..., list[str]],
) -> None:
    if command == "simulate":
        monkeypatch.setenv("TFOLAB_LABS_DIR", str(labs_dir))
        where = []
    else:  # started as root, run takes no folder from its environment (cli.root_env)
        where = ["--labs-dir", str(labs_dir)]
    assert cli.main(cli_args(command, "bad", "--delay", "0", *where)) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"tfolab: {labs_dir / 'bad.toml'}:7: scenario 'a': setting mtu")
    if command == "simulate":
        assert cli.main(["simulate", "good", "--delay", "0"]) == 0
        assert "good" in capsys.readouterr().out


# --- the start screen ----------------------------------------------------------------


async def test_start_screen_lists_a_broken_lab_that_cannot_be_opened(
    labs_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TFOLAB_LABS_DIR", str(labs_dir))
    app = TfolabApp(hz=250, real_runs=RealRunStatus(False, "tests", "none"))
    async with app.run_test(size=(100, 32)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, StartScreen)
        tree = screen.query_one(Tree)
        nodes = tree.root.children
        assert nodes[0].data == ("good", None)
        broken = [node for node in nodes if isinstance(node.data, BrokenLab)]
        assert [node.data.name for node in broken] == ["bad", "syntax"]
        assert "BROKEN" in Text(str(broken[0].label)).plain
        await pilot.press("down", "down")  # good/a, then the broken lab "bad"
        assert tree.cursor_node is broken[0]
        summary = str(screen.query_one("#summary", Static).render())
        assert "BROKEN" in summary and "bad.toml:7" in summary
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, StartScreen)
        assert not any(isinstance(s, LabScreen) for s in app.screen_stack)
        await pilot.press("up", "enter")  # the good lab still opens
        await pilot.pause()
        assert isinstance(app.screen, LabScreen)


def test_a_guide_that_leads_out_of_the_folder_reads_as_missing(tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("the teacher's secret\n")
    labs = tmp_path / "labs"
    labs.mkdir()
    (labs / "x.md").symlink_to(secret)  # a real link, out of the lab's folder
    (labs / "y.md").symlink_to("/dev/zero")
    os.mkfifo(labs / "z.md")
    for guide in ("x", "y", "z"):
        path = labs / f"{guide}.toml"
        path.write_text(
            numbered(LAB.rstrip("\n"), f'guide = "{guide}.md"', "[[scenario]]", 'name = "a"')
        )
        text = load_lab_file(path).guide_text()
        assert "secret" not in text and f"The guide {guide}.md is missing" in text

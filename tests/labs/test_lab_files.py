"""The lab files load, and a broken one names the file, the line and the problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfolab.core.errors import UserError
from tfolab.lab.catalog import find_lab, load_lab_file, load_labs

EXPECTED = {
    "handshake": ["plain"],
    "fastopen": [
        "cookie-request",
        "cookie",
        "plain",
        "invalid-cookie",
        "server-off",
        "large-data",
        "no-cookie",
        "replay",
        "syn-data-lost",
        "middlebox-drops-syn-data",
        "middlebox-strips-option",
    ],
    "delack": ["nagle", "nodelay", "single-write", "cork", "quickack"],
    "transfer": ["first-flight", "slow-start", "long"],
    "loss": [
        "syn-lost",
        "two-syns-lost",
        "synack-lost",
        "request-lost",
        "probe-lost",
        "response-lost",
        "fin-lost",
        "last-ack-lost",
    ],
}


def test_every_lab_and_scenario_is_there() -> None:
    labs = {lab.name: [s.name for s in lab.scenarios] for lab in load_labs()}
    assert labs == EXPECTED


def test_every_lab_has_a_guide_with_questions() -> None:
    for lab in load_labs():
        text = lab.guide_text()
        assert "## Questions" in text, lab.name
        assert "Answer" in text, lab.name


def test_settings_reach_the_config() -> None:
    fastopen = find_lab("fastopen")
    invalid = fastopen.scenario("invalid-cookie")
    assert invalid.config.client_fastopen == "sendto"
    assert invalid.config.rotate_key_before_iteration == 1
    assert invalid.config.cookie_cache == "warm"
    assert fastopen.scenario("no-cookie").config.fastopen_sysctl == 0x207
    assert find_lab("delack").scenario("quickack").config.server_quickack


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "broken.toml"
    path.write_text(text)
    return path


GOOD_HEAD = '[lab]\nname = "x"\ntitle = "X"\n\n[[scenario]]\nname = "a"\n'


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        (GOOD_HEAD + "nodelay = maybe\n", 7, "Invalid value"),
        (GOOD_HEAD + 'nodelay = "maybe"\n', 7, "wants true or false"),
        (GOOD_HEAD + "warp_speed = 9\n", 7, "unknown setting 'warp_speed'"),
        (GOOD_HEAD + "iterations = 0\n", 7, "iterations must be"),
        (GOOD_HEAD + 'pattern = "rrr"\n', 7, "wants one of rr, wwr"),
        ('[lab]\nname = "x"\n', None, "no [[scenario]] tables"),
        ('[lab]\ncolour = "red"\nname = "x"\n', 2, "unknown key 'colour'"),
    ],
)
def test_broken_lab_file_names_file_line_and_problem(
    tmp_path: Path, text: str, line: int | None, problem: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(UserError) as caught:
        load_lab_file(path)
    message = caught.value.reason
    assert str(path) in message
    if line is not None:
        assert f":{line}" in message
    assert problem in message


def test_cli_lists_a_broken_lab_file_and_exits_0(tmp_path: Path) -> None:
    import subprocess
    import sys

    write(tmp_path, GOOD_HEAD + "warp_speed = 9\n")
    env = {"TFOLAB_LABS_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "tfolab", "list"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    [line] = [line for line in done.stdout.splitlines() if "BROKEN" in line]
    assert line.startswith("x ") and "broken.toml:7" in line and "warp_speed" in line


def test_the_fastopen_guide_says_what_the_kernel_does() -> None:
    """Pinned wordings: the option kinds are tried 34, 254, then 34 for good (try_exp),
    never "alternated"; Linux retransmits a SYN without its data, so the GET-vs-POST
    risk is a duplicated or replayed SYN, which the replay scenario shows."""
    text = find_lab("fastopen").guide_text()
    assert "alternat" not in text
    assert "then stays on kind 34" in text and "try_exp" in text
    assert "retransmits a lost SYN without its data" in text
    assert "an attacker captured and replays" in text and "`replay` shows it for real" in text
    notes = (Path(__file__).parents[2] / "docs" / "TCP-NOTES.md").read_text()
    assert "alternat" not in notes and "then stays on 34" in notes
    assert "retransmits a lost SYN without its data" in notes

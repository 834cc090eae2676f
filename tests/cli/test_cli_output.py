"""What the CLI prints: --version, --help, --labs-dir, the simulate summary, the run report.

Real runs are replaced by a fake event stream (tfolab.runner.client.stream_events),
so nothing here starts a process or touches the network.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from importlib import metadata
from pathlib import Path

import pytest

from tests.conftest import run_tfolab
from tests.golden import check_json
from tfolab import cli
from tfolab.lab.catalog import find_lab
from tfolab.runner import client
from tfolab.runner.protocol import Counters, Done, Event, Iteration, Note, ScenarioStarted, Setup

LABS = Path(__file__).resolve().parents[2] / "tfolab" / "lab" / "labs"


def test_version_prints_name_and_version() -> None:
    done = run_tfolab("--version", timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"tfolab {metadata.version('tfolab')}\n"
    assert done.stderr == ""


def test_help_documents_the_labs_folder(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert "--labs-dir DIR" in out and "TFOLAB_LABS_DIR" in out


@pytest.mark.parametrize(
    "args",
    [
        ["--labs-dir", "{dir}", "list"],
        ["list", "--labs-dir", "{dir}"],
        ["--labs-dir", "/nonexistent", "list", "--labs-dir", "{dir}"],
    ],
    ids=["before", "after", "after-wins"],
)
def test_labs_dir_before_or_after_the_command(
    args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "mine.toml").write_text(
        '[lab]\nname = "mine"\ntitle = "My lab"\n\n[[scenario]]\nname = "only"\n'
    )
    assert cli.main([a.replace("{dir}", str(tmp_path)) for a in args]) == 0
    out = capsys.readouterr().out
    assert out.startswith("mine       My lab")
    assert "handshake" not in out


def test_labs_dir_wins_over_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TFOLAB_LABS_DIR", "/nonexistent")
    assert cli.main(["simulate", "handshake", "--labs-dir", str(LABS)]) == 0
    assert "handshake" in capsys.readouterr().out


@pytest.mark.parametrize("where", [["--labs-dir", "{missing}"], ["--labs-dir", "{file}"]])
def test_labs_dir_that_is_not_a_folder(
    where: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a-file").write_text("")
    paths = {"{missing}": str(tmp_path / "missing"), "{file}": str(tmp_path / "a-file")}
    assert cli.main([*[paths.get(a, a) for a in where], "list"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    [line] = err.splitlines()
    assert line.startswith("tfolab: the labs folder ") and "--labs-dir" in line


# --- simulate ---------------------------------------------------------------------


def test_simulate_without_a_scenario_is_one_summary_table() -> None:
    done = run_tfolab("simulate", "fastopen", "--delay", "10", timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    lab = find_lab("fastopen")
    assert len(lines) < 20, done.stdout  # was 1322 lines of ladders
    assert "D = 10 ms" in lines[0] and "RTT = 20 ms" in lines[0]
    for scenario in lab.scenarios:
        assert any(line.startswith(f"{scenario.name} ") for line in lines), scenario.name
    cookie = next(line for line in lines if line.startswith("cookie "))
    assert "ms each" in cookie and "1 RTT each" in cookie
    invalid = next(line for line in lines if line.startswith("invalid-cookie "))
    assert "first 2 RTT, later 1 RTT" in invalid
    assert "--ladder" in lines[-1]


def test_simulate_summary_at_delay_zero_says_loopback(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["simulate", "handshake", "--delay", "0"]) == 0
    out = capsys.readouterr().out
    assert "D = 0 ms (RTT 0, loopback)" in out.splitlines()[0]
    assert "RTT =" not in out and "inf" not in out and "nan" not in out


def test_simulate_ladders_on_request(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["simulate", "handshake", "--scenario", "plain"]) == 0
    one = capsys.readouterr().out
    assert one.startswith("== handshake / plain:") and "tfolab model: D = 10 ms" in one
    assert cli.main(["simulate", "delack", "--ladder"]) == 0
    every = capsys.readouterr().out
    assert every.count("== delack / ") == len(find_lab("delack").scenarios)


def test_simulate_json_is_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    """Against a committed file (tests/golden.py), not the function the CLI calls."""
    assert cli.main(["simulate", "fastopen", "--delay", "7", "--json"]) == 0
    check_json("simulate-fastopen-7.json", capsys.readouterr().out)


# --- run, over a fake runner ---------------------------------------------------------


def fake_runner(
    monkeypatch: pytest.MonkeyPatch, *, backend: str, delay_ms: float, notes: list[dict]
) -> list[object]:
    jobs: list[object] = []

    async def stream_events(job, **_: object) -> AsyncIterator[Event]:
        jobs.append(job)
        yield Setup(backend, delay_ms, "user namespace", "6.1.0-test", [], 12.0)
        for scenario in job.scenarios:
            yield ScenarioStarted(scenario.name)
            for note in notes:
                yield Note(scenario.name, note["text"])
            for i in range(1, scenario.iterations + 1):
                yield Iteration(scenario.name, i, 1.0, 0.1, False)
            yield Counters(scenario.name, {})
        yield Done("")

    monkeypatch.setattr(client, "stream_events", stream_events)
    return jobs


def test_backend_none_at_delay_zero_still_runs(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    cli_args: Callable[..., list[str]],
) -> None:
    jobs = fake_runner(monkeypatch, backend="none", delay_ms=0.0, notes=[])
    code = cli.main(cli_args("run", "handshake", "--delay", "0", "--backend", "none"))
    out, err = capsys.readouterr()
    assert len(jobs) == 1 and jobs[0].backend == "none" and jobs[0].delay_ms == 0
    assert "D = 0 ms (RTT 0, loopback), backend none" in out
    assert "WARNING" not in err
    assert code in (0, 1)  # graded against the model's band; the fake times are made up


def test_the_report_uses_the_delay_that_ran(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    cli_args: Callable[..., list[str]],
) -> None:
    """Asked 10 ms, the (fake) runner applied 0: no line may still say D = 10."""
    fake_runner(monkeypatch, backend="none", delay_ms=0.0, notes=[])
    cli.main(cli_args("run", "handshake", "--delay", "10", "--backend", "auto"))
    out, err = capsys.readouterr()
    assert "D = 10" not in out and "RTT = 20" not in out
    assert "D = 0 ms (RTT 0, loopback), backend none" in out
    assert "10 ms was asked but 0 ms ran" in err


def test_runner_notes_are_shown(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    cli_args: Callable[..., list[str]],
) -> None:
    fake_runner(
        monkeypatch, backend="netem", delay_ms=10.0, notes=[{"text": "server TFO key changed"}]
    )
    args = ("fastopen", "--scenario", "cookie", "--delay", "10", "--iterations", "1")
    cli.main(cli_args("run", *args))
    assert "server TFO key changed" in capsys.readouterr().err


def test_normal_scheduling_widens_the_band_by_the_hosts_slice() -> None:
    """A user namespace may not raise priority: the band grows by the scheduler's slice."""
    from tfolab.lab.prediction import accuracy_for

    rt, normal = accuracy_for("nfqueue", True), accuracy_for("nfqueue", False)
    assert rt.per_packet_delay_error_ms == normal.per_packet_delay_error_ms
    assert normal.host_overhead_ms - rt.host_overhead_ms == 3.0


def test_one_iteration_still_gives_the_replay_something_to_replay(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["simulate", "fastopen", "--delay", "10", "--iterations", "1", "--json"]) == 0
    scenarios = {s["name"]: s for s in json.loads(capsys.readouterr().out)["scenarios"]}
    assert len(scenarios["replay"]["iterations"]) == 2
    assert len(scenarios["cookie"]["iterations"]) == 1

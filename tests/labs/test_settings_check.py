"""ScenarioConfig.check() is the one gate: what it accepts, the model and the runner take.

lab.plan.plan and the lab loader call it before anything runs, so a config it
passes must never be refused later by simulate() (the model's own checks)
except as outside the model's declared domain (model/domain.py, with its
reason), and every limit must hold at its edges for --set strings and
lab-file values alike.
"""

from __future__ import annotations

import dataclasses
import random

import pytest

from tfolab.lab.catalog import load_labs
from tfolab.model import domain, simulate
from tfolab.model.rcv_space import LINUX_DEFAULT
from tfolab.model.scenario import LIMITS, ScenarioConfig, SettingError
from tfolab.model.simulation import ModelInputError
from tfolab.model.window import DEFAULT_RECEIVE_SPACE, initial_wscale

CHOICES: dict[str, list[object]] = {
    "pattern": ["rr", "wwr"],
    "client_fastopen": ["off", "sendto", "connect"],
    "cookie_cache": ["flush", "warm", "keep"],
    "fresh_connection_each_iteration": [True, False],
    "nodelay": [True, False],
    "cork": [True, False],
    "msg_more": [True, False],
    "single_write": [True, False],
    "server_quickack": [True, False],
    "request_bytes": [1, 16, 1459, 3000],
    "first_write_bytes": [1, 10, 1500],
    "second_write_bytes": [1, 6, 2000],
    "server_fastopen_qlen": [0, 16],
    "fastopen_sysctl": [0, 1, 2, 3, 0x207],
    "rotate_key_before_iteration": [0, 1, 2],
    "pingpong_thresh": [1, 3, 255],
    "mtu": [128, 1500, 65536],
}


def test_what_check_accepts_the_model_simulates() -> None:
    rng = random.Random(7)
    bases = [s.config for lab in load_labs() for s in lab.scenarios]
    accepted = refused = 0
    for _ in range(150):
        keys = rng.sample(sorted(CHOICES), rng.randint(1, 5))
        config = dataclasses.replace(
            rng.choice(bases), **{key: rng.choice(CHOICES[key]) for key in keys}
        )
        try:
            config.check()
        except SettingError:
            continue
        delay = rng.choice([0, 0.5, 10])
        outside = domain.refusal(
            config, delay, LINUX_DEFAULT, initial_wscale(DEFAULT_RECEIVE_SPACE), 2
        )
        try:
            simulate(config, one_way_delay_ms=delay, iterations=2, hz=250)
        except ModelInputError as err:
            refused += 1
            if outside is None:  # found on the simulation's way (simulation.left_domain),
                # still before anything runs: a reader race of the timeline's bursts, or
                # a drop landing on a segment whose loss the model does not follow
                if "the path lo" in str(err):  # loses, or lost (loss_probe.py)
                    assert str(err).startswith("outside the model's domain: the path lo")
                    continue
                if config.drop and "depends on a race of the timer wheel" in str(err):
                    continue  # the race's other way loses another packet (race_moves_a_drop)
                if config.drop and "congestion window" in str(err):
                    continue  # lost SYN-ACKs left a first window of 1 (tcp_init_transfer)
                assert str(err).startswith("outside the model's domain: connection "), err
                assert "GSO packets" in str(err), err
                continue
            assert str(err) == f"outside the model's domain: {outside}"
            continue
        assert outside is None
        accepted += 1
    assert accepted > 100 and refused >= 1


@pytest.mark.parametrize("key", sorted(LIMITS))
def test_every_limit_holds_at_its_edges(key: str) -> None:
    low, high = LIMITS[key]
    config = ScenarioConfig()
    for good in (low, high):
        assert getattr(config.with_settings({key: str(good)}).check(), key) == good
        assert getattr(config.with_settings({key: good}), key) == good  # a lab file's int
    for bad in (low - 1, high + 1):
        with pytest.raises(SettingError) as caught:
            config.with_settings({key: str(bad)})
        assert caught.value.key == key and f"got {bad}" in str(caught.value)
        with pytest.raises(SettingError):
            dataclasses.replace(config, **{key: bad}).check()


@pytest.mark.parametrize(
    ("raw", "value"), [("1e3", 1000), ("0x5dc", 1500), ("1_500", 1500), (" 1500 ", 1500)]
)
def test_whole_numbers_in_several_spellings(raw: str, value: int) -> None:
    assert ScenarioConfig().with_settings({"mtu": raw}).mtu == value


@pytest.mark.parametrize("raw", ["1.5e3x", "1500.5", "true", True, 1500.5, "inf", "nan", ""])
def test_not_whole_numbers(raw: object) -> None:
    with pytest.raises(SettingError, match="mtu wants a whole number"):
        ScenarioConfig().with_settings({"mtu": raw})


@pytest.mark.parametrize(
    ("settings", "blamed"),
    [
        ({"single_write": "1", "msg_more": "1"}, "msg_more"),
        ({"pattern": "wwr", "client_fastopen": "sendto"}, "client_fastopen"),
        ({"client_fastopen": "connect", "fastopen_sysctl": "2"}, "fastopen_sysctl"),
        (
            {"pattern": "wwr", "first_write_bytes": "999999", "second_write_bytes": "2"},
            "second_write_bytes",
        ),
    ],
)
def test_combinations_name_the_key_to_change(settings: dict[str, str], blamed: str) -> None:
    config = ScenarioConfig().with_settings(settings)  # each value alone is fine
    with pytest.raises(SettingError) as caught:
        config.check()
    assert caught.value.key == blamed
    assert set(caught.value.keys) <= set(settings) | {"pattern"}

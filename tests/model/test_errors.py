"""Bad input: a ValueError subclass with one readable line."""

from __future__ import annotations

import pytest

from tfolab.model import Accuracy, ModelInputError, ScenarioConfig, simulate


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"one_way_delay_ms": -1.0, "iterations": 1}, "one_way_delay_ms"),
        ({"one_way_delay_ms": float("nan"), "iterations": 1}, "one_way_delay_ms"),
        ({"one_way_delay_ms": 10.0, "iterations": 0}, "iterations"),
        ({"one_way_delay_ms": 10.0, "iterations": 2.5}, "iterations"),
        ({"one_way_delay_ms": 10.0, "iterations": 1, "hz": 0}, "hz"),
        ({"one_way_delay_ms": 10.0, "iterations": 1, "hz": -250}, "hz"),
        (
            {"one_way_delay_ms": 10.0, "iterations": 1, "accuracy": Accuracy(-1.0, 0.5)},
            "per_packet_delay_error_ms",
        ),
        ({"one_way_delay_ms": 10.0, "iterations": 1, "tick_phase_ms": 4.0}, "tick_phase_ms"),
    ],
)
def test_bad_arguments(kwargs: dict, fragment: str) -> None:
    with pytest.raises(ModelInputError) as info:
        simulate(ScenarioConfig(), **kwargs)
    message = str(info.value)
    assert isinstance(info.value, ValueError)
    assert fragment in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        (ScenarioConfig(request_bytes=0), "request_bytes"),
        (ScenarioConfig(pattern="wwr", first_write_bytes=0), "first_write_bytes"),
        (ScenarioConfig(pattern="wwr", single_write=True, msg_more=True), "msg_more"),
        (ScenarioConfig(client_fastopen="sendto", fastopen_sysctl=0x2), "0x1"),
        (ScenarioConfig(mtu=60), "mtu"),
        (ScenarioConfig(pingpong_thresh=0), "pingpong_thresh"),
        (ScenarioConfig(pattern="xyz"), "pattern"),  # type: ignore[arg-type]
    ],
)
def test_bad_config(config: ScenarioConfig, fragment: str) -> None:
    with pytest.raises(ModelInputError) as info:
        simulate(config, one_way_delay_ms=1.0, iterations=1)
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)

"""replay_syn is refused up front wherever iteration 1's SYN data would not be accepted.

Found by the fuzzer (seed 5115): `fastopen --scenario replay --set fastopen_sysctl=1031`
(0x407) ended in an internal error. With 0x4 (TFO_CLIENT_NO_COOKIE) the client sends its
SYN data with no cookie (tcp_fastopen_cookie_check), and without 0x200
(TFO_SERVER_COOKIE_NOT_REQD) the server takes SYN data only with a valid cookie
(tcp_try_fastopen): nothing to replay.
"""

from __future__ import annotations

import dataclasses

import pytest

from tests.model.scenarios import scenario
from tfolab.model import simulate
from tfolab.model.scenario import SettingError

REPLAY = scenario("fastopen", "replay").config


@pytest.mark.parametrize("sysctl", [0x407, 0x7, 0x5])
def test_a_client_without_cookies_and_a_server_that_needs_one_is_refused(sysctl: int) -> None:
    with pytest.raises(SettingError, match="0x200 where it has 0x4") as refused:
        dataclasses.replace(REPLAY, fastopen_sysctl=sysctl).check()
    assert refused.value.key == "fastopen_sysctl"


@pytest.mark.parametrize("sysctl", [0x3, 0x403, 0x207, 0x607])
def test_every_other_way_to_an_accepted_syn_replays(sysctl: int) -> None:
    config = dataclasses.replace(REPLAY, fastopen_sysctl=sysctl).check()
    sim = simulate(config, one_way_delay_ms=0, iterations=2)
    assert len(sim.predictions) == 2

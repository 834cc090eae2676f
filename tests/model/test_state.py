"""The TCP state table (tfolab/model/state.py) is the only way a socket changes state."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import tfolab.model
from tests.model.scenarios import SCENARIOS, scenario
from tfolab.model import simulate
from tfolab.model.clock import JiffyClock, Link
from tfolab.model.delack import DelackRules
from tfolab.model.events import Recorder
from tfolab.model.sock import TcpSock
from tfolab.model.state import (
    SENDS_DATA,
    TRANSITIONS,
    ImpossibleTransition,
    TcpEvent,
    TcpState,
    next_state,
)
from tfolab.model.wire import Env

MODEL_DIR = Path(tfolab.model.__file__).parent
S, E = TcpState, TcpEvent
Move = tuple[str, int, TcpState, TcpEvent, TcpState]  # side, connection, from, on, to


def test_the_table_rejects_an_impossible_transition_by_name() -> None:
    with pytest.raises(ImpossibleTransition) as info:
        next_state(S.SYN_SENT, E.RECV_FIN)
    message = str(info.value)
    assert "SYN_SENT" in message and "RECV_FIN" in message
    assert "RECV_SYNACK" in message  # what SYN_SENT does move on
    assert isinstance(info.value, RuntimeError)
    with pytest.raises(ImpossibleTransition, match="TIME_WAIT only moves on: nothing"):
        next_state(S.TIME_WAIT, E.SEND_FIN)


def test_a_socket_refuses_what_the_table_refuses() -> None:
    sock = _closed_client()
    with pytest.raises(ImpossibleTransition):
        sock.move(E.RECV_ACK_OF_FIN)
    assert sock.state is S.CLOSED  # unchanged


def test_every_state_is_reachable_from_closed_or_listen() -> None:
    reached = {S.CLOSED, S.LISTEN}
    while True:
        more = {to for (state, _), to in TRANSITIONS.items() if state in reached} - reached
        if not more:
            break
        reached |= more
    assert reached == set(TcpState)
    assert reached >= SENDS_DATA


def test_only_the_socket_record_assigns_a_state() -> None:
    """No model module writes `x.state = ...` except TcpSock's __init__ and move()."""
    writers = set()
    for path in sorted(MODEL_DIR.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for func in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
            for node in ast.walk(func):
                targets: list[ast.expr] = []
                if isinstance(node, ast.Assign):
                    targets = node.targets
                elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                    targets = [node.target]
                if any(isinstance(t, ast.Attribute) and t.attr == "state" for t in targets):
                    writers.add(f"{path.name}:{func.name}")
    assert writers == {"sock.py:__init__", "sock.py:move"}


@pytest.fixture
def moves(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Move]]:
    """Every move() any socket makes while the test runs."""
    taken: list[Move] = []
    original = TcpSock.move

    def recording_move(self: TcpSock, event: TcpEvent) -> TcpState:
        before = self.state
        after = original(self, event)
        taken.append((self.side, self.connection, before, event, after))
        return after

    monkeypatch.setattr(TcpSock, "move", recording_move)
    yield taken


def path_of(moves: list[Move], side: str, connection: int) -> list[TcpState]:
    steps = [(before, after) for s, c, before, _, after in moves if (s, c) == (side, connection)]
    return [steps[0][0], *(after for _, after in steps)]


def test_a_plain_connection_walks_the_textbook_diagram(moves: list[Move]) -> None:
    item = scenario("handshake", "plain")
    simulate(item.config, one_way_delay_ms=10, iterations=1)
    assert path_of(moves, "client", 1) == [
        S.CLOSED,
        S.SYN_SENT,
        S.ESTABLISHED,
        S.FIN_WAIT1,
        S.FIN_WAIT2,
        S.TIME_WAIT,
    ]
    assert path_of(moves, "server", 1) == [
        S.LISTEN,
        S.SYN_RECV,
        S.ESTABLISHED,
        S.CLOSE_WAIT,
        S.LAST_ACK,
        S.CLOSED,
    ]


@pytest.mark.parametrize("item", SCENARIOS, ids=lambda s: f"{s.lab}-{s.name}")
def test_every_state_change_is_a_row_of_the_table(item, moves: list[Move]) -> None:
    simulate(item.config, one_way_delay_ms=10, iterations=item.iterations)
    assert moves
    for _side, _connection, before, event, after in moves:
        assert TRANSITIONS[(before, event)] is after
    replayed = item.iterations + 1 if item.config.replay_syn else None  # after the warm-up
    for side in ("client", "server"):
        for connection in {c for s, c, *_ in moves if s == side}:
            path = path_of(moves, side, connection)
            if connection == replayed:  # the replayed child waits in SYN_RECV (replay.py)
                assert path == [S.LISTEN, S.SYN_RECV]
                continue
            assert path[-1] in (S.TIME_WAIT, S.CLOSED)


def _closed_client() -> TcpSock:
    env = Env(
        recorder=Recorder(),
        clock=JiffyClock(250, 0),
        link=Link(0),
        rules=DelackRules(250, 1),
        counters={},
        transmit=lambda wire, t: None,
        call_at=lambda t, action: None,
    )
    return TcpSock(env, side="client", connection=1, iteration=1, mtu=65536)

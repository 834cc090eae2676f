"""A served run or bench that holds its measurement slot past the cap is stopped, through the
lab layer's own calls (lab.session.run, lab.bench.run_bench): a served environment as serve
makes it (TFOLAB_SERVED_BY), a cap of 1 s, and real runners that would hold their slot for
many seconds. Each is stopped about a second after taking its slot, says why, leaves no
runner behind, and its slot is free at once."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from tests.serve.test_serve import _descendants
from tfolab.core import slots
from tfolab.core.errors import UserError
from tfolab.lab import bench, served_budget, session
from tfolab.lab.bench_plan import plan_bench
from tfolab.lab.catalog import find_lab
from tfolab.lab.plan import plan
from tfolab.lab.prediction import predict
from tfolab.lab.run_plan import for_real
from tfolab.runner.served_class import SERVED_BY_ENV

CAP_S = 1.0
STOPPED = f"held a measurement slot for {CAP_S:g} s"


@pytest.fixture
def served_with_a_small_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    # serve names itself to its sessions: this process stands for serve (so only its own
    # children are "the class" whose CPUs a measuring run may narrow, runner.served_class).
    monkeypatch.setenv(SERVED_BY_ENV, str(os.getpid()))
    monkeypatch.setattr(served_budget, "HOLD_CAP_S", CAP_S)


def _runners() -> list[int]:
    found = []
    for pid in _descendants(os.getpid()):
        try:
            if b"tfolab.runner" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:
            continue
    return found


async def _slot_is_free() -> None:
    table = slots.SlotTable.open()
    slot = await asyncio.wait_for(asyncio.to_thread(table.acquire), 5)
    slot.release()


@pytest.mark.usefixtures("served_with_a_small_cap")
async def test_a_served_run_past_the_cap_is_stopped(delaying_machine) -> None:
    lab = find_lab("handshake")
    planned = plan(lab, iterations=40, delay_ms=50.0)
    needs_s = served_budget.run_seconds(predict(planned, backend="auto"))
    assert 5 < needs_s < served_budget.RUN_BUDGET_S  # allowed, and far longer than the cap
    started = time.monotonic()
    with pytest.raises(UserError, match=STOPPED):
        await session.run(for_real(planned, "auto"))
    assert time.monotonic() - started < needs_s
    assert _runners() == []
    await _slot_is_free()


@pytest.mark.usefixtures("served_with_a_small_cap")
async def test_a_served_bench_past_the_cap_is_stopped(delaying_machine) -> None:
    bench_plan = plan_bench("50", 100, 1, "none")  # 100 requests one at a time at D = 50 ms
    needs_s = served_budget.bench_seconds(bench_plan)
    assert 5 < needs_s < served_budget.BENCH_BUDGET_S
    started = time.monotonic()
    with pytest.raises(UserError, match=STOPPED):
        await bench.run_bench(bench_plan)
    assert time.monotonic() - started < needs_s
    assert _runners() == []
    await _slot_is_free()

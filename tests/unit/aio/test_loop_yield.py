"""``loop_yield``: a task producing in a tight loop lets the tasks whose timers came due run before it goes on
(under asyncio a plain checkpoint resumes the caller first: the event-loop lag of bench/async.py)."""

from __future__ import annotations

import time

import anyio
import pytest
from anyio.abc import TaskStatus

from pykafka_client.aio._loop import loop_yield


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.anyio
async def test_a_sleeper_whose_timer_came_due_runs_before_the_yielding_task_resumes() -> None:
    order: list[str] = []

    async def sleeper(task_status: TaskStatus[None]) -> None:
        task_status.started()
        await anyio.sleep(0.001)
        order.append("sleeper")

    async with anyio.create_task_group() as tg:
        await tg.start(sleeper)
        time.sleep(0.01)  # the caller works without suspending: the sleeper's timer comes due meanwhile
        await loop_yield()
        order.append("caller")
    assert order == ["sleeper", "caller"]


@pytest.mark.anyio
async def test_a_task_cancelled_in_the_yield_raises_there() -> None:
    with anyio.CancelScope() as scope:
        scope.cancel()
        await loop_yield()
        pytest.fail("not cancelled")
    assert scope.cancelled_caught

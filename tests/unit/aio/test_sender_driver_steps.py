"""When the async producer's event-loop driver steps the Sender again (aio/_sender_driver.py).

A stand-in Sender polls a real Selector (no connections) in non-blocking mode, as the Sender's ``run_once`` does,
and counts its steps. The driver must not step again after a step whose poll only drained a wake-up raised before
the step (the change it announced was seen by that step): it waits on the selector's descriptor instead. It must
step again on a wake-up raised during a step (the poll may have drained it), on a wake-up after the step, on the
step's own deadline, and when the Sender has work due at once. No wall clock: the loop is run until the step
count settles, and the deadline case runs under trio's MockClock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import anyio
import pytest
import trio
import trio.testing

from pykafka_client.aio._sender_driver import SenderDriver
from pykafka_client.network.transport.selector import Selector
from pykafka_client.producer.sender import Sender

#: loop iterations after which a driver that was going to step again has done so
SETTLE = 50


class _StandInSender:
    """The part of :class:`Sender` the driver uses: one poll per step, a wake-up flag cleared as each step begins."""

    def __init__(self, timeout_ms: int) -> None:
        self.pollable_selector = Selector()
        self.timeout_ms = timeout_ms
        self.steps = 0
        self.wakeup_pending = False
        self.running = True
        self.finished = False
        #: run once inside the next step, after its start and before its poll (a thread racing the step)
        self.during_next_step: Callable[[], None] | None = None

    def start_run(self) -> None:
        pass

    def run_step(self) -> bool:
        if not self.running:
            return False
        self.wakeup_pending = False
        self.steps += 1
        during, self.during_next_step = self.during_next_step, None
        if during is not None:
            during()
        self.pollable_selector.poll(self.timeout_ms)
        return True

    def wakeup(self) -> None:
        if not self.wakeup_pending:
            self.wakeup_pending = True
            self.pollable_selector.wakeup()

    def finish_run(self) -> None:
        self.finished = True
        self.pollable_selector.close()


def _driver(sender: _StandInSender) -> SenderDriver:
    return SenderDriver(cast(Sender, sender), "test-driver")


async def _settle() -> None:
    for _ in range(SETTLE):
        await anyio.sleep(0)


async def _until(cond: Callable[[], bool]) -> None:
    for _ in range(100 * SETTLE):
        if cond():
            return
        await anyio.sleep(0)
    raise AssertionError("the driver did not step")


async def _close(sender: _StandInSender, driver: SenderDriver) -> None:
    sender.running = False
    sender.wakeup()
    await _until(lambda: not driver.is_alive())
    assert sender.finished


def _step_counts(backend: str, *, woken_before_start: bool, during_next_step: bool, at_least: int) -> list[int]:
    """Start the driver (after a wake-up if ``woken_before_start``), let it settle, wake it once (also from inside
    its next step if ``during_next_step``), let it settle again: the step count at both points."""
    sender = _StandInSender(timeout_ms=60_000)

    async def main() -> list[int]:
        driver = _driver(sender)
        if woken_before_start:
            sender.wakeup()  # as send() does when it fills a batch, before the driver's first step
        driver.ensure_started()
        await _until(lambda: sender.steps >= 1)
        await _settle()
        counts = [sender.steps]
        if during_next_step:
            sender.during_next_step = sender.wakeup
        sender.wakeup()  # after the step: the descriptor is readable, the driver steps
        await _until(lambda: sender.steps >= at_least)
        await _settle()
        counts.append(sender.steps)
        await _close(sender, driver)
        return counts

    return anyio.run(main, backend=backend)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_step_that_only_drained_an_earlier_wakeup_is_not_followed_by_another(backend: str) -> None:
    # the first step drained the wake-up and found nothing more: the driver waits until the next wake-up
    assert _step_counts(backend, woken_before_start=True, during_next_step=False, at_least=2) == [1, 2]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_wakeup_raised_during_a_step_makes_the_driver_step_again(backend: str) -> None:
    """The wake-up lands after the step began and before its poll, which drains it: nothing is left readable,
    only the Sender's flag tells the driver that the step may have missed what the wake-up announced."""
    # the woken step, then one more for the wake-up raised during it
    assert _step_counts(backend, woken_before_start=False, during_next_step=True, at_least=3) == [1, 3]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_sender_with_work_due_now_is_stepped_again(backend: str) -> None:
    sender = _StandInSender(timeout_ms=0)  # the Sender asks for no wait (e.g. batches ready to drain)

    async def main() -> int:
        driver = _driver(sender)
        driver.ensure_started()
        await _until(lambda: sender.steps >= 5)
        sender.timeout_ms = 60_000
        steps = sender.steps
        await _settle()
        assert sender.steps <= steps + 1  # the step running with the long timeout is the last one
        await _close(sender, driver)
        return sender.steps

    assert anyio.run(main, backend=backend) >= 5


def test_the_driver_steps_again_at_the_deadline_the_step_computed() -> None:
    """Under trio's MockClock (time jumps to the next deadline when every task waits): the driver waits on the
    selector up to the step's timeout, then steps again although nothing woke it."""
    sender = _StandInSender(timeout_ms=5_000)
    seen: dict[str, Any] = {}

    async def main() -> None:
        driver = _driver(sender)
        sender.wakeup()
        driver.ensure_started()
        await _until(lambda: sender.steps >= 1)
        start = trio.current_time()
        while sender.steps < 3:
            await trio.sleep(1)  # virtual seconds
        seen["waited_s"] = trio.current_time() - start
        seen["steps"] = sender.steps
        await _close(sender, driver)

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert seen["steps"] == 3
    assert 10 <= seen["waited_s"] <= 11  # two 5 s deadlines, not one wake-up-driven step in between

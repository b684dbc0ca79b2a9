"""``DeliveryFuture``: awaiting a record's outcome under asyncio and trio, completed in the loop's thread (the
loop-driven Sender) or in another thread (a Sender on its thread after the loop ended), with cancellation.

No broker: the record's future is a plain ``concurrent.futures.Future`` (what ``DeliveryFuture`` wraps)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import anyio
import pytest

from pykafka_client.aio._loop import WakerCache
from pykafka_client.aio.producer import DeliveryFuture
from pykafka_client.errors import KafkaTimeoutError
from pykafka_client.producer.record_metadata import RecordMetadata


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class CountingFuture(Future[RecordMetadata]):
    """Counts the done-callbacks added (a DeliveryFuture adds one only when a task has to wait)."""

    def __init__(self) -> None:
        super().__init__()
        self.callbacks_added = 0

    def add_done_callback(self, fn: Callable[[Future[RecordMetadata]], object]) -> None:
        self.callbacks_added += 1
        super().add_done_callback(fn)


def metadata(offset: int) -> RecordMetadata:
    return RecordMetadata("t", 0, offset, 0, -1, 3)


def complete_all(futures: list[Future[RecordMetadata]]) -> None:
    for i, f in enumerate(futures):
        f.set_result(metadata(i))


@pytest.mark.anyio
async def test_each_awaiting_task_gets_its_own_records_outcome_when_completed_in_the_loop_thread() -> None:
    wakers = WakerCache()
    futures = [CountingFuture() for _ in range(20)]
    deliveries = [DeliveryFuture(f, wakers) for f in futures]
    got: dict[int, object] = {}

    async def wait(i: int) -> None:
        try:
            got[i] = await deliveries[i]
        except KafkaTimeoutError as e:
            got[i] = e

    failure = KafkaTimeoutError("record 7 expired")
    async with anyio.create_task_group() as tg:
        for i in range(len(deliveries)):
            tg.start_soon(wait, i)
        await anyio.wait_all_tasks_blocked()
        assert not got
        for i, f in enumerate(futures):  # in this (the loop's) thread, as the loop-driven Sender completes them
            if i == 7:
                f.set_exception(failure)
            else:
                f.set_result(metadata(i))
    assert got[7] is failure  # the record's own error object, raised from the await
    assert all(got[i] == metadata(i) for i in range(20) if i != 7)
    assert [f.callbacks_added for f in futures] == [1] * 20


@pytest.mark.anyio
async def test_a_record_nobody_awaits_or_that_is_done_gets_no_done_callback() -> None:
    wakers = WakerCache()
    pending, done = CountingFuture(), CountingFuture()
    done.set_result(metadata(1))
    DeliveryFuture(pending, wakers)
    assert await DeliveryFuture(done, wakers) == metadata(1)
    assert (pending.callbacks_added, done.callbacks_added) == (0, 0)


@pytest.mark.anyio
async def test_a_cancelled_await_leaves_the_record_to_complete_and_other_awaiters_get_it() -> None:
    wakers = WakerCache()
    future: Future[RecordMetadata] = Future()
    delivery = DeliveryFuture(future, wakers)
    got: list[RecordMetadata] = []
    cancelled = False

    async def cancelled_waiter() -> None:
        nonlocal cancelled
        with anyio.CancelScope() as scope:
            scope.cancel()  # takes effect at the await below: it is cancelled while waiting
            await delivery
        cancelled = scope.cancelled_caught

    async def waiter() -> None:
        got.append(await delivery)

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter)
        await anyio.wait_all_tasks_blocked()
        await cancelled_waiter()
        assert cancelled and not future.cancelled() and not delivery.done()
        future.set_result(metadata(5))  # the cancelled waiter's callback runs too: it must not fail
    assert got == [metadata(5)]
    assert await delivery == metadata(5)


@pytest.mark.anyio
async def test_records_completed_on_another_thread_wake_their_awaiters() -> None:
    wakers = WakerCache()
    futures: list[Future[RecordMetadata]] = [Future() for _ in range(50)]
    got: list[RecordMetadata] = []

    async def wait(f: Future[RecordMetadata]) -> None:
        got.append(await DeliveryFuture(f, wakers))

    async with anyio.create_task_group() as tg:
        for f in futures:
            tg.start_soon(wait, f)
        await anyio.wait_all_tasks_blocked()
        await anyio.to_thread.run_sync(complete_all, futures)
    assert sorted(got, key=lambda m: m.offset) == [metadata(i) for i in range(50)]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.anyio
async def test_a_burst_of_completions_on_another_thread_is_one_loop_callback_under_asyncio() -> None:
    loop = asyncio.get_running_loop()
    scheduled = 0
    original = loop.call_soon_threadsafe

    def counting(callback: Callable[..., object], *args: Any, **kwargs: Any) -> asyncio.Handle:
        nonlocal scheduled
        scheduled += 1
        return original(callback, *args, **kwargs)

    loop.call_soon_threadsafe = counting  # type: ignore[method-assign,assignment]
    try:
        wakers = WakerCache()
        futures: list[Future[RecordMetadata]] = [Future() for _ in range(30)]
        got: list[RecordMetadata] = []

        async def wait(f: Future[RecordMetadata]) -> None:
            got.append(await DeliveryFuture(f, wakers))

        async with anyio.create_task_group() as tg:
            for f in futures:
                tg.start_soon(wait, f)
            await anyio.wait_all_tasks_blocked()
            # the loop is busy (blocked here) while another thread completes the whole batch
            thread = threading.Thread(target=complete_all, args=(futures,))
            thread.start()
            thread.join()
        assert len(got) == 30
        assert scheduled == 1
    finally:
        loop.call_soon_threadsafe = original  # type: ignore[method-assign]


@pytest.mark.anyio
async def test_an_awaiting_task_waits_without_an_anyio_event(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under asyncio on a bare loop future, under trio parked by trio itself: no anyio Event and its layers
    (about a quarter of the awaited path's Python calls under asyncio, a sixth under trio)."""

    def no_event() -> None:
        raise AssertionError("an anyio.Event was created to wait for a record")

    monkeypatch.setattr(anyio, "Event", no_event)
    future: Future[RecordMetadata] = Future()
    delivery = DeliveryFuture(future, WakerCache())
    got: list[RecordMetadata] = []

    async def wait() -> None:
        got.append(await delivery)

    async with anyio.create_task_group() as tg:
        tg.start_soon(wait)
        await anyio.wait_all_tasks_blocked()
        future.set_result(metadata(2))
    assert got == [metadata(2)]


class CompletedWhileWatched(Future[RecordMetadata]):
    """A record that completes (on "another thread") just as the awaiting task adds its done-callback."""

    def add_done_callback(self, fn: Callable[[Future[RecordMetadata]], object]) -> None:
        if not self.done():
            self.set_result(metadata(9))
        super().add_done_callback(fn)  # runs ``fn`` at once: the future is done


@pytest.mark.anyio
async def test_a_record_completed_while_the_awaiting_task_registers_returns_without_parking() -> None:
    with anyio.fail_after(5):
        assert await DeliveryFuture(CompletedWhileWatched(), WakerCache()) == metadata(9)

from __future__ import annotations

import threading

import pytest

from pykafka_client.errors import BufferExhaustedError, IllegalArgumentError
from pykafka_client.errors_base import KafkaError
from pykafka_client.producer.buffer_pool import BufferPool
from pykafka_client.utils.time import MockTime


def _wait_queued(pool: BufferPool, n: int) -> None:
    for _ in range(100_000):
        if pool.queued() == n:
            return
        threading.Event().wait(0.001)
    raise AssertionError("waiter never queued")


def test_allocate_and_deallocate() -> None:
    pool = BufferPool(1000, MockTime())
    pool.allocate(600, 0)
    assert pool.available_memory() == 400
    pool.deallocate(600)
    assert pool.available_memory() == 1000


def test_too_big_for_pool() -> None:
    with pytest.raises(IllegalArgumentError):
        BufferPool(100, MockTime()).allocate(101, 0)


def test_no_block_time_fails_immediately() -> None:
    pool = BufferPool(100, MockTime())
    pool.allocate(80, 0)
    with pytest.raises(BufferExhaustedError, match="Failed to allocate 30 bytes within the configured max blocking time 0 ms"):
        pool.allocate(30, 0)
    assert pool.queued() == 0


def test_blocked_allocation_times_out_when_mock_time_passes() -> None:
    time = MockTime()
    pool = BufferPool(100, time)
    pool.allocate(100, 0)
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            pool.allocate(10, 1000)
        except BaseException as e:
            errors.append(e)

    t = threading.Thread(target=worker)
    t.start()
    _wait_queued(pool, 1)
    time.sleep(999)
    assert t.is_alive()
    time.sleep(1)
    t.join(10)
    assert not t.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], BufferExhaustedError)


def test_blocked_allocation_succeeds_on_deallocate_fifo() -> None:
    time = MockTime()
    pool = BufferPool(100, time)
    pool.allocate(100, 0)
    order: list[str] = []

    def worker(name: str, size: int) -> None:
        pool.allocate(size, 60_000)
        order.append(name)

    a = threading.Thread(target=worker, args=("a", 60))
    a.start()
    _wait_queued(pool, 1)
    b = threading.Thread(target=worker, args=("b", 10))
    b.start()
    _wait_queued(pool, 2)
    pool.deallocate(30)  # 30 free: b would fit but must not overtake a
    threading.Event().wait(0.01)
    assert order == []
    pool.deallocate(70)
    a.join(10)
    b.join(10)
    assert order == ["a", "b"]
    assert pool.available_memory() == 30


def test_close_wakes_waiters() -> None:
    pool = BufferPool(10, MockTime())
    pool.allocate(10, 0)
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            pool.allocate(5, 60_000)
        except KafkaError as e:
            errors.append(e)

    t = threading.Thread(target=worker)
    t.start()
    _wait_queued(pool, 1)
    pool.close()
    t.join(10)
    assert errors and "closed" in str(errors[0])


def test_try_allocate_takes_only_what_allocate_would_take_at_once() -> None:
    """try_allocate (the accumulator's non-blocking allocation under a deque lock): True and the memory taken
    when allocate would return at once; False and nothing taken when the memory is short, when a waiter is
    queued (it never overtakes one), when closed or when the size exceeds the pool."""
    pool = BufferPool(100, MockTime())
    assert pool.try_allocate(60)
    assert pool.available_memory() == 40
    assert not pool.try_allocate(50)
    assert not pool.try_allocate(101)
    assert pool.available_memory() == 40
    waiter = threading.Thread(target=pool.allocate, args=(50, 60_000))
    waiter.start()
    _wait_queued(pool, 1)
    assert not pool.try_allocate(10)  # 40 bytes free, but the waiter asked first
    assert pool.available_memory() == 40
    pool.deallocate(60)
    waiter.join(30)
    assert pool.available_memory() == 50 and pool.queued() == 0
    assert pool.try_allocate(10)
    pool.close()
    assert not pool.try_allocate(10)
    assert pool.available_memory() == 40


def test_a_blocked_allocation_calls_on_wait_once_queued() -> None:
    # the producer wakes its Sender there: the waiter makes every batch sendable, which a Sender waiting out a
    # long linger.ms would not see before the waiter timed out
    time = MockTime()
    pool = BufferPool(100, time)
    seen: list[int] = []
    pool.on_wait = lambda: seen.append(len(pool._waiters))
    pool.allocate(100, 0)
    assert seen == []  # no wait: no call
    t = threading.Thread(target=lambda: pool.allocate(10, 60_000))
    t.start()
    _wait_queued(pool, 1)
    assert seen == [1]  # called with the waiter already queued (the Sender's ready check counts it)
    pool.deallocate(100)
    t.join(10)
    assert not t.is_alive() and pool.queued() == 0


def test_an_external_wait_counts_as_queued_and_calls_on_wait() -> None:
    pool = BufferPool(100, MockTime())
    calls: list[int] = []
    pool.on_wait = lambda: calls.append(pool._external_waiters)  # (called under the pool lock: no queued() there)
    pool.begin_external_wait()
    assert calls == [1] and pool.queued() == 1
    assert pool.can_allocate_now(100)  # not a waiter ahead of its own allocation
    pool.end_external_wait()
    assert pool.queued() == 0

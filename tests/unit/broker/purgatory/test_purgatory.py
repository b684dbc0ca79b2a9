"""DelayedOperation and DelayedOperationPurgatory (MockTime, timer driven by hand)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from mini_broker.purgatory import DelayedOperation, DelayedOperationPurgatory
from mini_broker.timer import SystemTimer
from pykafka_client.utils.time import MockTime


class MockDelayedOperation(DelayedOperation):
    def __init__(self, delay_ms: int, lock: threading.RLock | None = None) -> None:
        super().__init__(delay_ms, lock)
        self.completable = False
        self.completions = 0
        self.expirations = 0
        self.try_calls = 0

    def try_complete(self) -> bool:
        self.try_calls += 1
        if self.completable:
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        self.completions += 1

    def on_expiration(self) -> None:
        self.expirations += 1


@pytest.fixture
def time() -> MockTime:
    return MockTime()


@pytest.fixture
def purgatory(time: MockTime) -> Iterator[DelayedOperationPurgatory[MockDelayedOperation]]:
    timer = SystemTimer("mock", time, start_ms=time.hi_res_clock_ms(), run_inline=True)
    p: DelayedOperationPurgatory[MockDelayedOperation] = DelayedOperationPurgatory(
        "mock", timer, reaper_enabled=False, time=time
    )
    yield p
    p.shutdown()


def expire_due(time: MockTime, p: DelayedOperationPurgatory[MockDelayedOperation], ms: int) -> None:
    time.sleep(ms)
    p.advance_clock(0)


def test_request_satisfaction(purgatory: DelayedOperationPurgatory[MockDelayedOperation]) -> None:
    r1 = MockDelayedOperation(100_000)
    r2 = MockDelayedOperation(100_000)
    assert purgatory.check_and_complete("test1") == 0
    assert not purgatory.try_complete_else_watch(r1, ["test1"])
    assert purgatory.check_and_complete("test1") == 0
    assert not purgatory.try_complete_else_watch(r2, ["test2"])
    assert purgatory.check_and_complete("test2") == 0
    r1.completable = True
    assert purgatory.check_and_complete("test1") == 1
    assert purgatory.check_and_complete("test1") == 0
    r2.completable = True
    assert purgatory.check_and_complete("test2") == 1
    assert purgatory.check_and_complete("test2") == 0
    assert (r1.completions, r2.completions, r1.expirations) == (1, 1, 0)


def test_completable_op_completes_inline(purgatory: DelayedOperationPurgatory[MockDelayedOperation]) -> None:
    op = MockDelayedOperation(1000)
    op.completable = True
    assert purgatory.try_complete_else_watch(op, ["k"])
    assert purgatory.watched == 0 and purgatory.num_delayed == 0 and op.completions == 1


def test_has_watched_once_an_op_waited(purgatory: DelayedOperationPurgatory[MockDelayedOperation]) -> None:
    """``has_watched``: False until an op is watched (an op completed by its first check is not), then True for good,
    even once nothing is watched any more (callers may skip check_and_complete only while it is False)."""
    assert not purgatory.has_watched
    done = MockDelayedOperation(100_000)
    done.completable = True
    assert purgatory.try_complete_else_watch(done, ["k"])
    assert not purgatory.has_watched
    op = MockDelayedOperation(100_000)
    assert not purgatory.try_complete_else_watch(op, ["k"])
    assert purgatory.has_watched
    op.completable = True
    assert purgatory.check_and_complete("k") == 1
    assert purgatory.watch_keys_count() == 0
    assert purgatory.has_watched


def test_empty_key_list_is_rejected(purgatory: DelayedOperationPurgatory[MockDelayedOperation]) -> None:
    with pytest.raises(ValueError):
        purgatory.try_complete_else_watch(MockDelayedOperation(10), [])


def test_request_expiry(time: MockTime, purgatory: DelayedOperationPurgatory[MockDelayedOperation]) -> None:
    r1 = MockDelayedOperation(20)
    r2 = MockDelayedOperation(200_000)
    assert not purgatory.try_complete_else_watch(r1, ["test1"])
    assert not purgatory.try_complete_else_watch(r2, ["test2"])
    expire_due(time, purgatory, 19)
    assert not r1.is_completed()
    expire_due(time, purgatory, 1)
    assert r1.is_completed() and r1.expirations == 1 and r1.completions == 1
    assert not r2.is_completed()
    assert purgatory.num_delayed == 1
    # Expired op is stale on its watcher list until checked.
    assert purgatory.check_and_complete("test1") == 0
    assert purgatory.watched == 1


def test_request_purge(time: MockTime, purgatory: DelayedOperationPurgatory[MockDelayedOperation]) -> None:
    r1 = MockDelayedOperation(100_000)
    r2 = MockDelayedOperation(100_000)
    r3 = MockDelayedOperation(100_000)
    purgatory.try_complete_else_watch(r1, ["test1"])
    purgatory.try_complete_else_watch(r2, ["test1", "test2"])
    purgatory.try_complete_else_watch(r3, ["test1", "test2", "test3"])
    assert purgatory.num_delayed == 3
    assert purgatory.watched == 6
    r2.completable = True
    r2.try_complete()
    assert purgatory.num_delayed == 2
    r3.completable = True
    r3.try_complete()
    assert purgatory.num_delayed == 1
    purgatory.check_and_complete("test1")
    assert purgatory.watched == 4
    purgatory.check_and_complete("test2")
    assert purgatory.watched == 2
    purgatory.check_and_complete("test3")
    assert purgatory.watched == 1
    assert purgatory.watch_keys_count() == 1


def test_purge_interval_triggers_global_purge(time: MockTime) -> None:
    timer = SystemTimer("purge", time, start_ms=time.hi_res_clock_ms(), run_inline=True)
    p: DelayedOperationPurgatory[MockDelayedOperation] = DelayedOperationPurgatory(
        "purge", timer, purge_interval=10, reaper_enabled=False, time=time
    )
    try:
        ops = [MockDelayedOperation(100_000) for _ in range(30)]
        for i, op in enumerate(ops):
            p.try_complete_else_watch(op, [f"a{i}", f"b{i}"])
        for op in ops[:20]:
            op.completable = True
            op.try_complete()
        assert p.watched == 60 and p.num_delayed == 10
        p.advance_clock(0)
        # estimate (30) - delayed (10) > 10: every list is purged of the 20 completed ops.
        assert p.watched == 20
        assert p.watch_keys_count() == 20
        p.advance_clock(0)
        assert p.watched == 20
    finally:
        p.shutdown()


def test_below_purge_interval_nothing_is_purged(purgatory: DelayedOperationPurgatory[MockDelayedOperation]) -> None:
    ops = [MockDelayedOperation(100_000) for _ in range(5)]
    for op in ops:
        purgatory.try_complete_else_watch(op, ["k1", "k2"])
    for op in ops:
        op.completable = True
        op.try_complete()
    purgatory.advance_clock(0)
    assert purgatory.watched == 10


def test_cancel_for_key(purgatory: DelayedOperationPurgatory[MockDelayedOperation]) -> None:
    key = "key"
    r1 = MockDelayedOperation(100_000)
    r2 = MockDelayedOperation(100_000)
    purgatory.try_complete_else_watch(r1, [key])
    purgatory.try_complete_else_watch(r2, [key])
    purgatory.try_complete_else_watch(MockDelayedOperation(100_000), ["other"])
    cancelled = purgatory.cancel_for_key(key)
    assert cancelled == [r1, r2]
    assert purgatory.watched == 1 and purgatory.num_delayed == 1
    assert not r1.is_completed() and r1.completions == 0
    assert purgatory.cancel_for_key("nope") == []


def test_force_complete_exactly_once_and_cancels_timer(
    time: MockTime, purgatory: DelayedOperationPurgatory[MockDelayedOperation]
) -> None:
    op = MockDelayedOperation(50)
    purgatory.try_complete_else_watch(op, ["k"])
    assert purgatory.num_delayed == 1
    assert op.force_complete()
    assert not op.force_complete()
    assert purgatory.num_delayed == 0
    expire_due(time, purgatory, 100)
    assert op.completions == 1 and op.expirations == 0


def test_no_lost_wakeup_when_state_changes_between_checks(
    purgatory: DelayedOperationPurgatory[MockDelayedOperation],
) -> None:
    """The op becomes completable right after its first failed check: the second check catches it."""

    class FlipAfterFirstCheck(MockDelayedOperation):
        def try_complete(self) -> bool:
            done = super().try_complete()
            self.completable = True
            return done

    op = FlipAfterFirstCheck(100_000)
    assert purgatory.try_complete_else_watch(op, ["k"])
    assert op.try_calls == 2 and op.completions == 1
    assert purgatory.num_delayed == 0


def test_exactly_once_under_concurrent_checkers(purgatory: DelayedOperationPurgatory[MockDelayedOperation]) -> None:
    ops = [MockDelayedOperation(100_000) for _ in range(200)]
    keys = [f"k{i % 7}" for i in range(200)]
    for op, key in zip(ops, keys, strict=True):
        purgatory.try_complete_else_watch(op, [key, "all"])
    for op in ops:
        op.completable = True
    barrier = threading.Barrier(6)
    results: list[int] = []
    results_lock = threading.Lock()

    def checker(my_keys: list[str]) -> None:
        barrier.wait(timeout=30)
        n = 0
        for key in my_keys:
            n += purgatory.check_and_complete(key)
        # Also race force_complete directly against the checkers.
        for op in ops[::5]:
            if op.force_complete():
                n += 1
        with results_lock:
            results.append(n)

    threads = [
        threading.Thread(target=checker, args=([*sorted(set(keys)), "all"],)),
        threading.Thread(target=checker, args=(["all", *sorted(set(keys))],)),
        *[threading.Thread(target=checker, args=([f"k{j}", "all"],)) for j in range(4)],
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
        assert not t.is_alive()
    assert sum(results) == len(ops)
    assert all(op.completions == 1 for op in ops)
    assert purgatory.num_delayed == 0


def test_shared_lock_is_used_for_try_complete(purgatory: DelayedOperationPurgatory[MockDelayedOperation]) -> None:
    lock = threading.RLock()
    op = MockDelayedOperation(100_000, lock)
    purgatory.try_complete_else_watch(op, ["k"])
    held: list[bool] = []

    def check_in_other_thread() -> None:
        # With the lock held by the test thread, the checker must block, not complete.
        held.append(lock.acquire(blocking=False))

    with lock:
        t = threading.Thread(target=check_in_other_thread)
        t.start()
        t.join(timeout=10)
    assert held == [False]
    op.completable = True
    assert purgatory.check_and_complete("k") == 1


def test_reaper_thread_expires_operations() -> None:
    time = MockTime()
    done = threading.Event()

    class Op(MockDelayedOperation):
        def on_expiration(self) -> None:
            super().on_expiration()
            done.set()

    p: DelayedOperationPurgatory[MockDelayedOperation] = DelayedOperationPurgatory("reaped", time=time)
    try:
        op = Op(5)
        p.try_complete_else_watch(op, ["k"])
        time.sleep(10)
        p.timeout_timer.wakeup()
        assert done.wait(10)
        assert op.expirations == 1
    finally:
        p.shutdown()

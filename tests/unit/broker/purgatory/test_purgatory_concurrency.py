"""Exactly-once completion and no lost wakeup with the purgatory's cheap hot paths (inlined watch,
lock-free watch counter, per-op Lock or a shared RLock), under real thread races (no timing asserted)."""

from __future__ import annotations

import itertools
import sys
import threading
from collections.abc import Callable, Iterator

import pytest

from mini_broker.purgatory import DelayedOperation, DelayedOperationPurgatory
from mini_broker.purgatory.delayed_operation_purgatory import _WatchCounter
from mini_broker.timer import SystemTimer
from pykafka_client.utils.time import MockTime


class VersionedState:
    """A value that only grows; checkers bump it and then call check_and_complete."""

    def __init__(self) -> None:
        self.version = 0


class WaitForVersion(DelayedOperation):
    def __init__(self, delay_ms: int, state: VersionedState, needed: int, lock: threading.RLock | None = None) -> None:
        super().__init__(delay_ms, lock)
        self.state = state
        self.needed = needed
        self.completions = 0
        self.expirations = 0

    def try_complete(self) -> bool:
        if self.state.version >= self.needed:
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
def purgatory(time: MockTime) -> Iterator[DelayedOperationPurgatory[WaitForVersion]]:
    timer = SystemTimer("race", time, start_ms=time.hi_res_clock_ms(), run_inline=True)
    p: DelayedOperationPurgatory[WaitForVersion] = DelayedOperationPurgatory(
        "race", timer, reaper_enabled=False, time=time, purge_interval=50
    )
    yield p
    p.shutdown()


@pytest.fixture(autouse=True)
def frequent_thread_switches() -> Iterator[None]:
    """Switch threads every few bytecodes instead of every 5 ms, so that the races actually happen."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def run_threads(targets: list[Callable[[], None]]) -> None:
    barrier = threading.Barrier(len(targets))
    errors: list[BaseException] = []

    def wrap(target: Callable[[], None]) -> Callable[[], None]:
        def body() -> None:
            try:
                barrier.wait(timeout=30)
                target()
            except BaseException as e:  # surfaced below
                errors.append(e)

        return body

    threads = [threading.Thread(target=wrap(t)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
        assert not t.is_alive()
    assert errors == []


@pytest.mark.parametrize("shared_lock", [False, True])
def test_no_lost_wakeup_between_concurrent_watchers_and_checkers(
    purgatory: DelayedOperationPurgatory[WaitForVersion], shared_lock: bool
) -> None:
    """Watchers, checkers and the purge race: every op is either satisfied by its own checks or watched
    before the last bump's check_and_complete, so all complete exactly once (nothing expires: huge
    delay; no final sweep) and no entry is left in the timer. (The second check under the op lock is
    pinned deterministically by test_purgatory.py::test_no_lost_wakeup_when_state_changes_between_checks.)"""
    state = VersionedState()
    keys = [f"k{i}" for i in range(5)]
    rounds = 300
    final_version = rounds * 2 + 10
    group_lock = threading.RLock() if shared_lock else None
    ops: list[WaitForVersion] = []
    ops_lock = threading.Lock()

    def enqueuer(seed: int) -> None:
        for i in range(rounds):
            # Needs a version that the checker will reach (the final one at most), a little ahead of now.
            needed = min(state.version + 1 + (i + seed) % 3, final_version)
            op = WaitForVersion(10**9, state, needed=needed, lock=group_lock)
            with ops_lock:
                ops.append(op)
            purgatory.try_complete_else_watch(op, [keys[(i + seed) % 5], keys[(i * 3 + seed) % 5]])

    def checker() -> None:
        for _ in range(rounds * 2):
            state.version += 1  # only this thread writes
            for key in keys:
                purgatory.check_and_complete(key)
        state.version = final_version  # the last bump is followed by a check of every key, like every bump
        for key in keys:
            purgatory.check_and_complete(key)

    def purger() -> None:
        for _ in range(50):
            purgatory.advance_clock(0)

    run_threads([lambda: enqueuer(0), lambda: enqueuer(1), lambda: enqueuer(2), checker, purger])
    assert len(ops) == 3 * rounds
    assert [op.completions for op in ops] == [1] * len(ops)
    assert all(op.expirations == 0 for op in ops)
    assert purgatory.num_delayed == 0
    purgatory.purge_completed()
    assert purgatory.watched == 0 and purgatory.watch_keys_count() == 0


def test_exactly_once_when_expiry_races_completers(
    time: MockTime, purgatory: DelayedOperationPurgatory[WaitForVersion]
) -> None:
    state = VersionedState()
    ops = [WaitForVersion(1 + i % 20, state, needed=1) for i in range(600)]
    for i, op in enumerate(ops):
        assert not purgatory.try_complete_else_watch(op, [f"k{i % 4}"])
    won = [0] * 4

    def completer(n: int) -> None:
        for op in ops[n::2]:
            if op.force_complete():
                won[n] += 1

    def checker() -> None:
        state.version = 1
        for k in range(4):
            won[2] += purgatory.check_and_complete(f"k{k}")

    def expirer() -> None:
        for _ in range(25):
            time.sleep(1)
            purgatory.advance_clock(0)

    run_threads([lambda: completer(0), lambda: completer(1), checker, expirer])
    expired = sum(op.expirations for op in ops)
    assert [op.completions for op in ops] == [1] * len(ops)
    assert sum(won) + expired == len(ops)
    assert all(op.expirations <= 1 for op in ops)
    assert purgatory.num_delayed == 0


def test_watch_keys_may_be_any_iterable(purgatory: DelayedOperationPurgatory[WaitForVersion]) -> None:
    state = VersionedState()
    op = WaitForVersion(10**9, state, needed=1)
    assert not purgatory.try_complete_else_watch(op, (k for k in ["a", "b", "c"]))
    assert purgatory.watched == 3 and purgatory.watch_keys_count() == 3
    with pytest.raises(ValueError):
        purgatory.try_complete_else_watch(WaitForVersion(1, state, 1), iter(()))
    state.version = 1
    assert purgatory.check_and_complete("b") == 1
    assert op.completions == 1


def test_watch_counter_counts_concurrent_increments_and_resets() -> None:
    counter = _WatchCounter()
    assert counter.get() == 0 and counter.get() == 0  # reading does not count

    def bump() -> None:
        for _ in range(5000):
            counter.increment()

    def read() -> None:
        for _ in range(200):
            assert 0 <= counter.get() <= 15000

    run_threads([bump, bump, bump, read])
    assert counter.get() == 15000
    assert counter.get_and_set(7) == 15000
    assert counter.get() == 7
    counter.increment()
    assert counter.get_and_set(0) == 8 and counter.get() == 0


def test_purge_interval_uses_the_watch_counter(time: MockTime) -> None:
    timer = SystemTimer("purge", time, start_ms=time.hi_res_clock_ms(), run_inline=True)
    p: DelayedOperationPurgatory[WaitForVersion] = DelayedOperationPurgatory(
        "purge", timer, reaper_enabled=False, time=time, purge_interval=10
    )
    try:
        state = VersionedState()
        ops = [WaitForVersion(10**9, state, needed=1) for _ in range(11)]
        for op, key in zip(ops, itertools.cycle(["x", "y"]), strict=False):
            p.try_complete_else_watch(op, [key, "all"])
        for op in ops:
            op.force_complete()
        assert p.watched == 22
        p.advance_clock(0)  # 11 watched - 0 delayed > 10: purge
        assert p.watched == 0
    finally:
        p.shutdown()

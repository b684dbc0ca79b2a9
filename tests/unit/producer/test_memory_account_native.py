"""The kernel's ``MemoryAccount`` (a type that owns a buffer pool's free bytes) == the reference
``producer.buffer_pool.MemoryAccount``: over generated sequences of takes (with the lock held, as the pool's
allocations call them), takes for a waiter, returns and waiters joining and leaving, the same answers and free
bytes, and the same first waiter notified, with the lock held, on each return."""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.producer.buffer_pool import BufferPool, MemoryAccount, MemoryAccountApi, new_memory_account
from pykafka_client.protocol.records import _native
from pykafka_client.utils.time import MockTime

pytestmark = pytest.mark.skipif(not _native.native_available(), reason="the compiled record kernel is not built")

TOTAL = 100


class Waiter(threading.Condition):
    """A waiter's condition that counts its notifications, and those made without the lock (which notify refuses)."""

    def __init__(self, lock: threading.Lock, n: int) -> None:
        super().__init__(lock)
        self.lock = lock
        self.n = n
        self.notified = 0
        self.unlocked = 0

    def notify(self, n: int = 1) -> None:
        self.notified += 1
        if not self.lock.locked():
            self.unlocked += 1
        super().notify(n)


class Side:
    def __init__(self, native: bool) -> None:
        self.lock = threading.Lock()
        self.waiters: deque[threading.Condition] = deque()
        self.conds = [Waiter(self.lock, i) for i in range(3)]
        if native:
            kernel = _native.loaded_kernel()
            assert kernel is not None
            self.account: MemoryAccountApi = kernel.MemoryAccount(TOTAL, self.lock, self.waiters)
        else:
            self.account = MemoryAccount(TOTAL, self.lock, self.waiters)

    def apply(self, op: tuple[Any, ...]) -> object:
        name = op[0]
        if name == "take":
            with self.lock:
                return self.account.take(op[1])
        if name == "take_first":
            with self.lock:
                return self.account.take_first(self.conds[op[1]], op[2])
        if name == "give":
            self.account.give(op[1])
            return None
        if name == "join":
            if self.conds[op[1]] not in self.waiters:
                self.waiters.append(self.conds[op[1]])
            return None
        if self.conds[op[1]] in self.waiters:  # leave
            self.waiters.remove(self.conds[op[1]])
        return None

    def state(self) -> tuple[int, list[int], list[int], int]:
        return (
            self.account.available(), [c.notified for c in self.conds], [c.n for c in self.waiters],  # type: ignore[attr-defined]  # (Waiter's)
            sum(c.unlocked for c in self.conds),
        )


sizes = st.integers(0, TOTAL + 20)
ops = st.one_of(
    st.tuples(st.just("take"), sizes),
    st.tuples(st.just("take_first"), st.integers(0, 2), sizes),
    st.tuples(st.just("give"), sizes),
    st.tuples(st.just("join"), st.integers(0, 2)),
    st.tuples(st.just("leave"), st.integers(0, 2)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(ops, max_size=40))
def test_the_kernel_account_answers_as_the_reference(sequence: list[tuple[Any, ...]]) -> None:
    reference, compiled = Side(False), Side(True)
    for op in sequence:
        assert compiled.apply(op) == reference.apply(op), op
        assert compiled.state() == reference.state(), op
    assert compiled.state()[3] == 0
    assert compiled.account.total == reference.account.total == TOTAL


def test_a_pool_uses_the_kernel_account_with_the_kernel_on() -> None:
    kernel = _native.loaded_kernel()
    assert kernel is not None
    previous = _native.use_native(True)
    try:
        assert type(BufferPool(10, MockTime()).account) is kernel.MemoryAccount
        _native.use_native(False)
        assert type(BufferPool(10, MockTime()).account) is MemoryAccount
        assert type(new_memory_account(10, threading.Lock(), deque())) is MemoryAccount
    finally:
        _native.use_native(previous)


def test_a_blocked_allocation_is_woken_by_the_kernel_account_s_return() -> None:
    """A thread waiting in allocate takes the memory a deallocate returns (the MockTime never moves)."""
    previous = _native.use_native(True)
    try:
        pool = BufferPool(100, MockTime())
    finally:
        _native.use_native(previous)
    pool.allocate(100, 0)
    done = threading.Event()

    def worker() -> None:
        pool.allocate(60, 60_000)
        done.set()

    t = threading.Thread(target=worker)
    t.start()
    while pool.queued() != 1:
        done.wait(0.001)
    pool.deallocate(100)
    assert done.wait(30.0)
    t.join(30.0)
    assert pool.available_memory() == 40 and pool.queued() == 0

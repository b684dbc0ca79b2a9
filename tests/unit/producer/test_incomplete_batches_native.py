"""The kernel's ``IncompleteBatches`` (a type that owns the producer's incomplete batches) == the reference
``producer.incomplete_batches.IncompleteBatches``: over generated sequences of adds, split pieces, removals, marks
and reads, the same answers (the batches in the same order, the same tickets and marks), and the condition notified
exactly when a removal leaves none incomplete, under its lock, so a flush waiting on it wakes."""

from __future__ import annotations

import threading
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.producer.incomplete_batches import (
    IncompleteBatches,
    IncompleteBatchesApi,
    await_completion,
    new_incomplete_batches,
)
from pykafka_client.protocol.records import _native
from pykafka_client.utils.time import SystemTime

pytestmark = pytest.mark.skipif(not _native.native_available(), reason="the compiled record kernel is not built")

POOL = 6


class Batch:
    """A stand-in for a ProducerBatch: hashed and compared by identity, as a ProducerBatch is."""

    __slots__ = ("n",)

    def __init__(self, n: int) -> None:
        self.n = n


class CountingCondition(threading.Condition):
    """Counts notify_all calls, and whether the lock was held at each."""

    def __init__(self) -> None:
        self.held = threading.Lock()  # (the one thread of the test: locked means held by it)
        super().__init__(self.held)
        self.notified = 0
        self.unlocked_notifies = 0

    def notify_all(self) -> None:
        self.notified += 1
        if not self.held.locked():
            self.unlocked_notifies += 1
        super().notify_all()


def native(condition: threading.Condition) -> IncompleteBatchesApi:
    kernel = _native.loaded_kernel()
    assert kernel is not None
    result: IncompleteBatchesApi = kernel.IncompleteBatches(condition)
    return result


ops = st.one_of(
    st.tuples(st.just("add"), st.integers(0, POOL - 1)),
    st.tuples(st.just("add_pieces"), st.integers(0, POOL - 1), st.lists(st.integers(0, POOL - 1), max_size=4)),
    st.tuples(st.just("remove"), st.integers(0, POOL - 1)),
    st.tuples(st.just("is_empty")),
    st.tuples(st.just("copy_all")),
    st.tuples(st.just("mark")),
    st.tuples(st.just("oldest_ticket")),
)


def apply(s: IncompleteBatchesApi, batches: list[Any], op: tuple[Any, ...]) -> object:
    name = op[0]
    if name == "add":
        s.add(batches[op[1]])
        return None
    if name == "add_pieces":
        s.add_pieces(batches[op[1]], (batches[i] for i in op[2]))  # any iterable, as split_into's list
        return None
    if name == "remove":
        s.remove(batches[op[1]])
        return None
    if name == "copy_all":
        return [cast(Batch, b).n for b in s.copy_all()]
    if name == "oldest_ticket":
        with s.condition:
            return s.oldest_ticket()
    return getattr(s, name)()


@settings(max_examples=300, deadline=None)
@given(st.lists(ops, max_size=40))
def test_the_kernel_set_answers_as_the_reference(sequence: list[tuple[Any, ...]]) -> None:
    batches: list[Any] = [Batch(i) for i in range(POOL)]
    reference = IncompleteBatches()
    condition = CountingCondition()
    compiled = native(condition)
    emptied = 0
    for op in sequence:
        assert apply(compiled, batches, op) == apply(reference, batches, op), op
        if op[0] == "remove" and reference.is_empty():
            emptied += 1
    assert [cast(Batch, b).n for b in compiled.copy_all()] == [cast(Batch, b).n for b in reference.copy_all()]
    assert compiled.mark() == reference.mark()
    assert condition.notified == emptied
    assert condition.unlocked_notifies == 0


def test_the_accumulator_set_is_the_kernel_type_with_the_kernel_on() -> None:
    kernel = _native.loaded_kernel()
    assert kernel is not None
    previous = _native.use_native(True)
    try:
        assert type(new_incomplete_batches()) is kernel.IncompleteBatches
        _native.use_native(False)
        assert type(new_incomplete_batches()) is IncompleteBatches
    finally:
        _native.use_native(previous)


class ObservedCondition(threading.Condition):
    """Reports when a waiter is inside wait() (its lock about to be released) and what each wait returned."""

    def __init__(self) -> None:
        super().__init__(threading.Lock())
        self.waiting = threading.Event()
        self.returns: list[bool] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waiting.set()
        notified = super().wait(timeout)
        self.returns.append(notified)
        return notified


def test_a_waiting_flush_is_woken_by_the_last_removal() -> None:
    condition = ObservedCondition()
    s = native(condition)
    a: Any = Batch(0)
    b: Any = Batch(1)
    s.add(a)
    s.add(b)
    mark = s.mark()
    done: list[bool] = []
    waiter = threading.Thread(target=lambda: done.append(await_completion(s, mark, 30.0, SystemTime())))
    waiter.start()
    assert condition.waiting.wait(30.0)
    s.remove(a)  # one left: no notification (the waiter may time out a slice of 0.5 s and wait again meanwhile)
    s.remove(b)  # takes the condition's lock: only once the waiter is inside wait(), so the notification reaches it
    waiter.join(30.0)
    assert done == [True]
    assert condition.returns[-1] is True  # woken by the notification, not by the wait's timeout

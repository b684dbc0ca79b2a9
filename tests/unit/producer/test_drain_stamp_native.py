"""The kernel's ``DrainStamp`` (``records/kernel/sender_send_round.c.h``: ``IdempotenceManager.prepare_for_drain``'s
common case without its frames, the Sender round's drain step) against its reference, ``prepare_for_drain``: the
same scenarios as test_idempotence_manager's (transactional or not, no producer id, an invalid one, a fatal error,
sequences near the wrap, batches in flight, epoch bumps, unresolved sequences, retried batches), the same answer and
the same batch, sequences and in-flight order after; what it declines, and that the lock is released."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings

from pykafka_client.producer.idempotence_manager import IdempotenceManager
from pykafka_client.producer.transaction_manager import TransactionManager
from pykafka_client.protocol.records import _native
from tests.unit.producer.test_idempotence_manager import TP, Scenario, batch, build, observe, scenarios

kernel = _native.loaded_kernel()
pytestmark = pytest.mark.skipif(kernel is None, reason="the compiled record kernel is not built")


def _stamp(tm: IdempotenceManager) -> Any:
    assert kernel is not None
    parts = tm.drain_parts()
    assert parts is not None
    return kernel.DrainStamp(tm, IdempotenceManager.prepare_for_drain, parts)


@settings(max_examples=500, deadline=None)
@given(scenarios)
def test_the_stamp_does_what_prepare_for_drain_does(s: Scenario) -> None:
    tm, first, in_flight = build(s)
    expected = tm.prepare_for_drain(first, TP)
    tm2, first2, in_flight2 = build(s)
    assert _stamp(tm2)(first2, TP) is expected
    assert observe(tm2, first2, in_flight2) == observe(tm, first, in_flight)
    assert tm2.lock.acquire(blocking=False)  # released (an RLock: not held by another thread)
    tm2.lock.release()


def test_a_second_new_batch_follows_the_first() -> None:
    tm, _, _ = build(Scenario(False, False, "ready", 5, (), "none", False, -1, 2))
    stamp = _stamp(tm)
    a, b = batch(2), batch(3)
    assert stamp(a, TP) and stamp(b, TP)
    assert (a.base_sequence, b.base_sequence, tm.sequence_number(TP)) == (5, 7, 10)
    in_flight = tm._partitions[TP].in_flight
    assert len(in_flight) == 2 and in_flight[0] is a and in_flight[1] is b


def test_an_override_has_no_parts_and_an_error_releases_the_lock() -> None:
    class Own(TransactionManager):
        def prepare_for_drain(self, batch: Any, tp: Any) -> bool:
            return False

    assert Own().drain_parts() is None
    tm, first, _ = build(Scenario(False, False, "ready", 0, (), "none", False, -1, 1))
    stamp = _stamp(tm)
    with pytest.raises(TypeError):
        stamp(first)
    with pytest.raises(AttributeError):
        stamp(object(), TP)  # (not a batch: no base_sequence)
    assert tm.lock.acquire(blocking=False)
    tm.lock.release()

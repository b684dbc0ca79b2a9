"""DelayedProduce: pending partitions start as REQUEST_TIMED_OUT, complete when the HW reaches them."""

from __future__ import annotations

from collections.abc import Hashable

from mini_broker.server.delayed_produce import DelayedProduce, ProducePartitionStatus

TIMED_OUT = 7


def test_completes_when_every_partition_is_replicated() -> None:
    hw = {"a": 0, "b": 0}
    done: list[dict[Hashable, ProducePartitionStatus]] = []
    statuses: dict[Hashable, ProducePartitionStatus] = {
        "a": ProducePartitionStatus(5, 0, False),
        "b": ProducePartitionStatus(3, 0, False),
        "c": ProducePartitionStatus(0, 3, False),  # failed at append: not pending
    }
    op = DelayedProduce(1000, statuses, lambda tp, off: (hw[str(tp)] >= off, 0), done.append)
    assert statuses["a"].error_code == TIMED_OUT and statuses["a"].acks_pending
    assert not statuses["c"].acks_pending and statuses["c"].error_code == 3
    assert not op.try_complete()
    hw["a"] = 5
    assert not op.try_complete() and not done
    hw["b"] = 3
    assert op.try_complete()
    assert [s.error_code for s in done[0].values()] == [0, 0, 3]
    assert not op.try_complete()  # exactly once


def test_partition_gone_completes_with_its_error() -> None:
    done: list[dict[Hashable, ProducePartitionStatus]] = []
    statuses: dict[Hashable, ProducePartitionStatus] = {"a": ProducePartitionStatus(1, 0, False)}
    op = DelayedProduce(1000, statuses, lambda tp, off: (False, 3), done.append)
    assert op.try_complete()
    assert done[0]["a"].error_code == 3


def test_expiry_answers_request_timed_out() -> None:
    done: list[dict[Hashable, ProducePartitionStatus]] = []
    statuses: dict[Hashable, ProducePartitionStatus] = {"a": ProducePartitionStatus(1, 0, False)}
    op = DelayedProduce(1000, statuses, lambda tp, off: (False, 0), done.append)
    op.run()  # the timer fires
    assert done[0]["a"].error_code == TIMED_OUT

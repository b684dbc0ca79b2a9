"""The share-partition state machine (sans-IO, time from MockTime)."""

from __future__ import annotations

import pytest

from mini_broker.share.share_partition import (
    AcknowledgeType,
    AcquiredRange,
    InvalidRecordState,
    RecordState,
    SharePartition,
)
from pykafka_client.utils.time import MockTime

LOCK_MS = 1000


def _partition(limit: int = 3, start: int = 0, max_in_flight: int = 2000) -> SharePartition:
    sp = SharePartition(LOCK_MS, limit, max_in_flight)
    sp.initialize(start)
    return sp


def test_acquire_hands_out_new_offsets_with_a_lock_and_an_owner() -> None:
    time = MockTime()
    sp = _partition()
    assert sp.acquire("a", [(0, 4)], 500, time.milliseconds()) == [AcquiredRange(0, 4, 1)]
    rec = sp.record(2)
    assert rec is not None and rec.state is RecordState.ACQUIRED and rec.owner == "a"
    assert rec.lock_deadline_ms == time.milliseconds() + LOCK_MS
    assert (sp.start_offset, sp.end_offset) == (0, 5)
    # another member reading the same batch gets nothing: every offset is acquired
    assert sp.acquire("b", [(0, 4)], 500, time.milliseconds()) == []
    assert sp.next_fetch_offset() == 5


def test_acquire_takes_whole_batches_and_stops_at_max_records() -> None:
    sp = _partition()
    assert sp.acquire("a", [(0, 2), (3, 5)], 2, 0) == [AcquiredRange(0, 2, 1)]
    assert sp.end_offset == 3


def test_acquire_stops_at_the_in_flight_limit() -> None:
    sp = _partition(max_in_flight=3)
    assert sp.acquire("a", [(0, 9)], 500, 0) == [AcquiredRange(0, 2, 1)]
    assert not sp.can_acquire()
    sp.acknowledge("a", 1, 1, [AcknowledgeType.RELEASE])
    assert sp.can_acquire()  # a released record is available again
    sp.acknowledge("a", 0, 0, [AcknowledgeType.ACCEPT])
    assert sp.acquire("b", [(1, 9)], 500, 0) == [AcquiredRange(1, 1, 2), AcquiredRange(3, 3, 1)]


def test_a_gap_before_a_batch_is_archived_and_passed_by_the_start_offset() -> None:
    sp = _partition()
    assert sp.acquire("a", [(3, 4)], 500, 0) == [AcquiredRange(3, 4, 1)]
    assert sp.start_offset == 3


def test_skipped_offsets_are_archived_and_never_handed_out() -> None:
    sp = _partition()
    sp.acquire("a", [(0, 1)], 500, 0)
    sp.skip(0, 3)  # a control batch after the records: only the offsets not yet in flight are archived
    assert (sp.start_offset, sp.end_offset) == (0, 4)
    sp.acknowledge("a", 0, 1, [AcknowledgeType.ACCEPT])
    assert sp.start_offset == 4
    assert sp.acquire("b", [(2, 3)], 500, 0) == []


def test_accept_acknowledges_and_advances_the_start_offset() -> None:
    sp = _partition()
    sp.acquire("a", [(0, 4)], 500, 0)
    sp.acknowledge("a", 0, 1, [AcknowledgeType.ACCEPT])
    assert sp.start_offset == 2
    sp.acknowledge("a", 3, 4, [AcknowledgeType.ACCEPT])
    assert sp.start_offset == 2  # offset 2 still acquired
    rec = sp.record(3)
    assert rec is not None and rec.state is RecordState.ACKNOWLEDGED
    sp.acknowledge("a", 2, 2, [AcknowledgeType.ACCEPT])
    assert (sp.start_offset, sp.end_offset) == (5, 5)
    assert sp.record(3) is None


def test_release_makes_a_record_available_again_and_its_redelivery_counts() -> None:
    sp = _partition()
    sp.acquire("a", [(0, 1)], 500, 0)
    sp.acknowledge("a", 0, 1, [AcknowledgeType.RELEASE, AcknowledgeType.ACCEPT])
    rec = sp.record(0)
    assert rec is not None and rec.state is RecordState.AVAILABLE and rec.owner is None
    assert sp.next_fetch_offset() == 0
    assert sp.acquire("b", [(0, 1)], 500, 0) == [AcquiredRange(0, 0, 2)]


def test_reject_archives_a_record_for_good() -> None:
    sp = _partition()
    sp.acquire("a", [(0, 1)], 500, 0)
    sp.acknowledge("a", 0, 0, [AcknowledgeType.REJECT])
    assert sp.start_offset == 1
    assert sp.acquire("b", [(0, 1)], 500, 0) == []


def test_only_the_owner_may_acknowledge_and_a_failed_batch_changes_nothing() -> None:
    sp = _partition()
    sp.acquire("a", [(0, 1)], 500, 0)
    sp.acquire("b", [(2, 2)], 500, 0)
    with pytest.raises(InvalidRecordState, match="offset 2 is acquired by b"):
        sp.acknowledge("a", 0, 2, [AcknowledgeType.ACCEPT])
    assert sp.start_offset == 0
    rec = sp.record(0)
    assert rec is not None and rec.state is RecordState.ACQUIRED
    with pytest.raises(InvalidRecordState, match="not in flight"):
        sp.acknowledge("a", 7, 7, [AcknowledgeType.ACCEPT])
    with pytest.raises(InvalidRecordState, match="types"):
        sp.acknowledge("a", 0, 1, [AcknowledgeType.ACCEPT] * 3)


def test_an_expired_lock_makes_the_record_available_to_another_member() -> None:
    time = MockTime()
    sp = _partition()
    sp.acquire("a", [(0, 2)], 500, time.milliseconds())
    assert sp.next_lock_deadline() == time.milliseconds() + LOCK_MS
    time.sleep(LOCK_MS - 1)
    assert sp.expire_locks(time.milliseconds()) == 0
    time.sleep(1)
    assert sp.expire_locks(time.milliseconds()) == 3
    assert sp.next_lock_deadline() is None
    with pytest.raises(InvalidRecordState):
        sp.acknowledge("a", 0, 0, [AcknowledgeType.ACCEPT])  # too late: the lock is gone
    assert sp.acquire("b", [(0, 2)], 500, time.milliseconds()) == [AcquiredRange(0, 2, 2)]


def test_release_member_frees_what_a_closing_member_holds() -> None:
    sp = _partition()
    sp.acquire("a", [(0, 1)], 500, 0)
    sp.acquire("b", [(2, 3)], 500, 0)
    assert sp.release_member("a") == 2
    assert sp.next_fetch_offset() == 0
    rec = sp.record(2)
    assert rec is not None and rec.owner == "b"


def test_a_record_is_archived_at_the_delivery_count_limit() -> None:
    time = MockTime()
    sp = _partition(limit=2)
    sp.acquire("a", [(0, 0)], 500, time.milliseconds())
    sp.acknowledge("a", 0, 0, [AcknowledgeType.RELEASE])
    assert sp.acquire("a", [(0, 0)], 500, time.milliseconds()) == [AcquiredRange(0, 0, 2)]
    time.sleep(LOCK_MS)
    sp.expire_locks(time.milliseconds())  # the second delivery's lock expires: the limit is reached
    assert sp.record(0) is None and sp.start_offset == 1
    assert sp.acquire("a", [(0, 0)], 500, time.milliseconds()) == []


def test_the_log_start_offset_moving_up_forgets_what_it_passes() -> None:
    sp = _partition()
    sp.acquire("a", [(0, 4)], 500, 0)
    sp.advance_start(3)
    assert (sp.start_offset, sp.end_offset) == (3, 5)
    assert sp.record(1) is None
    sp.advance_start(8)
    assert (sp.start_offset, sp.end_offset) == (8, 8)
    assert sp.acquire("a", [(8, 8)], 500, 0) == [AcquiredRange(8, 8, 1)]


def test_ranges_split_where_delivery_counts_differ() -> None:
    sp = _partition()
    sp.acquire("a", [(0, 2)], 500, 0)
    sp.acknowledge("a", 0, 2, [AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.ACCEPT])
    assert sp.acquire("b", [(0, 5)], 500, 0) == [AcquiredRange(1, 1, 2), AcquiredRange(3, 5, 1)]


def test_the_state_is_plain_data_that_a_new_machine_resumes_from() -> None:
    sp = _partition(start=10)
    sp.acquire("a", [(10, 12)], 500, 0)
    sp.acknowledge("a", 10, 10, [AcknowledgeType.ACCEPT])
    resumed = SharePartition(LOCK_MS, 3, state=sp.state)
    assert (resumed.start_offset, resumed.end_offset) == (11, 13)
    resumed.acknowledge("a", 11, 12, [AcknowledgeType.ACCEPT])
    assert resumed.start_offset == 13


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="must be positive"):
        SharePartition(0, 5)

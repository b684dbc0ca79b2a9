"""Share sessions and the share partitions behind ShareFetch / ShareAcknowledge (MockTime, no reaper thread)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from mini_broker.share.config import ShareGroupConfig
from mini_broker.share.partition_manager import AckBatch, SessionError, SharePartitionManager
from mini_broker.share.share_partition import AcquiredRange
from pykafka_client.errors import (
    InvalidRecordStateError,
    InvalidRequestError,
    InvalidShareSessionEpochError,
    ShareSessionNotFoundError,
)
from pykafka_client.utils.time import MockTime

TP = (uuid.UUID(int=7), 0)
LOCK_MS = 500


def _manager(time: MockTime, **conf: Any) -> SharePartitionManager:
    return SharePartitionManager(ShareGroupConfig(record_lock_duration_ms=LOCK_MS, **conf), time,
                                 reaper_enabled=False)


def test_a_session_opens_at_epoch_0_and_then_takes_each_next_epoch() -> None:
    mgr = _manager(MockTime())
    assert mgr.session("g", "m", 0, [TP]).epoch == 1
    assert list(mgr.session("g", "m", 1, []).partitions) == [TP]
    with pytest.raises(SessionError) as stale:
        mgr.session("g", "m", 1, [])
    assert stale.value.code == InvalidShareSessionEpochError.code
    assert mgr.session("g", "m", 2, [], forgotten=[TP]).partitions == {}
    with pytest.raises(SessionError) as missing:
        mgr.session("g", "other", 3, [])
    assert missing.value.code == ShareSessionNotFoundError.code
    mgr.close_session("g", "m")
    assert mgr.session_count() == 0
    mgr.shutdown()


def test_the_session_limit_is_enforced() -> None:
    mgr = _manager(MockTime(), max_share_sessions=1)
    mgr.session("g", "a", 0, [])
    with pytest.raises(SessionError, match=r"group\.share\.max\.share\.sessions"):
        mgr.session("g", "b", 0, [])
    mgr.shutdown()


def test_a_new_partition_starts_at_the_reset_offset_and_skips_what_the_log_dropped() -> None:
    mgr = _manager(MockTime())
    assert mgr.fetch_offset("g", TP, lambda: 40, log_start_offset=10) == 40
    assert mgr.fetch_offset("g", TP, lambda: 99, log_start_offset=45) == 45
    assert mgr.partition_offsets("g", TP) == (45, 45)
    mgr.shutdown()


def test_a_partition_at_its_in_flight_limit_has_no_fetch_offset() -> None:
    mgr = _manager(MockTime(), partition_max_record_locks=2)
    assert mgr.fetch_offset("g", TP, lambda: 0, 0) == 0
    mgr.acquire("g", "a", TP, [(0, 4, False)], 10)
    assert mgr.fetch_offset("g", TP, lambda: 0, 0) is None
    mgr.acknowledge("g", "a", TP, [AckBatch(0, 0, (1,))])
    assert mgr.fetch_offset("g", TP, lambda: 0, 0) == 2
    mgr.shutdown()


def test_acquired_records_return_when_the_lock_timer_fires() -> None:
    time = MockTime()
    mgr = _manager(time)
    mgr.fetch_offset("g", TP, lambda: 0, 0)
    assert mgr.acquire("g", "a", TP, [(0, 2, False), (3, 3, True)], 10) == [AcquiredRange(0, 2, 1)]
    assert mgr.partition_offsets("g", TP) == (0, 4)  # the control batch is passed
    assert mgr.acquire("g", "b", TP, [(0, 2, False)], 10) == []
    time.sleep(LOCK_MS)
    mgr.advance_timer()
    assert mgr.acquire("g", "b", TP, [(0, 2, False)], 10) == [AcquiredRange(0, 2, 2)]
    mgr.shutdown()


def test_acknowledgements_and_their_errors() -> None:
    mgr = _manager(MockTime())
    mgr.fetch_offset("g", TP, lambda: 0, 0)
    mgr.acquire("g", "a", TP, [(0, 3, False)], 10)
    assert mgr.acknowledge("g", "a", TP, [AckBatch(0, 1, (1,))]) == (0, None)
    assert mgr.partition_offsets("g", TP) == (2, 4)
    code, message = mgr.acknowledge("g", "b", TP, [AckBatch(2, 2, (1,))])
    assert code == InvalidRecordStateError.code and "not acquired by member b" in (message or "")
    assert mgr.acknowledge("g", "a", TP, [AckBatch(2, 2, (9,))])[0] == InvalidRequestError.code
    assert mgr.acknowledge("other", "a", TP, [AckBatch(2, 2, (1,))])[0] == InvalidRecordStateError.code
    mgr.shutdown()


def test_closing_a_session_releases_what_the_member_holds() -> None:
    mgr = _manager(MockTime())
    mgr.session("g", "a", 0, [TP])
    mgr.fetch_offset("g", TP, lambda: 0, 0)
    mgr.acquire("g", "a", TP, [(0, 1, False)], 10)
    assert mgr.close_session("g", "a") == 2
    assert mgr.acquire("g", "b", TP, [(0, 1, False)], 10) == [AcquiredRange(0, 1, 2)]
    mgr.shutdown()


def test_reopening_a_session_releases_the_old_one() -> None:
    mgr = _manager(MockTime())
    mgr.session("g", "a", 0, [TP])
    mgr.fetch_offset("g", TP, lambda: 0, 0)
    mgr.acquire("g", "a", TP, [(0, 0, False)], 10)
    mgr.session("g", "a", 0, [TP])
    assert mgr.acquire("g", "b", TP, [(0, 0, False)], 10) == [AcquiredRange(0, 0, 2)]
    mgr.shutdown()


def test_one_expiry_check_per_partition_follows_the_next_lock_deadline() -> None:
    time = MockTime()
    mgr = _manager(time)
    mgr.fetch_offset("g", TP, lambda: 0, 0)
    mgr.acquire("g", "a", TP, [(0, 0, False)], 10)
    time.sleep(300)
    mgr.acquire("g", "a", TP, [(1, 1, False)], 10)  # its deadline is later: no second check is scheduled
    assert mgr.timer.size() == 1
    time.sleep(LOCK_MS - 300)
    mgr.advance_timer()
    assert mgr.acquire("g", "b", TP, [(0, 1, False)], 10) == [AcquiredRange(0, 0, 2)]
    time.sleep(300)
    mgr.advance_timer()
    assert mgr.acquire("g", "c", TP, [(1, 1, False)], 10) == [AcquiredRange(1, 1, 2)]
    mgr.shutdown()


def test_deleting_a_group_forgets_its_partitions_and_sessions_only() -> None:
    mgr = _manager(MockTime())
    mgr.session("g", "m", 0, [TP])
    mgr.session("other", "m", 0, [TP])
    assert mgr.fetch_offset("g", TP, lambda: 40, log_start_offset=0) == 40
    assert mgr.fetch_offset("other", TP, lambda: 7, log_start_offset=0) == 7
    mgr.delete_group("g")
    assert mgr.partition_offsets("g", TP) is None
    assert mgr.partition_offsets("other", TP) == (7, 7)
    assert mgr.session_count() == 1
    # a group created again under the id starts its partition at the reset offset
    assert mgr.fetch_offset("g", TP, lambda: 90, log_start_offset=0) == 90
    mgr.shutdown()


def test_parked_fetches_are_told_when_records_may_have_become_acquirable() -> None:
    time = MockTime()
    told: list[tuple[str, tuple[uuid.UUID, int]]] = []
    mgr = SharePartitionManager(ShareGroupConfig(record_lock_duration_ms=LOCK_MS), time,
                                reaper_enabled=False, on_records_available=lambda g, tp: told.append((g, tp)))
    mgr.session("g", "a", 0, [TP])
    mgr.fetch_offset("g", TP, lambda: 0, 0)
    mgr.acquire("g", "a", TP, [(0, 3, False)], 10)
    assert mgr.next_fetch_offset("g", TP) == 4 and told == []
    mgr.acknowledge("g", "a", TP, [AckBatch(0, 0, (2,))])  # released
    assert told == [("g", TP)] and mgr.next_fetch_offset("g", TP) == 0
    time.sleep(LOCK_MS)
    mgr.advance_timer()  # 1..3 expire
    assert told == [("g", TP)] * 2
    mgr.acquire("g", "a", TP, [(0, 3, False)], 10)
    mgr.close_session("g", "a")
    assert told == [("g", TP)] * 3
    assert mgr.next_fetch_offset("g", TP) == 0
    mgr.shutdown()


def test_a_closed_connection_ends_the_sessions_it_opened_only() -> None:
    clock = MockTime()
    mgr = _manager(clock)
    mgr.session("g", "a", 0, [TP], connection_id="conn-1")
    mgr.session("g", "b", 0, [TP], connection_id="conn-2")
    mgr.fetch_offset("g", TP, lambda: 0, 0)
    mgr.acquire("g", "a", TP, [(0, 1, False)], 10)
    mgr.acquire("g", "b", TP, [(2, 2, False)], 10)
    mgr.on_connection_closed("conn-1")
    assert mgr.session_count() == 2  # not on the caller's (a network processor's) thread
    clock.sleep(1)
    mgr.advance_timer()
    assert mgr.session_count() == 1
    with pytest.raises(SessionError) as gone:
        mgr.session("g", "a", 1, [])
    assert gone.value.code == ShareSessionNotFoundError.code
    assert mgr.session("g", "b", 1, []).connection_id == "conn-2"
    assert mgr.acquire("g", "c", TP, [(0, 2, False)], 10) == [AcquiredRange(0, 1, 2)]  # b keeps offset 2
    mgr.shutdown()

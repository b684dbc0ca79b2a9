"""Share-partition state in ``__share_group_state`` (issue #25 item 3): the snapshot codec, the share
coordinator's replay of its log, and a SharePartitionManager rebuilt from it as a restarted broker would be
(MockTime, no reaper thread, a real log in a temporary dir)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from mini_broker.share.config import ShareGroupConfig
from mini_broker.share.partition_manager import AckBatch, SharePartitionManager
from mini_broker.share.share_coordinator import (
    ShareCoordinator,
    read_snapshot_value,
    replay,
    snapshot_value,
    state_batches,
    state_key,
)
from mini_broker.share.share_partition import AcknowledgeType, InFlightRecord, RecordState, ShareState
from pykafka_client.errors import MessageDecodeError
from pykafka_client.utils.time import MockTime

TP = (uuid.UUID(int=7), 0)
KEY = ("g", *TP)
LOCK_MS = 500
ACCEPT, RELEASE, REJECT = (int(AcknowledgeType.ACCEPT), int(AcknowledgeType.RELEASE), int(AcknowledgeType.REJECT))


def _state() -> ShareState:
    records = {10: InFlightRecord(RecordState.ACKNOWLEDGED, 1), 11: InFlightRecord(RecordState.ACKNOWLEDGED, 1),
               12: InFlightRecord(RecordState.ACQUIRED, 2, "m", 1234), 13: InFlightRecord(RecordState.ARCHIVED, 5),
               14: InFlightRecord(RecordState.AVAILABLE, 1)}
    return ShareState(10, 15, records)


def test_a_snapshot_keeps_start_offset_states_and_counts_and_drops_acquisition_locks() -> None:
    state = _state()
    assert state_batches(state) == [(10, 11, RecordState.ACKNOWLEDGED, 1), (12, 12, RecordState.AVAILABLE, 2),
                                    (13, 13, RecordState.ARCHIVED, 5), (14, 14, RecordState.AVAILABLE, 1)]
    back = read_snapshot_value(snapshot_value(state))
    assert (back.start_offset, back.end_offset) == (10, 15)
    assert back.records[12] == InFlightRecord(RecordState.AVAILABLE, 2)  # no owner, no lock deadline
    assert back.records[13] == InFlightRecord(RecordState.ARCHIVED, 5)
    assert back.records[10].state is RecordState.ACKNOWLEDGED
    empty = read_snapshot_value(snapshot_value(ShareState(7, 7, {})))
    assert (empty.start_offset, empty.end_offset, empty.records) == (7, 7, {})


def test_replay_keeps_the_last_snapshot_of_each_partition_and_a_tombstone_removes_it() -> None:
    other = ("g2", *TP)
    records: list[tuple[bytes, bytes | None]] = [
        (state_key(KEY), snapshot_value(ShareState(0, 0, {}))), (state_key(other), snapshot_value(_state())),
        (state_key(KEY), snapshot_value(ShareState(3, 3, {}))), (state_key(other), None)]
    states = replay(records)
    assert list(states) == [KEY]
    assert states[KEY].start_offset == 3


def test_a_value_of_an_unknown_version_does_not_parse() -> None:
    with pytest.raises(MessageDecodeError, match="value version"):
        read_snapshot_value(b"\x00\x09" + snapshot_value(ShareState(0, 0, {}))[2:])


def _manager(time: MockTime, coordinator: ShareCoordinator | None) -> SharePartitionManager:
    return SharePartitionManager(ShareGroupConfig(record_lock_duration_ms=LOCK_MS), time, reaper_enabled=False,
                                 persister=coordinator)


def _restart(data_dir: Path, time: MockTime) -> tuple[ShareCoordinator, SharePartitionManager]:
    """A broker started on ``data_dir``; the one before it was killed (its log neither flushed nor closed)."""
    coordinator = ShareCoordinator(str(data_dir), time)
    coordinator.startup()
    return coordinator, _manager(time, coordinator)


def test_a_restarted_manager_redelivers_released_and_acquired_records_but_never_accepted_ones(tmp_path: Path) -> None:
    time = MockTime()
    coordinator, mgr = _restart(tmp_path, time)
    assert mgr.fetch_offset("g", TP, lambda: 0, log_start_offset=0) == 0
    got = mgr.acquire("g", "m", TP, [(0, 5, False)], max_records=10)
    assert [(r.first_offset, r.last_offset, r.delivery_count) for r in got] == [(0, 5, 1)]
    code, _ = mgr.acknowledge("g", "m", TP, [AckBatch(0, 1, (ACCEPT,)), AckBatch(2, 2, (RELEASE,)),
                                             AckBatch(3, 3, (REJECT,))])
    assert code == 0
    # 4 and 5 stay acquired; the broker dies here (its lock timer and the log's handles just vanish)

    coordinator2, mgr2 = _restart(tmp_path, time)
    assert mgr2.partition_offsets("g", TP) == (2, 6)
    assert mgr2.fetch_offset("g", TP, lambda: 99, log_start_offset=0) == 2
    again = mgr2.acquire("g", "m2", TP, [(0, 5, False), (6, 6, False)], max_records=10)
    assert [(r.first_offset, r.last_offset, r.delivery_count) for r in again] == [(2, 2, 2), (4, 5, 2), (6, 6, 1)]
    for c, m in ((coordinator, mgr), (coordinator2, mgr2)):
        m.shutdown()
        c.shutdown()


def test_delivery_counts_survive_a_lock_expiry_a_closed_session_and_a_restart(tmp_path: Path) -> None:
    time = MockTime()
    coordinator, mgr = _restart(tmp_path, time)
    mgr.fetch_offset("g", TP, lambda: 0, log_start_offset=0)
    mgr.acquire("g", "m", TP, [(0, 0, False)], max_records=1)
    time.sleep(LOCK_MS)
    mgr.advance_timer()  # the lock of offset 0 expires: available, delivery count 1
    mgr.acquire("g", "m", TP, [(0, 0, False)], max_records=1)  # delivery 2
    mgr.session("g", "m", 0, [TP])
    mgr.close_session("g", "m")  # released again
    coordinator2, mgr2 = _restart(tmp_path, time)
    assert [(r.first_offset, r.delivery_count) for r in mgr2.acquire("g", "x", TP, [(0, 0, False)], 1)] == [(0, 3)]
    for c, m in ((coordinator, mgr), (coordinator2, mgr2)):
        m.shutdown()
        c.shutdown()


def test_a_deleted_group_leaves_no_state_behind(tmp_path: Path) -> None:
    time = MockTime()
    coordinator, mgr = _restart(tmp_path, time)
    mgr.fetch_offset("g", TP, lambda: 5, log_start_offset=0)
    mgr.delete_group("g")
    coordinator2, mgr2 = _restart(tmp_path, time)
    assert coordinator2.states() == {}
    assert mgr2.partition_offsets("g", TP) is None
    for c, m in ((coordinator, mgr), (coordinator2, mgr2)):
        m.shutdown()
        c.shutdown()


def test_without_a_persister_state_is_in_memory_only(tmp_path: Path) -> None:
    time = MockTime()
    mgr = _manager(time, None)
    mgr.fetch_offset("g", TP, lambda: 5, log_start_offset=0)
    coordinator, mgr2 = _restart(tmp_path, time)
    assert mgr2.partition_offsets("g", TP) is None
    assert coordinator.states() == {}
    mgr.shutdown()
    mgr2.shutdown()
    coordinator.shutdown()


class _Recorder:
    """A persister that keeps the (start, end) of each write."""

    def __init__(self) -> None:
        self.writes: list[tuple[int, int]] = []

    def states(self) -> dict[tuple[str, uuid.UUID, int], ShareState]:
        return {}

    def read_state(self, key: tuple[str, uuid.UUID, int], leader_epoch: int = -1) -> ShareState | None:
        return None

    def write_state(self, key: tuple[str, uuid.UUID, int], state: ShareState, leader_epoch: int = -1) -> None:
        self.writes.append((state.start_offset, state.end_offset))

    def delete_state(self, key: tuple[str, uuid.UUID, int]) -> None:
        pass

    def initialize_state(self, key: tuple[str, uuid.UUID, int], start_offset: int) -> None:
        self.writes.append((start_offset, start_offset))


def test_a_fetch_that_changes_nothing_writes_nothing_and_each_change_is_written_before_the_call_returns() -> None:
    recorder = _Recorder()
    mgr = SharePartitionManager(ShareGroupConfig(record_lock_duration_ms=LOCK_MS), MockTime(), reaper_enabled=False,
                                persister=recorder)
    mgr.fetch_offset("g", TP, lambda: 0, log_start_offset=0)
    assert recorder.writes == [(0, 0)]
    mgr.fetch_offset("g", TP, lambda: 0, log_start_offset=0)
    assert recorder.writes == [(0, 0)]
    mgr.acquire("g", "m", TP, [(0, 2, False)], max_records=10)
    assert recorder.writes[-1] == (0, 3)
    mgr.acknowledge("g", "m", TP, [AckBatch(0, 0, (ACCEPT,))])
    assert recorder.writes[-1] == (1, 3)
    mgr.fetch_offset("g", TP, lambda: 0, log_start_offset=2)  # the log dropped offset 1
    assert recorder.writes[-1] == (2, 3)
    assert len(recorder.writes) == 4
    mgr.shutdown()


def test_a_record_acquired_for_its_last_delivery_when_the_broker_died_is_archived_on_restart(tmp_path: Path) -> None:
    time = MockTime()
    coordinator = ShareCoordinator(str(tmp_path), time)
    coordinator.startup()
    config = ShareGroupConfig(record_lock_duration_ms=LOCK_MS, delivery_count_limit=2)
    mgr = SharePartitionManager(config, time, reaper_enabled=False, persister=coordinator)
    mgr.fetch_offset("g", TP, lambda: 0, log_start_offset=0)
    mgr.acquire("g", "m", TP, [(0, 1, False)], max_records=10)
    mgr.acknowledge("g", "m", TP, [AckBatch(0, 1, (RELEASE,))])
    assert [r.delivery_count for r in mgr.acquire("g", "m", TP, [(0, 1, False)], max_records=10)] == [2]
    mgr.acknowledge("g", "m", TP, [AckBatch(1, 1, (ACCEPT,))])  # offset 0 stays acquired, delivery 2 of 2

    coordinator2 = ShareCoordinator(str(tmp_path), time)
    coordinator2.startup()
    mgr2 = SharePartitionManager(config, time, reaper_enabled=False, persister=coordinator2)
    assert mgr2.partition_offsets("g", TP) == (2, 2)
    assert mgr2.acquire("g", "x", TP, [(0, 1, False)], max_records=10) == []
    for c, m in ((coordinator, mgr), (coordinator2, mgr2)):
        m.shutdown()
        c.shutdown()

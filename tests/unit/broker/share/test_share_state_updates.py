"""The share coordinator's ShareUpdate records between ShareSnapshots and its epoch fencing (issue #25 item 3):
what a write appends, what a replay (also of a compacted log) rebuilds, and how a stale share-partition leader
is refused (MockTime, a real log in a temporary dir, no threads)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from mini_broker.share.config import ShareGroupConfig
from mini_broker.share.partition_manager import AckBatch, SharePartitionManager, TopicIdPartition
from mini_broker.share.share_coordinator import (
    SNAPSHOT_KEY_TYPE,
    UPDATE_KEY_TYPE,
    ShareCoordinator,
    apply_record,
    read_state_key,
)
from mini_broker.share.share_partition import AcknowledgeType, InFlightRecord, RecordState, ShareState
from pykafka_client.errors import FencedLeaderEpochError, FencedStateEpochError
from pykafka_client.utils.time import MockTime

TP = (uuid.UUID(int=9), 0)
KEY = ("g", *TP)
A, ACK, ARC = RecordState.AVAILABLE, RecordState.ACKNOWLEDGED, RecordState.ARCHIVED
ACCEPT, RELEASE = int(AcknowledgeType.ACCEPT), int(AcknowledgeType.RELEASE)


def _coordinator(data_dir: Path, per_snapshot: int = 3) -> ShareCoordinator:
    coordinator = ShareCoordinator(str(data_dir), MockTime(), records_per_snapshot=per_snapshot)
    coordinator.startup()
    return coordinator


def _key_types(coordinator: ShareCoordinator) -> list[int]:
    return [read_state_key(key)[0] for _, key, _ in coordinator.partition.keyed_records()]


def _records(state: ShareState) -> dict[int, tuple[RecordState, int]]:
    return {o: (r.state, r.delivery_count) for o, r in state.records.items()}


def _write(coordinator: ShareCoordinator, start: int, records: dict[int, tuple[RecordState, int]],
           leader_epoch: int = 0, state_epoch: int = 0) -> None:
    coordinator.shard.write_state(KEY, state_epoch, leader_epoch, start,
                                  [(o, o, kind, count) for o, (kind, count) in sorted(records.items())])


def test_writes_are_updates_between_snapshots_every_n_and_a_reload_replays_them(tmp_path: Path) -> None:
    coordinator = _coordinator(tmp_path, per_snapshot=3)
    _write(coordinator, 0, {0: (A, 1), 1: (A, 1), 2: (A, 1)})
    _write(coordinator, 0, {0: (ACK, 1), 1: (A, 1), 2: (A, 1)})
    _write(coordinator, 1, {1: (A, 2), 2: (A, 1), 3: (A, 1)})
    _write(coordinator, 1, {1: (ARC, 2), 2: (A, 1), 3: (A, 1)})
    assert _key_types(coordinator) == [SNAPSHOT_KEY_TYPE, UPDATE_KEY_TYPE, UPDATE_KEY_TYPE, SNAPSHOT_KEY_TYPE]
    snapshots, updates, _, _ = coordinator.shard.appended
    assert (snapshots, updates) == (2, 2)
    _write(coordinator, 3, {3: (A, 2)})
    expected = {3: (A, 2)}
    assert _records(coordinator.states()[KEY]) == expected
    coordinator.shutdown()

    again = _coordinator(tmp_path, per_snapshot=3)
    state = again.states()[KEY]
    assert (state.start_offset, state.end_offset, _records(state)) == (3, 4, expected)
    again.shutdown()


def test_an_update_carries_only_the_records_that_changed(tmp_path: Path) -> None:
    coordinator = _coordinator(tmp_path, per_snapshot=500)
    full = {o: (A, 1 + o % 2) for o in range(200)}  # 200 runs
    _write(coordinator, 0, full)
    _, _, snapshot_bytes, _ = coordinator.shard.appended
    full[57] = (ACK, 2)
    _write(coordinator, 0, full)
    _, updates, _, update_bytes = coordinator.shard.appended
    assert updates == 1
    assert update_bytes * 20 < snapshot_bytes  # one run instead of 200
    assert _records(coordinator.states()[KEY])[57] == (ACK, 2)
    coordinator.shutdown()


def test_a_compacted_log_replays_to_the_same_state(tmp_path: Path) -> None:
    """Compaction keeps the last record of each key: update ``i`` of an older snapshot cycle may outlive its
    snapshot, but it is older than the snapshot that replaced it and of another snapshot epoch."""
    coordinator = _coordinator(tmp_path, per_snapshot=4)
    records = {o: (A, 1) for o in range(6)}
    for step in range(11):
        records[step % 6] = (A, records[step % 6][1] + 1)
        _write(coordinator, 0, records)
    log = [(key, value) for _, key, value in coordinator.partition.keyed_records()]
    last_of_key = {key: i for i, (key, _) in enumerate(log)}
    compacted = [rec for i, rec in enumerate(log) if last_of_key[rec[0]] == i]
    assert len(compacted) < len(log)
    replayed: dict[tuple[str, uuid.UUID, int], object] = {}
    for key, value in compacted:
        apply_record(replayed, key, value)  # type: ignore[arg-type]
    assert _records(replayed[KEY].share_state()) == records  # type: ignore[attr-defined]
    coordinator.shutdown()


def test_a_leader_of_an_older_epoch_is_fenced_once_the_new_one_read_the_state(tmp_path: Path) -> None:
    coordinator = _coordinator(tmp_path)
    _write(coordinator, 0, {0: (A, 1)}, leader_epoch=1)
    found = coordinator.shard.read_state(KEY, 2)  # the new leader; its epoch is recorded
    assert found is not None and _records(found[1]) == {0: (A, 1)}
    with pytest.raises(FencedLeaderEpochError):
        _write(coordinator, 1, {}, leader_epoch=1)
    with pytest.raises(FencedLeaderEpochError):
        coordinator.shard.read_state(KEY, 1)
    _write(coordinator, 1, {}, leader_epoch=2)
    coordinator.shutdown()
    again = _coordinator(tmp_path)  # the recorded leader epoch survives a reload
    with pytest.raises(FencedLeaderEpochError):
        _write(again, 1, {}, leader_epoch=1)
    assert again.states()[KEY].start_offset == 1
    again.shutdown()


def test_a_write_of_an_older_state_epoch_is_fenced_after_an_initialize(tmp_path: Path) -> None:
    coordinator = _coordinator(tmp_path)
    _write(coordinator, 0, {0: (A, 1), 1: (A, 1)})
    coordinator.shard.initialize_state(KEY, 1, 10)
    with pytest.raises(FencedStateEpochError):
        _write(coordinator, 0, {0: (ACK, 1)}, state_epoch=0)
    with pytest.raises(FencedStateEpochError):
        coordinator.shard.initialize_state(KEY, 1, 20)
    found = coordinator.shard.read_state(KEY, -1)
    assert found is not None
    assert (found[0], found[1].start_offset, found[1].records) == (1, 10, {})
    coordinator.shutdown()


def test_a_delete_tombstones_the_snapshot_and_its_updates(tmp_path: Path) -> None:
    coordinator = _coordinator(tmp_path, per_snapshot=10)
    for start in range(4):
        _write(coordinator, start, {start: (A, 1)})
    coordinator.delete_state(KEY)
    coordinator.shutdown()
    again = _coordinator(tmp_path, per_snapshot=10)
    assert again.states() == {}
    again.shutdown()


def _manager(coordinator: ShareCoordinator, epoch: list[int], limit: int = 5) -> SharePartitionManager:
    def leader_epoch(tp: TopicIdPartition) -> int:
        return epoch[0]

    return SharePartitionManager(ShareGroupConfig(record_lock_duration_ms=60_000, delivery_count_limit=limit),
                                 MockTime(), reaper_enabled=False, persister=coordinator, leader_epoch=leader_epoch)


def test_a_new_share_partition_leader_reads_the_state_and_the_old_one_cannot_overwrite_it(tmp_path: Path) -> None:
    coordinator = _coordinator(tmp_path)
    old = _manager(coordinator, [1], limit=2)
    assert old.fetch_offset("g", TP, lambda: 0, log_start_offset=0) == 0
    old.acquire("g", "m", TP, [(0, 5, False)], max_records=10)
    old.acknowledge("g", "m", TP, [AckBatch(0, 0, (ACCEPT,)), AckBatch(1, 1, (RELEASE,))])
    old.acquire("g", "m", TP, [(1, 1, False)], max_records=10)  # offset 1: its last allowed delivery (2 of 2)

    new = _manager(coordinator, [2], limit=2)  # the topic partition's leadership moved (leader epoch 2)
    assert new.fetch_offset("g", TP, lambda: 99, log_start_offset=0) == 2  # 1 was archived, as a release would
    again = new.acquire("g", "m2", TP, [(0, 5, False)], max_records=10)
    assert [(r.first_offset, r.last_offset, r.delivery_count) for r in again] == [(2, 5, 2)]

    with pytest.raises(FencedLeaderEpochError):  # the old leader's late acknowledgement is refused
        old.acknowledge("g", "m", TP, [AckBatch(2, 5, (ACCEPT,))])
    assert old.partition_offsets("g", TP) is None  # and it forgot the partition (read again if it leads again)
    state = coordinator.states()[KEY]
    assert state.start_offset == 2
    assert state.records[2] == InFlightRecord(A, 2)
    for m in (old, new):
        m.shutdown()
    coordinator.shutdown()


def test_a_manager_that_leads_again_at_a_new_epoch_reads_the_state_again(tmp_path: Path) -> None:
    coordinator = _coordinator(tmp_path)
    epoch = [1]
    mgr = _manager(coordinator, epoch)
    mgr.fetch_offset("g", TP, lambda: 0, log_start_offset=0)
    mgr.acquire("g", "m", TP, [(0, 1, False)], max_records=10)
    epoch[0] = 3  # it lost the leadership and won it back: its acquisitions are gone
    assert mgr.fetch_offset("g", TP, lambda: 0, log_start_offset=0) == 0
    assert [r.delivery_count for r in mgr.acquire("g", "m", TP, [(0, 1, False)], max_records=10)] == [2]
    mgr.shutdown()
    coordinator.shutdown()



def test_an_admin_reset_initializes_the_state_with_a_new_state_epoch(tmp_path: Path) -> None:
    coordinator = _coordinator(tmp_path)
    mgr = _manager(coordinator, [1])
    mgr.fetch_offset("g", TP, lambda: 0, log_start_offset=0)
    mgr.acquire("g", "m", TP, [(0, 3, False)], max_records=10)
    mgr.reset_start_offset("g", TP, 2)  # AlterShareGroupOffsets: InitializeShareGroupState
    found = coordinator.shard.read_state(KEY, -1)
    assert found is not None and (found[0], found[1].start_offset, found[1].records) == (1, 2, {})
    with pytest.raises(FencedStateEpochError):  # a write of the state before the reset is refused
        _write(coordinator, 0, {0: (ACK, 1)}, leader_epoch=1, state_epoch=0)
    assert [(r.first_offset, r.last_offset) for r in mgr.acquire("g", "m", TP, [(2, 3, False)], 10)] == [(2, 3)]
    mgr.shutdown()
    coordinator.shutdown()
    again = _coordinator(tmp_path)
    assert _records(again.states()[KEY]) == {2: (A, 1), 3: (A, 1)}
    again.shutdown()

"""Internal topics with many partitions (issue 28, item 2): keys map to partitions as Kafka's ``partitionFor``
(Java's ``String.hashCode``), a group's records go to its partition, a coordinator loads and drops partition by
partition (COORDINATOR_LOAD_IN_PROGRESS only for the keys of a partition still loading), and a single broker's
partition count is kept (a directory written by the one-partition version stays one partition). MockTime and
inline timers: deterministic."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from mini_broker.coordinator.partition import PARTITION_COUNT_FILE, local_partition_count
from mini_broker.coordinator.partitioning import coordinator_key_of, java_string_hash, partition_for
from mini_broker.group.group_config import GroupConfig
from mini_broker.group.group_coordinator import GroupCoordinator
from mini_broker.group.group_metadata_manager import (
    COORDINATOR_DIR,
    GROUP_METADATA_TOPIC_NAME,
    GroupMetadataManager,
    offset_commit_key,
)
from mini_broker.group.group_requests import CommittedOffset, OffsetCommitParams
from mini_broker.log.log_config import LogConfig
from mini_broker.log.unified_log import AppendOrigin, Log
from mini_broker.server.coordinator_lookup import partition_for as lookup_partition_for
from mini_broker.transaction.transaction_log import transaction_log_key
from pykafka_client.errors import CoordinatorLoadInProgressError, NotCoordinatorError
from pykafka_client.protocol.records import MemoryRecords
from pykafka_client.utils.time import MockTime

PARTITIONS = 50
TP = ("t", 0)


# -- partition mapping --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("key", "java_hash"), [
    ("", 0), ("a", 97), ("g", 103), ("hello", 99162322), ("Aa", 2112), ("BB", 2112),
    ("polygenelubricants", -(1 << 31)),  # Integer.MIN_VALUE: Kafka's Utils.abs maps it to 0
    ("\U0001F600", 1772899),  # one code point, two UTF-16 code units (0xD83D 0xDE00)
])
def test_java_string_hash_matches_javas_string_hashcode(key: str, java_hash: int) -> None:
    assert java_string_hash(key) == java_hash


def test_partition_for_is_kafkas_abs_hash_mod_partitions() -> None:
    assert partition_for("g", PARTITIONS) == 3
    assert partition_for("hello", PARTITIONS) == 99162322 % PARTITIONS
    assert partition_for("polygenelubricants", PARTITIONS) == 0
    assert partition_for("anything", 1) == 0
    assert lookup_partition_for is partition_for  # FindCoordinator and the coordinators agree


def test_groups_spread_over_the_partitions() -> None:
    used = {partition_for(f"group-{i}", PARTITIONS) for i in range(200)}
    assert len(used) > PARTITIONS // 2


def test_an_internal_records_key_names_its_coordinator_key() -> None:
    assert coordinator_key_of(offset_commit_key("g1", "t", 3)) == "g1"
    assert coordinator_key_of(transaction_log_key("tx-1")) == "tx-1"


# -- a single broker's partition count -----------------------------------------------------------------------
def test_a_fresh_directory_takes_the_configured_count_and_keeps_it(tmp_path: Path) -> None:
    parent = str(tmp_path / COORDINATOR_DIR)
    assert local_partition_count(parent, GROUP_METADATA_TOPIC_NAME, 50) == 50
    # a later config change does not repartition an existing topic (as Kafka)
    assert local_partition_count(parent, GROUP_METADATA_TOPIC_NAME, 7) == 50


def test_a_directory_of_the_one_partition_version_stays_one_partition(tmp_path: Path) -> None:
    parent = tmp_path / COORDINATOR_DIR
    (parent / f"{GROUP_METADATA_TOPIC_NAME}-0").mkdir(parents=True)
    assert local_partition_count(str(parent), GROUP_METADATA_TOPIC_NAME, 50) == 1
    assert (parent / PARTITION_COUNT_FILE).read_text().strip() == "1"


def _commit(coordinator: GroupCoordinator, group_id: str, offset: int, time: MockTime) -> int:
    errors = coordinator.handle_commit_offsets(
        OffsetCommitParams(group_id, {TP: CommittedOffset(offset, -1, "", time.milliseconds())}))
    return errors[TP]


def _groups_in_distinct_partitions(n: int) -> list[str]:
    seen: dict[int, str] = {}
    i = 0
    while len(seen) < n:
        seen.setdefault(partition_for(f"g{i}", PARTITIONS), f"g{i}")
        i += 1
    return list(seen.values())


def test_each_groups_records_go_to_its_partition_and_a_restart_replays_them_all(tmp_path: Path,
                                                                                time: MockTime) -> None:
    groups = _groups_in_distinct_partitions(5)
    coordinator = GroupCoordinator(GroupConfig(), GroupMetadataManager(str(tmp_path), time,
                                                                       num_partitions=PARTITIONS),
                                   time, timer_run_inline=True, reaper_enabled=False)
    coordinator.startup()
    try:
        for i, group_id in enumerate(groups):
            assert _commit(coordinator, group_id, 100 + i, time) == 0
        # one batch with the records of two groups of different partitions is split between them
        coordinator.runtime.write_records([(offset_commit_key(g, "u", 0), None) for g in groups[:2]],
                                          time.milliseconds())
    finally:
        coordinator.shutdown()
    parent = tmp_path / COORDINATOR_DIR
    for group_id in groups:
        part = parent / f"{GROUP_METADATA_TOPIC_NAME}-{partition_for(group_id, PARTITIONS)}"
        lg = Log(str(part), LogConfig(), time=time)
        try:
            keys = {coordinator_key_of(bytes(r.key)) for b in MemoryRecords(lg.read(0, 1 << 20).to_bytes()).batches()
                    for r in b.records() if r.key is not None}
        finally:
            lg.close()
        assert keys == {group_id}
    # partitions no group uses have no log at all (created at their first record)
    assert len([n for n in os.listdir(parent) if n.startswith(GROUP_METADATA_TOPIC_NAME)]) == len(groups)

    again = GroupCoordinator(GroupConfig(), GroupMetadataManager(str(tmp_path), time, num_partitions=PARTITIONS),
                             time, timer_run_inline=True, reaper_enabled=False)
    again.startup()
    try:
        for i, group_id in enumerate(groups):
            error, fetched = again.handle_fetch_offsets(group_id, [TP])
            assert error == 0 and fetched[TP].offset == 100 + i
    finally:
        again.shutdown()


# -- a cluster broker: partition by partition ----------------------------------------------------------------
@pytest.fixture
def cluster_coordinator(time: MockTime) -> Iterator[GroupCoordinator]:
    coordinator = GroupCoordinator(GroupConfig(), GroupMetadataManager(None, time, num_partitions=PARTITIONS), time,
                                   timer_run_inline=True, reaper_enabled=False)
    coordinator.startup(follow_partition_leadership=True)
    yield coordinator
    coordinator.shutdown()


def _elect(coordinator: GroupCoordinator, tmp_path: Path, partition: int, time: MockTime) -> Log:
    lg = Log(str(tmp_path / f"{GROUP_METADATA_TOPIC_NAME}-{partition}"), LogConfig(), time=time)

    def append(records: bytes) -> None:
        lg.append(records, origin=AppendOrigin.COORDINATOR, leader_epoch=1)

    coordinator.runtime.expect_election(partition)
    coordinator.runtime.on_election(lg, append, 1, partition)
    return lg


def test_load_in_progress_only_for_the_keys_of_a_loading_partition(cluster_coordinator: GroupCoordinator,
                                                                    tmp_path: Path, time: MockTime) -> None:
    led, loading, other = _groups_in_distinct_partitions(3)
    lg = _elect(cluster_coordinator, tmp_path, partition_for(led, PARTITIONS), time)
    try:
        cluster_coordinator.runtime.expect_election(partition_for(loading, PARTITIONS))
        assert _commit(cluster_coordinator, led, 5, time) == 0
        assert _commit(cluster_coordinator, loading, 5, time) == CoordinatorLoadInProgressError.code
        assert _commit(cluster_coordinator, other, 5, time) == NotCoordinatorError.code
        assert cluster_coordinator.handle_describe_group(other)[0] == NotCoordinatorError.code
    finally:
        lg.close()


def test_a_resignation_drops_only_its_partitions_groups(cluster_coordinator: GroupCoordinator, tmp_path: Path,
                                                        time: MockTime) -> None:
    a, b = _groups_in_distinct_partitions(2)
    logs = [_elect(cluster_coordinator, tmp_path, partition_for(g, PARTITIONS), time) for g in (a, b)]
    try:
        assert _commit(cluster_coordinator, a, 1, time) == 0 and _commit(cluster_coordinator, b, 2, time) == 0
        assert {g for g, _, _ in cluster_coordinator.handle_list_groups()[1]} == {a, b}
        cluster_coordinator.runtime.on_resignation(partition_for(a, PARTITIONS))
        assert cluster_coordinator.get_group(a) is None
        assert _commit(cluster_coordinator, a, 3, time) == NotCoordinatorError.code
        assert cluster_coordinator.handle_fetch_offsets(b, [TP])[1][TP].offset == 2
        assert [g for g, _, _ in cluster_coordinator.handle_list_groups()[1]] == [b]
        # re-elected, the partition is replayed from its log
        part = partition_for(a, PARTITIONS)
        cluster_coordinator.runtime.on_election(logs[0], lambda records: None, 2, part)
        assert cluster_coordinator.handle_fetch_offsets(a, [TP])[1][TP].offset == 1
    finally:
        for lg in logs:
            lg.close()

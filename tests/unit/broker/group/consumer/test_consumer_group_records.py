"""The consumer groups' records in ``__consumer_offsets``: a group's image round-trips through replay, a change
is written as the records that differ, and a coordinator restarted on the same log finds its consumer groups
(members with their epochs and assignments) next to the classic groups, also after the log's compaction."""

from __future__ import annotations

import uuid
from pathlib import Path

from mini_broker.group import GroupConfig, GroupCoordinator, GroupMetadataManager
from mini_broker.group.consumer import (
    ConsumerGroupConfig,
    ConsumerGroupCoordinator,
    ConsumerGroupHeartbeatParams,
    ConsumerGroupManager,
    TopicInfo,
    TopicsImage,
)
from mini_broker.group.consumer.model import MemberState
from mini_broker.group.consumer.records import diff, group_records, replay
from pykafka_client.utils.time import MockTime
from tests.unit.broker.group.consumer.helpers import heartbeat
from tests.unit.broker.group.test_persistence import clean_offsets_log

T = TopicInfo(uuid.UUID(int=5), "t", 4)
TOPICS = TopicsImage.of([T])


def _join(member_id: str, **fields: object) -> ConsumerGroupHeartbeatParams:
    return ConsumerGroupHeartbeatParams("g", member_id, 0, rebalance_timeout_ms=1000, subscribed_topic_names=("t",),
                                        owned_partitions={}, **fields)  # type: ignore[arg-type]


def test_a_group_image_round_trips_through_replay() -> None:
    manager = ConsumerGroupManager(ConsumerGroupConfig())
    manager.heartbeat(_join("m1", instance_id="i1", rack_id="r1", server_assignor="range"), 0, TOPICS)
    manager.heartbeat(_join("m2"), 0, TOPICS)
    manager.heartbeat(ConsumerGroupHeartbeatParams("g", "m1", 1, owned_partitions={T.topic_id: frozenset(range(4))}),
                      0, TOPICS)  # m1 now has partitions pending revocation
    group = manager.groups["g"]
    assert group.members["m1"].state is MemberState.UNREVOKED_PARTITIONS
    restored = replay(group_records(group).items())["g"]
    assert restored.members == group.members
    assert (restored.group_epoch, restored.target_assignment_epoch) == (group.group_epoch,
                                                                       group.target_assignment_epoch)
    assert restored.target_assignment == group.target_assignment
    assert restored.subscription_metadata == group.subscription_metadata
    assert restored.static_members == {"i1": "m1"}
    assert restored.current_partition_epoch == group.current_partition_epoch


def test_a_change_writes_only_the_records_that_differ_and_tombstones_the_removed() -> None:
    manager = ConsumerGroupManager(ConsumerGroupConfig())
    manager.heartbeat(_join("m1"), 0, TOPICS)
    before = group_records(manager.groups["g"])
    steady = ConsumerGroupHeartbeatParams("g", "m1", 1, owned_partitions={T.topic_id: frozenset(range(4))})
    manager.heartbeat(steady, 0, TOPICS)
    assert diff(before, group_records(manager.groups["g"])) == []  # a heartbeat that changes nothing writes nothing
    manager.heartbeat(ConsumerGroupHeartbeatParams("g", "m1", -1), 0, TOPICS)
    changes = diff(before, group_records(manager.groups["g"]))
    assert sum(v is None for _, v in changes) == 3  # the member's metadata, target and current assignment


def _coordinators(data_dir: str, time: MockTime) -> tuple[GroupCoordinator, ConsumerGroupCoordinator]:
    classic = GroupCoordinator(GroupConfig(), GroupMetadataManager(data_dir, time), time,
                               timer_run_inline=True, reaper_enabled=False)
    consumer = ConsumerGroupCoordinator(ConsumerGroupConfig(), classic.runtime, lambda: TOPICS, time)
    classic.consumer_groups = consumer
    classic.startup()
    consumer.startup()
    return classic, consumer


def test_a_restarted_coordinator_finds_its_consumer_groups(tmp_path: Path) -> None:
    """The records are appended to the offsets log as the group changes; a new coordinator on the same log
    (a restart; a failover loads the same way) replays them, so the members keep their ids, epochs and
    assignments and heartbeat on without rejoining. The log cleaner keeps them (the latest record per key)."""
    time = MockTime()
    classic, consumer = _coordinators(str(tmp_path), time)
    m1 = heartbeat(consumer, _join("m1"))
    for i in range(6):  # churn: records superseded and tombstoned, so that the cleaner drops many
        heartbeat(consumer, _join(f"x{i}"))
        heartbeat(consumer, ConsumerGroupHeartbeatParams("g", f"x{i}", -1))
    heartbeat(consumer, _join("m2"))
    for _ in range(3):  # m1 revokes, acknowledges; m2 gets the rest: several changes, several records
        heartbeat(consumer, ConsumerGroupHeartbeatParams(
            "g", "m1", consumer.describe("g").members["m1"].member_epoch,  # type: ignore[union-attr]
            owned_partitions=dict(consumer.describe("g").members["m1"].assigned_partitions)))  # type: ignore[union-attr]
        heartbeat(consumer, ConsumerGroupHeartbeatParams(
            "g", "m2", consumer.describe("g").members["m2"].member_epoch,  # type: ignore[union-attr]
            owned_partitions=dict(consumer.describe("g").members["m2"].assigned_partitions)))  # type: ignore[union-attr]
    before = consumer.describe("g")
    assert before is not None and m1.error_code == 0
    clean_offsets_log(classic.manager)
    classic.shutdown()

    for _ in range(2):  # a restart after the clean, and another one: both replay the same group
        classic, consumer = _coordinators(str(tmp_path), time)
        after = consumer.describe("g")
        assert after is not None
        assert after.members == before.members and after.group_epoch == before.group_epoch
        assert after.target_assignment == before.target_assignment
        classic.shutdown()
    classic, consumer = _coordinators(str(tmp_path), time)
    m2 = before.members["m2"]
    assert m2.state is MemberState.STABLE and m2.assigned_partitions
    r = heartbeat(consumer, ConsumerGroupHeartbeatParams("g", "m2", m2.member_epoch,
                                                        owned_partitions=dict(m2.assigned_partitions)))
    assert r.error_code == 0 and r.member_epoch == m2.member_epoch
    classic.shutdown()

"""Which share partitions of a group have state (issue #25: ShareGroupStatePartitionMetadata), and the group
coordinator's steps on them (MockTime, inline timers, the share coordinator in process on a temporary dir): the
record is written with the assignment that first names a partition and replayed on load; deleting the group,
altering and deleting its offsets act on every recorded partition at the share coordinator; a share-partition
leader still holding the old state is fenced on its next write, and reads the state again when a member opens a
share session."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from mini_broker.group import GroupConfig, GroupCoordinator, GroupMetadataManager
from mini_broker.group.consumer import TopicInfo, TopicsImage
from mini_broker.share.config import ShareGroupConfig
from mini_broker.share.coordinator import ShareGroupCoordinator, TopicIdPartition
from mini_broker.share.group import ShareGroup, ShareGroupHeartbeatParams, ShareGroupHeartbeatResult
from mini_broker.share.partition_manager import AckBatch, SharePartitionManager
from mini_broker.share.records import group_records, replay
from mini_broker.share.share_coordinator import ShareCoordinator
from mini_broker.share.share_partition import AcknowledgeType
from mini_broker.share.state_admin import StateSummary
from pykafka_client.errors import FencedStateEpochError, GroupNotEmptyError
from pykafka_client.utils.time import MockTime

T = uuid.UUID(int=7)
U = uuid.UUID(int=8)
TOPICS = TopicsImage.of([TopicInfo(T, "t", 3), TopicInfo(U, "u", 1)])
ACCEPT = int(AcknowledgeType.ACCEPT)


class Harness:
    """A single broker's share groups, share coordinator and share partitions, wired as the broker wires them."""

    def __init__(self, time: MockTime, data_dir: Path) -> None:
        self.classic = GroupCoordinator(GroupConfig(), GroupMetadataManager(None, time), time, timer_run_inline=True,
                                        reaper_enabled=False)
        self.state = ShareCoordinator(str(data_dir), time)
        self.state.startup()
        self.partitions = SharePartitionManager(ShareGroupConfig(record_lock_duration_ms=60_000), time,
                                                reaper_enabled=False, persister=self.state)
        self.forgotten: list[tuple[str, TopicIdPartition | None]] = []

        def forget(group_id: str, tp: TopicIdPartition | None) -> None:
            self.forgotten.append((group_id, tp))

        self.share = ShareGroupCoordinator(ShareGroupConfig(session_timeout_ms=6000, heartbeat_interval_ms=100),
                                           self.classic.runtime, lambda: TOPICS, time=time, state_admin=self.state,
                                           on_state_deleted=forget)
        self.classic.share_groups = self.share
        self.classic.startup()
        self.share.startup()

    def heartbeat(self, request: ShareGroupHeartbeatParams) -> ShareGroupHeartbeatResult:
        replies: list[ShareGroupHeartbeatResult] = []
        self.share.heartbeat(request, replies.append)
        return replies[0]

    def consume(self, tp: TopicIdPartition, last: int, member: str = "m1") -> None:
        """``member`` fetches offsets 0..last of ``tp`` and accepts them."""
        self.partitions.session("g", member, 0, [tp])
        assert self.partitions.fetch_offset("g", tp, lambda: 0, log_start_offset=0) == 0
        self.partitions.acquire("g", member, tp, [(0, last, False)], max_records=100)
        assert self.partitions.acknowledge("g", member, tp, [AckBatch(0, last, (ACCEPT,))]) == (0, None)

    def shutdown(self) -> None:
        self.partitions.shutdown()
        self.classic.shutdown()
        self.state.shutdown()


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    harness = Harness(MockTime(), tmp_path)
    yield harness
    harness.shutdown()


def test_the_state_partition_metadata_replays_to_the_same_partitions() -> None:
    g = ShareGroup("g", group_epoch=2, assignment_epoch=2)
    g.initialized = {T: frozenset({0, 2}), U: frozenset({0})}
    g.deleting = frozenset({U})
    back = replay(group_records(g).items())["g"]
    assert (back.initialized, back.deleting) == (g.initialized, g.deleting)
    # a group without any has no such record
    assert len(group_records(ShareGroup("e"))) == 2


def test_an_assignment_records_its_partitions_with_state_and_a_load_replays_them(h: Harness) -> None:
    assert h.share.state_partitions("g") == {}
    h.heartbeat(ShareGroupHeartbeatParams("g", "m1", 0, subscribed_topic_names=("t",)))
    assert h.share.state_partitions("g") == {T: frozenset({0, 1, 2})}
    # the member leaves: the partitions keep their state (and stay recorded)
    h.heartbeat(ShareGroupHeartbeatParams("g", "m1", -1))
    described = h.share.describe("g")
    assert described is not None and not described.members
    live = group_records(described)  # what __consumer_offsets holds for the group
    h.classic.unload(0)
    assert h.share.state_partitions("g") == {}
    h.share.load(live)
    assert h.share.state_partitions("g") == {T: frozenset({0, 1, 2})}


def test_deleting_the_group_deletes_every_recorded_partitions_state_and_fences_its_leader(h: Harness) -> None:
    h.heartbeat(ShareGroupHeartbeatParams("g", "m1", 0, subscribed_topic_names=("t",)))
    for p in range(3):
        h.consume((T, p), 2)
    assert h.share.describe_offsets("g") == {(T, p): StateSummary(0, -1, 3, 0) for p in range(3)}
    assert h.share.delete_groups(["g"]) == {"g": GroupNotEmptyError.code}
    h.partitions.acquire("g", "m1", (T, 0), [(3, 3, False)], max_records=10)  # the leader still holds offset 3
    assert h.partitions.fetch_offset("g", (T, 1), lambda: 0, log_start_offset=0) == 3  # and the state of (T, 1)
    h.heartbeat(ShareGroupHeartbeatParams("g", "m1", -1))
    assert h.share.delete_groups(["g"]) == {"g": 0}
    assert h.forgotten == [("g", None)]
    assert h.state.states() == {}  # the share coordinator has no state of any of them
    # the leader's next write of its old state is fenced, and it forgets the share partition
    with pytest.raises(FencedStateEpochError):
        h.partitions.acknowledge("g", "m1", (T, 0), [AckBatch(3, 3, (ACCEPT,))])
    assert h.partitions.partition_offsets("g", (T, 0)) is None
    # a share partition nobody holds records of is read again when a member opens a share session
    assert h.partitions.partition_offsets("g", (T, 1)) == (3, 3)
    h.partitions.session("g", "m2", 0, [(T, 1)])
    assert h.partitions.partition_offsets("g", (T, 1)) is None
    # the group created again starts every partition afresh, at share.auto.offset.reset
    h.heartbeat(ShareGroupHeartbeatParams("g", "m2", 0, subscribed_topic_names=("t",)))
    for p in range(3):
        assert h.partitions.fetch_offset("g", (T, p), lambda: 0, log_start_offset=0) == 0
    assert h.share.describe_offsets("g") == {(T, p): StateSummary(1, -1, 0, 0) for p in range(3)}  # the deletion raised the epoch


def test_altered_offsets_reset_the_state_and_are_recorded_deleted_offsets_forget_the_topic(h: Harness) -> None:
    h.heartbeat(ShareGroupHeartbeatParams("g", "m1", 0, subscribed_topic_names=("t",)))
    h.consume((T, 0), 4)
    h.heartbeat(ShareGroupHeartbeatParams("g", "m1", -1))
    h.share.alter_offset("g", (U, 0), 7)  # a partition never assigned gets state and is recorded
    h.share.alter_offset("g", (T, 0), 2)
    assert h.share.state_partitions("g") == {T: frozenset({0, 1, 2}), U: frozenset({0})}
    assert h.forgotten == [("g", (U, 0)), ("g", (T, 0))]
    offsets = h.share.describe_offsets("g")
    assert offsets[(U, 0)] == StateSummary(0, -1, 7, 0)
    assert offsets[(T, 0)] == StateSummary(1, -1, 2, 0)
    assert offsets[(T, 1)] is None  # assigned, never fetched: no state
    # the leader, still holding offset 0..4 accepted, reads the new start offset once it forgets its own
    h.partitions.forget_share_partitions("g", T, 0)
    assert h.partitions.fetch_offset("g", (T, 0), lambda: 0, log_start_offset=0) == 2

    assert h.share.delete_offsets("g", T) == 3
    assert h.share.state_partitions("g") == {U: frozenset({0})}
    assert set(h.share.describe_offsets("g")) == {(U, 0)}
    assert h.share.delete_offsets("g", T) == 0

"""The group APIs of a real MiniBroker over raw frames, at old and new versions: FindCoordinator (single and
batched keys), JoinGroup v0 and v5 (KIP-394), SyncGroup, Heartbeat, OffsetCommit/OffsetFetch (v2 and the v8
multi-group form), LeaveGroup v0/v3, ListGroups, DescribeGroups, DeleteGroups, OffsetDelete."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client.protocol.messages import (
    CreateTopicsRequest,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from tests.integration.wire import Conn
from tests.unit.broker.group.harness import subscription

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
COORDINATOR_NOT_AVAILABLE = 15
ILLEGAL_GENERATION = 22
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
INVALID_REQUEST = 42
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
MEMBER_ID_REQUIRED = 79
GROUP_SUBSCRIBED_TO_TOPIC = 86
TOPIC = "wire-topic"


@pytest.fixture(scope="module")
def broker() -> Iterator[MiniBroker]:
    with MiniBroker(num_network_threads=1, num_io_threads=2, group_initial_rebalance_delay_ms=0,
                    group_min_session_timeout_ms=1000) as b:
        with Conn(b, client_id="wire") as c:
            resp = c.call(CreateTopicsRequest(timeout_ms=5000, topics=[CreateTopicsRequest.CreatableTopic(
                name=TOPIC, num_partitions=2, replication_factor=1)]), 5)
            assert resp.topics[0].error_code == NONE
        yield b


def _join(c: Conn, group: str, version: int, member_id: str = "", session_ms: int = 10000) -> Any:
    return c.call(JoinGroupRequest(group_id=group, session_timeout_ms=session_ms, rebalance_timeout_ms=10000,
                                   member_id=member_id, protocol_type="consumer",
                                   protocols=[JoinGroupRequest.JoinGroupRequestProtocol(
                                       name="range", metadata=subscription(TOPIC))]), version)


def test_find_coordinator(broker: MiniBroker) -> None:
    with Conn(broker, client_id="wire") as c:
        r = c.call(FindCoordinatorRequest(key="g"), 0)
        assert (r.error_code, r.node_id, r.port) == (NONE, 0, broker.port)
        r = c.call(FindCoordinatorRequest(key_type=0, coordinator_keys=["a", "b"]), 4)
        assert [(x.key, x.error_code, x.port) for x in r.coordinators] == [("a", 0, broker.port), ("b", 0, broker.port)]
        r = c.call(FindCoordinatorRequest(key="txn", key_type=1), 3)
        assert (r.error_code, r.node_id, r.port) == (NONE, 0, broker.port)  # the transaction coordinator
        r = c.call(FindCoordinatorRequest(key="x", key_type=5), 3)
        assert r.error_code == INVALID_REQUEST


def test_v0_member_lifecycle(broker: MiniBroker) -> None:
    with Conn(broker, client_id="wire") as c:
        assert _join(c, "g-v0", 0, session_ms=999).error_code == INVALID_SESSION_TIMEOUT
        j = _join(c, "g-v0", 0)
        assert j.error_code == NONE and j.generation_id == 1 and j.leader == j.member_id
        assert j.members[0].metadata == subscription(TOPIC)
        s = c.call(SyncGroupRequest(group_id="g-v0", generation_id=1, member_id=j.member_id, assignments=[
            SyncGroupRequest.SyncGroupRequestAssignment(member_id=j.member_id, assignment=b"A")]), 0)
        assert (s.error_code, s.assignment) == (NONE, b"A")
        hb = c.call(HeartbeatRequest(group_id="g-v0", generation_id=1, member_id=j.member_id), 0)
        assert hb.error_code == NONE
        assert c.call(HeartbeatRequest(group_id="g-v0", generation_id=9, member_id=j.member_id),
                      0).error_code == ILLEGAL_GENERATION
        commit = c.call(OffsetCommitRequest(group_id="g-v0", generation_id_or_member_epoch=1, member_id=j.member_id,
                                            topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=TOPIC, partitions=[
                                                OffsetCommitRequest.OffsetCommitRequestPartition(
                                                    partition_index=0, committed_offset=7, committed_metadata="m"),
                                                OffsetCommitRequest.OffsetCommitRequestPartition(
                                                    partition_index=9, committed_offset=1)])]), 2)
        assert [p.error_code for p in commit.topics[0].partitions] == [NONE, UNKNOWN_TOPIC_OR_PARTITION]
        f = c.call(OffsetFetchRequest(group_id="g-v0", topics=[OffsetFetchRequest.OffsetFetchRequestTopic(
            name=TOPIC, partition_indexes=[0, 1])]), 1)
        assert [(p.committed_offset, p.metadata) for p in f.topics[0].partitions] == [(7, "m"), (-1, "")]
        leave = c.call(LeaveGroupRequest(group_id="g-v0", member_id=j.member_id), 0)
        assert leave.error_code == NONE
        assert c.call(LeaveGroupRequest(group_id="g-v0", member_id=j.member_id), 0).error_code == UNKNOWN_MEMBER_ID


def test_member_id_required_and_admin_apis(broker: MiniBroker) -> None:
    with Conn(broker, client_id="wire") as c:
        first = _join(c, "g-v5", 5)
        assert first.error_code == MEMBER_ID_REQUIRED and first.member_id
        j = _join(c, "g-v5", 5, first.member_id)
        assert j.error_code == NONE and j.member_id == first.member_id
        c.call(SyncGroupRequest(group_id="g-v5", generation_id=j.generation_id, member_id=j.member_id,
                                assignments=[]), 5)
        groups = c.call(ListGroupsRequest(states_filter=["Stable"]), 4).groups
        assert ("g-v5", "consumer", "Stable") in [(g.group_id, g.protocol_type, g.group_state) for g in groups]
        d = c.call(DescribeGroupsRequest(groups=["g-v5", "nobody"]), 5).groups
        assert (d[0].group_state, d[0].protocol_data, d[0].members[0].member_id) == ("Stable", "range", j.member_id)
        assert d[0].members[0].client_id == "wire" and d[1].group_state == "Dead"
        commit = c.call(OffsetCommitRequest(group_id="g-v5", generation_id_or_member_epoch=j.generation_id,
                                            member_id=j.member_id,
                                            topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=TOPIC, partitions=[
                                                OffsetCommitRequest.OffsetCommitRequestPartition(
                                                    partition_index=1, committed_offset=3)])]), 8)
        assert commit.topics[0].partitions[0].error_code == NONE
        od = c.call(OffsetDeleteRequest(group_id="g-v5", topics=[OffsetDeleteRequest.OffsetDeleteRequestTopic(
            name=TOPIC, partitions=[OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=1)])]), 0)
        assert od.topics[0].partitions[0].error_code == GROUP_SUBSCRIBED_TO_TOPIC
        dg = c.call(DeleteGroupsRequest(groups_names=["g-v5", "nobody"]), 2).results
        assert [(r.group_id, r.error_code) for r in dg] == [("g-v5", NON_EMPTY_GROUP), ("nobody", GROUP_ID_NOT_FOUND)]
        leave = c.call(LeaveGroupRequest(group_id="g-v5", members=[LeaveGroupRequest.MemberIdentity(
            member_id=j.member_id)]), 3)
        assert leave.error_code == NONE and leave.members[0].error_code == NONE
        multi = c.call(OffsetFetchRequest(groups=[
            OffsetFetchRequest.OffsetFetchRequestGroup(group_id="g-v5", topics=None),
            OffsetFetchRequest.OffsetFetchRequestGroup(group_id="other", topics=[
                OffsetFetchRequest.OffsetFetchRequestTopics(name=TOPIC, partition_indexes=[0])])]), 8)
        assert [(t.name, p.partition_index, p.committed_offset) for t in multi.groups[0].topics
                for p in t.partitions] == [(TOPIC, 1, 3)]
        assert multi.groups[1].topics[0].partitions[0].committed_offset == -1
        dg = c.call(DeleteGroupsRequest(groups_names=["g-v5"]), 2).results
        assert dg[0].error_code == NONE


def test_offsets_topic_not_in_metadata(broker: MiniBroker) -> None:
    with Conn(broker, client_id="wire") as c:
        md = c.call(MetadataRequest(topics=None), 12)
        names = {t.name for t in md.topics}
        assert TOPIC in names and "__consumer_offsets" not in names


def test_coordinator_gauges(broker: MiniBroker) -> None:
    with Conn(broker, client_id="wire") as c:
        j = _join(c, "g-metrics", 0)
        assert j.error_code == NONE
    completing = broker.metrics.gauge_value("kafka_coordinator_group_GroupMetadataManager_NumGroupsCompletingRebalance")
    delayed = broker.metrics.gauge_value("kafka_server_DelayedOperationPurgatory_NumDelayedOperations",
                                         delayedOperation="Heartbeat")
    assert completing is not None and completing >= 1
    assert delayed is not None and delayed >= 1

"""AdminClient's consumer-group calls on a MockSelector and MockTime: the coordinator found again when it
moved, assignments decoded, group errors mapped, OffsetFetch for all partitions refused below v2."""

from __future__ import annotations

import uuid

import pytest

from pykafka_client import TopicPartition
from pykafka_client.consumer.assignors import Assignment
from pykafka_client.consumer.consumer_protocol import serialize_assignment
from pykafka_client.errors import GroupNotEmptyError, UnsupportedVersionError
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import (
    ConsumerGroupDescribeResponse,
    DeleteGroupsResponse,
    DescribeGroupsResponse,
    FindCoordinatorResponse,
    OffsetFetchResponse,
)
from tests.doubles.mock_selector import SentRequest
from tests.doubles.responses import api_versions_response
from tests.unit.network.test_admin_client import BROKERS, Env

NOT_COORDINATOR = 16
GROUP_NOT_EMPTY = 68


def coordinator(r: SentRequest) -> FindCoordinatorResponse:
    node = BROKERS[1]
    return FindCoordinatorResponse(coordinators=[
        FindCoordinatorResponse.Coordinator(key=k, node_id=node.id, host=node.host, port=node.port)
        for k in r.body.coordinator_keys
    ])


def test_describe_finds_the_coordinator_again_when_it_moved_and_decodes_assignments() -> None:
    env = Env()
    env.responders[ApiKey.FIND_COORDINATOR] = coordinator
    assignment = serialize_assignment(Assignment([TopicPartition("t", 1), TopicPartition("t", 0)]))
    answers = [
        DescribeGroupsResponse(groups=[DescribeGroupsResponse.DescribedGroup(group_id="g", error_code=NOT_COORDINATOR)]),
        DescribeGroupsResponse(groups=[DescribeGroupsResponse.DescribedGroup(
            group_id="g", group_state="Stable", protocol_type="consumer", protocol_data="range",
            members=[DescribeGroupsResponse.DescribedGroupMember(
                member_id="m-1", client_id="c", client_host="/10.0.0.1", member_assignment=assignment)],
        )]),
    ]
    env.responders[ApiKey.DESCRIBE_GROUPS] = lambda r: answers.pop(0)
    described = env.admin.describe_consumer_groups(["g"], timeout=5)["g"]
    # one lookup for ConsumerGroupDescribe ("g" is not a consumer group), then DescribeGroups' and its re-lookup
    assert len(env.sent(ApiKey.FIND_COORDINATOR)) == 3
    assert all(r.destination == str(BROKERS[1].id) for r in env.sent(ApiKey.DESCRIBE_GROUPS))
    assert described.state == "Stable" and described.partition_assignor == "range" and described.is_active
    assert described.members[0].assignment == [TopicPartition("t", 0), TopicPartition("t", 1)]
    assert described.coordinator == BROKERS[1]


def test_delete_of_a_group_with_members_raises_group_not_empty() -> None:
    env = Env()
    env.responders[ApiKey.FIND_COORDINATOR] = coordinator
    env.responders[ApiKey.DELETE_GROUPS] = lambda r: DeleteGroupsResponse(
        results=[DeleteGroupsResponse.DeletableGroupResult(group_id="g", error_code=GROUP_NOT_EMPTY)]
    )
    with pytest.raises(GroupNotEmptyError, match="'g'"):
        env.admin.delete_consumer_groups(["g"], timeout=5)


def test_all_offsets_of_a_group_need_offset_fetch_v2() -> None:
    env = Env(api_versions=api_versions_response({ApiKey.OFFSET_FETCH: (0, 1), ApiKey.FIND_COORDINATOR: (0, 2)}))
    env.responders[ApiKey.FIND_COORDINATOR] = lambda r: FindCoordinatorResponse(
        node_id=BROKERS[0].id, host=BROKERS[0].host, port=BROKERS[0].port
    )
    env.responders[ApiKey.OFFSET_FETCH] = lambda r: OffsetFetchResponse(topics=[OffsetFetchResponse.OffsetFetchResponseTopic(
        name="t", partitions=[OffsetFetchResponse.OffsetFetchResponsePartition(partition_index=0, committed_offset=7),
                              OffsetFetchResponse.OffsetFetchResponsePartition(partition_index=1, committed_offset=-1)],
    )])
    with pytest.raises(UnsupportedVersionError, match="name the partitions"):
        env.admin.list_consumer_group_offsets("g", timeout=5)
    offsets = env.admin.list_consumer_group_offsets("g", [TopicPartition("t", 0), TopicPartition("t", 1)], timeout=5)
    assert {tp: o.offset for tp, o in offsets.items()} == {TopicPartition("t", 0): 7}
    [sent] = env.sent(ApiKey.OFFSET_FETCH)
    assert sent.api_version == 1 and sent.body.topics[0].partition_indexes == [0, 1]


def test_consumer_group_is_described_by_consumer_group_describe() -> None:
    """Java Admin.describeConsumerGroups (KIP-848): a consumer group comes from ConsumerGroupDescribe with its
    type, group epoch, members' epochs and current and target assignments; DescribeGroups is not sent."""
    env = Env()
    env.responders[ApiKey.FIND_COORDINATOR] = coordinator
    tid = uuid.UUID(int=5)

    def assignment(*parts: int) -> ConsumerGroupDescribeResponse.Assignment:
        return ConsumerGroupDescribeResponse.Assignment(topic_partitions=[
            ConsumerGroupDescribeResponse.TopicPartitions(topic_id=tid, topic_name="t", partitions=list(parts))])

    env.responders[ApiKey.CONSUMER_GROUP_DESCRIBE] = lambda r: ConsumerGroupDescribeResponse(groups=[
        ConsumerGroupDescribeResponse.DescribedGroup(
            group_id="g", group_state="Reconciling", group_epoch=4, assignment_epoch=4, assignor_name="uniform",
            members=[ConsumerGroupDescribeResponse.Member(
                member_id="m-1", member_epoch=3, client_id="c", client_host="/10.0.0.1",
                assignment=assignment(1, 0), target_assignment=assignment(0))])])
    d = env.admin.describe_consumer_groups(["g"], timeout=5)["g"]
    assert (d.type, d.state, d.group_epoch, d.target_assignment_epoch, d.partition_assignor) == (
        "consumer", "Reconciling", 4, 4, "uniform")
    [m] = d.members
    assert m.member_epoch == 3 and m.assignment == [TopicPartition("t", 0), TopicPartition("t", 1)]
    assert m.target_assignment == [TopicPartition("t", 0)]
    assert not env.sent(ApiKey.DESCRIBE_GROUPS)


def test_broker_without_consumer_group_describe_gets_describe_groups() -> None:
    """A broker before KIP-848 (no ConsumerGroupDescribe in ApiVersions): every group is classic."""
    env = Env(api_versions=api_versions_response({ApiKey.CONSUMER_GROUP_DESCRIBE: None}))
    env.responders[ApiKey.FIND_COORDINATOR] = coordinator
    env.responders[ApiKey.DESCRIBE_GROUPS] = lambda r: DescribeGroupsResponse(groups=[
        DescribeGroupsResponse.DescribedGroup(group_id="g", group_state="Empty", protocol_type="consumer")])
    d = env.admin.describe_consumer_groups(["g"], timeout=5)["g"]
    assert d.type == "classic" and d.state == "Empty"
    assert not env.sent(ApiKey.CONSUMER_GROUP_DESCRIBE)

"""The share-group offsets admin handlers (KIP-932): ``list_share_group_offsets`` (DescribeShareGroupOffsets),
``alter_share_group_offsets`` (AlterShareGroupOffsets) and ``delete_share_group_offsets`` (DeleteShareGroupOffsets)
build their requests and read their answers as Java's handlers do: a start offset of -1 is an uninitialized
partition, coordinator errors look the coordinator up again or retry, NON_EMPTY_GROUP and partition errors fail
the call. Through the generic driver against a MockSelector broker (MockTime)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from pykafka_client.admin.group_types import SharePartitionOffsetInfo
from pykafka_client.admin.handlers.alter_share_group_offsets import AlterShareGroupOffsetsHandler
from pykafka_client.admin.handlers.delete_share_group_offsets import DeleteShareGroupOffsetsHandler
from pykafka_client.admin.handlers.list_share_group_offsets import ListShareGroupOffsetsHandler
from pykafka_client.errors import GroupIdNotFoundError, GroupNotEmptyError, UnknownTopicOrPartitionError
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import (
    AlterShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsResponse,
    FindCoordinatorResponse,
)
from pykafka_client.structs import Node, TopicPartition
from tests.doubles.mock_selector import SentRequest
from tests.unit.network.test_admin_client import Env

NODE = Node(0, "127.0.0.1", 9092)
TOPIC_ID = uuid.UUID(int=5)
NOT_COORDINATOR, LOADING, UNKNOWN_TOPIC = 16, 14, 3
_D = DescribeShareGroupOffsetsResponse
_A = AlterShareGroupOffsetsResponse
_X = DeleteShareGroupOffsetsResponse


def _described(group: str, parts: list[tuple[int, int, int, int, int]],
               error: int = 0) -> DescribeShareGroupOffsetsResponse:
    """``parts``: (partition, start offset, leader epoch, lag, error code) of topic ``t``."""
    return _D(groups=[_D.DescribeShareGroupOffsetsResponseGroup(group_id=group, error_code=error, topics=[
        _D.DescribeShareGroupOffsetsResponseTopic(topic_name="t", topic_id=TOPIC_ID, partitions=[
            _D.DescribeShareGroupOffsetsResponsePartition(partition_index=p, start_offset=o, leader_epoch=e, lag=lag,
                                                          error_code=c) for p, o, e, lag, c in parts])])])


def _coordinator(r: SentRequest) -> FindCoordinatorResponse:
    return FindCoordinatorResponse(coordinators=[
        FindCoordinatorResponse.Coordinator(key=k, node_id=0, host="127.0.0.1", port=9092)
        for k in r.body.coordinator_keys])


def _env(api_key: int, *answers: Any) -> Env:
    """An Env whose group coordinator answers ``api_key`` with ``answers`` in turn (the last one repeated)."""
    env = Env()
    env.responders[ApiKey.FIND_COORDINATOR] = _coordinator
    queue = list(answers)
    env.responders[api_key] = lambda r: queue.pop(0) if len(queue) > 1 else queue[0]
    return env


# -- list ---------------------------------------------------------------------------------------------------------
def test_list_asks_for_every_partition_or_the_named_ones_grouped_by_topic() -> None:
    every = ListShareGroupOffsetsHandler(None).build_request(1, ["g"])
    assert [(g.group_id, g.topics) for g in every.groups] == [("g", None)]
    named = ListShareGroupOffsetsHandler([("t", 1), ("u", 0), ("t", 0)]).build_request(1, ["g"])
    assert [(t.topic_name, t.partitions) for t in named.groups[0].topics or []] == [("t", [1, 0]), ("u", [0])]


def test_list_reads_start_offsets_epochs_and_lags_with_minus_one_as_not_known() -> None:
    result = ListShareGroupOffsetsHandler(None).handle_response(NODE, ["g"], _described("g", [
        (0, 42, 3, 8, 0), (1, -1, -1, -1, 0), (2, 7, -1, -1, 0)]))
    assert result.completed == {"g": {TopicPartition("t", 0): SharePartitionOffsetInfo(42, 3, 8),
                                      TopicPartition("t", 1): None,
                                      TopicPartition("t", 2): SharePartitionOffsetInfo(7, None, None)}}


def test_list_fails_on_a_group_or_partition_error_and_looks_the_coordinator_up_again_when_it_moved() -> None:
    handler = ListShareGroupOffsetsHandler(None)
    missing = handler.handle_response(NODE, ["g"], _described("g", [], GroupIdNotFoundError.code))
    assert isinstance(missing.failed["g"], GroupIdNotFoundError) and "'g'" in str(missing.failed["g"])
    moved = handler.handle_response(NODE, ["g"], _described("g", [], NOT_COORDINATOR))
    assert list(moved.unmapped) == ["g"] and not moved.failed
    bad = handler.handle_response(NODE, ["g"], _described("g", [(0, -1, -1, -1, UNKNOWN_TOPIC)]))
    assert isinstance(bad.failed["g"], UnknownTopicOrPartitionError) and "t-0" in str(bad.failed["g"])


def test_list_through_the_driver_retries_a_loading_coordinator_then_answers() -> None:
    env = _env(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, _described("g", [], LOADING), _described("g", [(0, 9, 1, 4, 0)]))
    assert env.admin.list_share_group_offsets("g", [("t", 0)], timeout=5) == {
        TopicPartition("t", 0): SharePartitionOffsetInfo(9, 1, 4)}
    sent = env.sent(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS)
    assert len(sent) == 2 and sent[-1].api_version == 1
    env.admin.close()


# -- alter --------------------------------------------------------------------------------------------------------
def _altered(code: int = 0, partition_codes: tuple[int, ...] = (0,)) -> AlterShareGroupOffsetsResponse:
    return _A(error_code=code, responses=[_A.AlterShareGroupOffsetsResponseTopic(topic_name="t", partitions=[
        _A.AlterShareGroupOffsetsResponsePartition(partition_index=i, error_code=c)
        for i, c in enumerate(partition_codes)])])


def test_alter_sends_each_topics_start_offsets() -> None:
    request = AlterShareGroupOffsetsHandler({"t": [(0, 5), (1, 6)], "u": [(0, 0)]}).build_request(0, ["g"])
    assert request.group_id == "g"
    assert [(t.topic_name, [(p.partition_index, p.start_offset) for p in t.partitions]) for t in request.topics] == [
        ("t", [(0, 5), (1, 6)]), ("u", [(0, 0)])]


def test_alter_fails_a_non_empty_group_and_a_partition_error_and_completes_otherwise() -> None:
    handler = AlterShareGroupOffsetsHandler({"t": [(0, 5)]})
    refused = handler.handle_response(NODE, ["g"], _altered(GroupNotEmptyError.code))
    assert isinstance(refused.failed["g"], GroupNotEmptyError) and "share group 'g'" in str(refused.failed["g"])
    bad = handler.handle_response(NODE, ["g"], _altered(0, (0, UNKNOWN_TOPIC)))
    assert isinstance(bad.failed["g"], UnknownTopicOrPartitionError) and "t-1" in str(bad.failed["g"])
    assert handler.handle_response(NODE, ["g"], _altered()).completed == {"g": None}


def test_alter_through_the_driver_raises_the_brokers_refusal() -> None:
    env = _env(ApiKey.ALTER_SHARE_GROUP_OFFSETS, _altered(GroupNotEmptyError.code))
    with pytest.raises(GroupNotEmptyError):
        env.admin.alter_share_group_offsets("g", {TopicPartition("t", 0): 3}, timeout=5)
    [sent] = env.sent(ApiKey.ALTER_SHARE_GROUP_OFFSETS)
    assert [(t.topic_name, [(p.partition_index, p.start_offset) for p in t.partitions]) for t in sent.body.topics] == [
        ("t", [(0, 3)])]
    env.admin.close()


def test_alter_checks_its_argument_and_sends_nothing_for_no_offsets() -> None:
    env = _env(ApiKey.ALTER_SHARE_GROUP_OFFSETS, _altered())
    with pytest.raises(TypeError, match=r"alter_share_group_offsets.*mapping"):
        env.admin.alter_share_group_offsets("g", [("t", 0)])  # type: ignore[arg-type]
    env.admin.alter_share_group_offsets("g", {})
    assert env.sent(ApiKey.ALTER_SHARE_GROUP_OFFSETS) == []
    env.admin.close()


# -- delete -------------------------------------------------------------------------------------------------------
def _deleted(code: int = 0, topic_code: int = 0) -> DeleteShareGroupOffsetsResponse:
    return _X(error_code=code, responses=[_X.DeleteShareGroupOffsetsResponseTopic(topic_name="t", error_code=topic_code)])


def test_delete_sends_the_topics_once_each_and_reads_group_and_topic_errors() -> None:
    handler = DeleteShareGroupOffsetsHandler(["t", "u"])
    assert [t.topic_name for t in handler.build_request(0, ["g"]).topics] == ["t", "u"]
    refused = handler.handle_response(NODE, ["g"], _deleted(GroupNotEmptyError.code))
    assert isinstance(refused.failed["g"], GroupNotEmptyError)
    moved = handler.handle_response(NODE, ["g"], _deleted(NOT_COORDINATOR))
    assert list(moved.unmapped) == ["g"]
    bad = handler.handle_response(NODE, ["g"], _deleted(0, UNKNOWN_TOPIC))
    assert isinstance(bad.failed["g"], UnknownTopicOrPartitionError) and "'t'" in str(bad.failed["g"])
    assert handler.handle_response(NODE, ["g"], _deleted()).completed == {"g": None}


def test_delete_through_the_driver_dedupes_topics_and_rejects_a_bare_string() -> None:
    env = _env(ApiKey.DELETE_SHARE_GROUP_OFFSETS, _deleted())
    env.admin.delete_share_group_offsets("g", ["t", "t"], timeout=5)
    assert [[t.topic_name for t in r.body.topics] for r in env.sent(ApiKey.DELETE_SHARE_GROUP_OFFSETS)] == [["t"]]
    with pytest.raises(TypeError, match=r"delete_share_group_offsets.*topic names"):
        env.admin.delete_share_group_offsets("g", "t")
    env.admin.close()

"""The share-group offsets admin APIs (KIP-932, to the group's coordinator): DescribeShareGroupOffsets (key 90),
AlterShareGroupOffsets (key 91) and DeleteShareGroupOffsets (key 92). The group coordinator knows which share
partitions of the group have state (its ShareGroupStatePartitionMetadata, :mod:`mini_broker.share.coordinator`) and
acts on each at its share coordinator (``__share_group_state``), whichever broker leads the topic partition: a
single broker and a cluster take the same path.

* Describe: per group, each share partition's start offset (-1: the group has not initialized it), leader epoch and
  (v1, KIP-1226) lag: the records between the start offset and the high watermark (asked of the partition's leader)
  that are not done (acknowledged or archived in flight: the share coordinator's delivery-complete count), -1 when
  not known; of the topics named (null: every share partition the group has, of the
  topics the principal may describe). DESCRIBE on the group and on each named topic is needed.
* Alter: set the start offsets of an EMPTY group's share partitions (NON_EMPTY_GROUP while it has members): their
  state starts afresh at a new state epoch (InitializeShareGroupState), so their leaders drop the old one and the
  next fetch reads from the new start offset. A group id no group holds
  becomes an empty share group first (Kafka 4.2), so offsets may be set before the group is first used. READ on the
  group and on each topic is needed.
* Delete: delete the state of an EMPTY group's share partitions of whole topics (DeleteShareGroupState); the next
  fetch starts them at ``share.auto.offset.reset``. DELETE on the group and READ on each topic are needed.

A group id that is not a share group here (or is a consumer or classic group's) is GROUP_ID_NOT_FOUND, the group without its ACL GROUP_AUTHORIZATION_FAILED;
a topic without its ACL is TOPIC_AUTHORIZATION_FAILED, one that does not exist (or a partition it does not have)
UNKNOWN_TOPIC_OR_PARTITION, for it alone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from mini_broker.network.request_channel import Request
from mini_broker.server.api_error import error_code, error_message
from mini_broker.server.apis.share_api_util import other_group_type, share_groups
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from mini_broker.server.metadata_cache import TopicMetadata
from mini_broker.share.group import ShareGroupState
from mini_broker.share.state_admin import StateSummary
from pykafka_client.errors import (
    GroupAuthorizationFailedError,
    GroupIdNotFoundError,
    GroupNotEmptyError,
    InvalidRequestError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from pykafka_client.errors_base import KafkaError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
)
from pykafka_client.structs import TopicPartition

_log = logging.getLogger(__name__)

_Describe = DescribeShareGroupOffsetsResponse
_Partition = DescribeShareGroupOffsetsResponse.DescribeShareGroupOffsetsResponsePartition
_Alter = AlterShareGroupOffsetsResponse
_Delete = DeleteShareGroupOffsetsResponse
E = TypeVar("E")


def _unknown_partition(topic: TopicMetadata, partition: int) -> str:
    return (f"partition {topic.name}-{partition} does not exist: the topic has {topic.num_partitions} partitions "
            f"(0..{topic.num_partitions - 1})")


def _topic(apis: KafkaApis, request: Request, operation: AclOperation,
           name: str) -> tuple[TopicMetadata | None, tuple[int, str] | None]:
    """The topic ``name`` and None, or None and its error: TOPIC_AUTHORIZATION_FAILED without ``operation`` on it
    (asked first, as Kafka does, so that a name does not tell whether the topic exists), UNKNOWN_TOPIC_OR_PARTITION
    when it does not exist."""
    if not apis.broker.auth(request).topic(operation, name):
        return None, (int(TopicAuthorizationFailedError.code),
                      f"{operation.name} on topic {name} is not allowed for this principal: ask for an ACL granting it")
    found = apis.broker.metadata_cache.get_topic(name)
    if found is None:
        return None, (int(UnknownTopicOrPartitionError.code),
                      f"topic {name} does not exist on this broker: check the name or create it")
    return found, None


def group_error(apis: KafkaApis, request: Request, group_id: str, operation: AclOperation, verb: str,
                must_be_empty: bool, create: bool = False) -> tuple[int, str | None] | None:
    """The group-level error of a share-group offsets request (None: go ahead); ``create``: a group id no group
    holds becomes an empty share group."""
    if not apis.broker.auth(request).group(operation, group_id):
        return int(GroupAuthorizationFailedError.code), (f"{operation.name} on group {group_id} is not allowed for "
                                                         f"this principal: ask for an ACL granting it")
    groups = share_groups(apis)
    inactive = groups.inactive_error()
    if inactive is not None:
        return inactive, None
    other = None if groups.is_share_group(group_id) else other_group_type(apis, group_id)
    if other is not None:
        return int(GroupIdNotFoundError.code), f"group {group_id} is a {other} group, not a share group"
    if create:
        groups.create_empty_group(group_id)
    group = groups.describe(group_id)
    if group is None:
        return int(GroupIdNotFoundError.code), f"group {group_id} is not a share group here"
    if must_be_empty and group.state is not ShareGroupState.EMPTY:
        return int(GroupNotEmptyError.code), (f"share group {group_id} has {len(group.members)} member(s): stop its "
                                              f"consumers before you {verb} its offsets")
    return None


def _each_group(group_ids: list[str], check: Callable[[str], tuple[int, str | None] | None],
                answer: Callable[[str], E], failed: Callable[[str, int, str | None], E]) -> list[E]:
    out: list[E] = []
    for group_id in group_ids:
        error = check(group_id)
        out.append(answer(group_id) if error is None else failed(group_id, *error))
    return out


# -- DescribeShareGroupOffsets --------------------------------------------------------------------------------
def handle_describe(apis: KafkaApis, request: Request) -> DescribeShareGroupOffsetsResponse:
    body = request.body
    assert isinstance(body, DescribeShareGroupOffsetsRequest)
    metadata = apis.broker.metadata_cache
    auth = apis.broker.auth(request)
    groups = share_groups(apis)
    by_group = {g.group_id: g for g in body.groups}

    def partition(topic: str, index: int, state: StateSummary | KafkaError | None) -> _Partition:
        """A share partition's answer; ``state``: its summary at its share coordinator (None: the group has not
        initialized it)."""
        if isinstance(state, KafkaError):
            return failed_partition(index, error_code(state), error_message(state) or str(state))
        if state is None:
            return _Partition(partition_index=index, start_offset=-1, leader_epoch=-1, lag=-1)
        latest = apis.broker.latest_offset(TopicPartition(topic, index))
        if latest is None:  # the partition's leader did not answer: the lag is not known
            return _Partition(partition_index=index, start_offset=state.start_offset,
                              leader_epoch=state.leader_epoch, lag=-1)
        end, epoch = latest
        # the leader epoch the share partition's state was last read or written at (a single broker's leader does
        # not fence its own state: its topic partition's)
        return _Partition(partition_index=index, start_offset=state.start_offset,
                          leader_epoch=state.leader_epoch if state.leader_epoch >= 0 else epoch,
                          lag=max(0, end - state.start_offset - state.delivery_complete_count))

    def failed_partition(index: int, code: int, message: str) -> _Partition:
        return _Partition(partition_index=index, start_offset=-1, leader_epoch=-1, lag=-1, error_code=code,
                          error_message=message)

    def answer(group_id: str) -> _Describe.DescribeShareGroupOffsetsResponseGroup:
        states = groups.describe_offsets(group_id)
        asked = by_group[group_id].topics
        topics: list[_Describe.DescribeShareGroupOffsetsResponseTopic] = []
        if asked is None:  # every share partition the group has, of the topics that exist and may be described
            by_topic: dict[str, tuple[TopicMetadata, list[int]]] = {}
            for (topic_id, p), state in states.items():
                topic = metadata.topic_by_id(topic_id)
                if state is not None and topic is not None and auth.topic(AclOperation.DESCRIBE, topic.name):
                    by_topic.setdefault(topic.name, (topic, []))[1].append(p)
            for name in sorted(by_topic):
                topic, parts = by_topic[name]
                topics.append(_Describe.DescribeShareGroupOffsetsResponseTopic(
                    topic_name=name, topic_id=topic.topic_id,
                    partitions=[partition(name, p, states[(topic.topic_id, p)]) for p in sorted(parts)]))
        for t in asked or []:
            found, error = _topic(apis, request, AclOperation.DESCRIBE, t.topic_name)
            if found is None:
                assert error is not None
                topics.append(_Describe.DescribeShareGroupOffsetsResponseTopic(topic_name=t.topic_name, partitions=[
                    failed_partition(p, *error) for p in t.partitions]))
                continue
            topics.append(_Describe.DescribeShareGroupOffsetsResponseTopic(
                topic_name=t.topic_name, topic_id=found.topic_id, partitions=[
                    partition(found.name, p, states.get((found.topic_id, p))) if 0 <= p < found.num_partitions
                    else failed_partition(p, int(UnknownTopicOrPartitionError.code), _unknown_partition(found, p))
                    for p in t.partitions]))
        return _Describe.DescribeShareGroupOffsetsResponseGroup(group_id=group_id, topics=topics)

    def failed(group_id: str, code: int, message: str | None) -> _Describe.DescribeShareGroupOffsetsResponseGroup:
        return _Describe.DescribeShareGroupOffsetsResponseGroup(group_id=group_id, error_code=code,
                                                                error_message=message)

    return _Describe(throttle_time_ms=0, groups=_each_group(
        list(by_group), lambda g: group_error(apis, request, g, AclOperation.DESCRIBE, "describe", False),
        answer, failed))


# -- AlterShareGroupOffsets -----------------------------------------------------------------------------------
def handle_alter(apis: KafkaApis, request: Request) -> AlterShareGroupOffsetsResponse:
    body = request.body
    assert isinstance(body, AlterShareGroupOffsetsRequest)
    group_id = body.group_id
    error = group_error(apis, request, group_id, AclOperation.READ, "alter", True, create=True)
    if error is not None:
        code, message = error
        # every partition carries the group's error too (Java's admin reads the partitions)
        return _Alter(throttle_time_ms=0, error_code=code, error_message=message, responses=[
            _Alter.AlterShareGroupOffsetsResponseTopic(topic_name=t.topic_name, partitions=[
                _Alter.AlterShareGroupOffsetsResponsePartition(partition_index=p.partition_index, error_code=code,
                                                               error_message=message) for p in t.partitions])
            for t in body.topics])
    groups = share_groups(apis)
    responses = []
    for t in body.topics:
        found, topic_error = _topic(apis, request, AclOperation.READ, t.topic_name)
        results = []
        for p in t.partitions:
            code, message = 0, None
            if found is None:
                assert topic_error is not None
                code, message = topic_error
            elif not 0 <= p.partition_index < found.num_partitions:
                code, message = int(UnknownTopicOrPartitionError.code), _unknown_partition(found, p.partition_index)
            elif p.start_offset < 0:
                code, message = int(InvalidRequestError.code), (
                    f"start offset {p.start_offset} of {t.topic_name}-{p.partition_index} is negative: give an "
                    f"offset of the log")
            else:
                try:
                    groups.alter_offset(group_id, (found.topic_id, p.partition_index), p.start_offset)
                except KafkaError as e:
                    code, message = error_code(e), error_message(e) or str(e)
            if found is not None and code == 0:
                _log.info("event=share_group_offset_altered group=%s topic=%s partition=%d start_offset=%d",
                          group_id, t.topic_name, p.partition_index, p.start_offset)
            results.append(_Alter.AlterShareGroupOffsetsResponsePartition(
                partition_index=p.partition_index, error_code=code, error_message=message))
        topic_response = _Alter.AlterShareGroupOffsetsResponseTopic(topic_name=t.topic_name, partitions=results)
        if found is not None:
            topic_response.topic_id = found.topic_id
        responses.append(topic_response)
    return _Alter(throttle_time_ms=0, responses=responses)


# -- DeleteShareGroupOffsets ----------------------------------------------------------------------------------
def handle_delete(apis: KafkaApis, request: Request) -> DeleteShareGroupOffsetsResponse:
    body = request.body
    assert isinstance(body, DeleteShareGroupOffsetsRequest)
    group_id = body.group_id
    error = group_error(apis, request, group_id, AclOperation.DELETE, "delete", True)
    if error is not None:
        return _Delete(throttle_time_ms=0, error_code=error[0], error_message=error[1])
    groups = share_groups(apis)
    responses = []
    for t in body.topics:
        found, topic_error = _topic(apis, request, AclOperation.READ, t.topic_name)
        if found is None:
            assert topic_error is not None
            responses.append(_Delete.DeleteShareGroupOffsetsResponseTopic(
                topic_name=t.topic_name, error_code=topic_error[0], error_message=topic_error[1]))
            continue
        try:
            deleted = groups.delete_offsets(group_id, found.topic_id)
        except KafkaError as e:
            responses.append(_Delete.DeleteShareGroupOffsetsResponseTopic(
                topic_name=t.topic_name, topic_id=found.topic_id, error_code=error_code(e),
                error_message=error_message(e) or str(e)))
            continue
        _log.info("event=share_group_offsets_deleted group=%s topic=%s partitions=%d", group_id, t.topic_name,
                  deleted)
        responses.append(_Delete.DeleteShareGroupOffsetsResponseTopic(topic_name=t.topic_name,
                                                                      topic_id=found.topic_id))
    return _Delete(throttle_time_ms=0, responses=responses)


DESCRIBE_API = ApiSpec(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 0, 1, handle_describe)
ALTER_API = ApiSpec(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, 0, handle_alter)
DELETE_API = ApiSpec(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, 0, handle_delete)

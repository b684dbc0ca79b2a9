"""Shared by the share group API modules (KIP-932): reaching this broker's share groups and share partitions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from mini_broker.network.request_channel import Request
from mini_broker.server.apis.group_api_util import consumer_group_coordinator, group_coordinator
from mini_broker.server.kafka_apis import KafkaApis
from mini_broker.share.coordinator import ShareGroupCoordinator
from mini_broker.share.group_configs import INT_KEYS, SHARE_GROUP_CONFIG_KEYS
from mini_broker.share.partition_manager import AckBatch, PendingWrite, SharePartitionManager, TopicIdPartition
from pykafka_client.errors import GroupAuthorizationFailedError, InvalidRequestError
from pykafka_client.protocol.acl import AclOperation

T = TypeVar("T")
#: the GROUP config keys the share groups serve (the others are the consumer groups')
SHARE_CONFIG_PREFIX = "share."
#: the share group configs whose type is STRING
SHARE_STRING_KEYS = frozenset(SHARE_GROUP_CONFIG_KEYS) - INT_KEYS


def share_groups(apis: KafkaApis) -> ShareGroupCoordinator:
    return _created(apis.broker.share_groups, "share groups")


def share_partitions(apis: KafkaApis) -> SharePartitionManager:
    return _created(apis.broker.share_partitions, "share partitions")


def other_group_type(apis: KafkaApis, group_id: str) -> str | None:
    """The type of the group that holds ``group_id`` when it is not a share group ("consumer", "classic"), else
    None (a share group, or no group)."""
    if consumer_group_coordinator(apis).is_consumer_group(group_id):
        return "consumer"
    _, classic = group_coordinator(apis).handle_describe_group(group_id)
    return "classic" if classic.state and classic.state != "Dead" else None


def _created(component: T | None, what: str) -> T:
    if component is None:
        raise RuntimeError(f"the broker context has no {what}: the broker must create them before it serves "
                           f"requests")
    return component


class AckBatchLike(Protocol):
    first_offset: int
    last_offset: int
    acknowledge_types: list[int]


def acknowledge(partitions: SharePartitionManager, group_id: str, member_id: str, tp: TopicIdPartition,
                batches: Sequence[AckBatchLike], deferred: list[PendingWrite] | None = None) -> tuple[int, str | None]:
    """A ShareFetch's or ShareAcknowledge's acknowledgement batches of one partition, applied (their state write
    added to ``deferred`` when given: see :meth:`SharePartitionManager.acknowledge`)."""
    return partitions.acknowledge(group_id, member_id, tp, [
        AckBatch(b.first_offset, b.last_offset, tuple(b.acknowledge_types)) for b in batches], deferred)


def share_request_error(apis: KafkaApis, request: Request, group_id: str | None,
                        member_id: str | None) -> tuple[int, str] | None:
    """The top-level error of a ShareFetch / ShareAcknowledge before its session is looked at, else None."""
    if not group_id or not member_id:
        return int(InvalidRequestError.code), "GroupId and MemberId must be set on a share request"
    if not apis.broker.auth(request).group(AclOperation.READ, group_id):
        return int(GroupAuthorizationFailedError.code), (f"READ on group {group_id} is not allowed for this "
                                                         f"principal: ask for an ACL granting it")
    return None

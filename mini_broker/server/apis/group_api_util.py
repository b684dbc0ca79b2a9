"""Shared by the group API modules: reaching this broker's group coordinator."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from mini_broker.group.consumer import ConsumerGroupCoordinator
from mini_broker.group.group_coordinator import GroupCoordinator
from mini_broker.group.group_requests import CommittedOffset
from mini_broker.network.request_channel import Request
from mini_broker.security.auth_helper import RequestAuth
from mini_broker.server.context import BrokerContext
from mini_broker.server.kafka_apis import KafkaApis
from pykafka_client.errors import TopicAuthorizationFailedError, UnknownTopicOrPartitionError
from pykafka_client.protocol.acl import AclOperation


def group_coordinator(apis: KafkaApis) -> GroupCoordinator:
    """The coordinator the broker owns (created and started before the broker serves requests, shut down
    with it: then it answers COORDINATOR_NOT_AVAILABLE)."""
    coordinator = apis.broker.group_coordinator
    if coordinator is None:
        raise RuntimeError("the broker context has no group coordinator: the broker must create it before "
                           "it serves requests")
    return coordinator


def consumer_group_coordinator(apis: KafkaApis) -> ConsumerGroupCoordinator:
    """The KIP-848 consumer groups, hosted on the group coordinator's runtime (the broker creates both)."""
    consumer_groups = group_coordinator(apis).consumer_groups
    if consumer_groups is None:
        raise RuntimeError("the group coordinator hosts no consumer groups: the broker must create them before "
                           "it serves requests")
    return consumer_groups


def route_consumer_group_commit(apis: KafkaApis, group_id: str, member: tuple[str, int, str | None],
                                to_commit: dict[tuple[str, int], CommittedOffset], errors: dict[tuple[str, int], int],
                                api_version: int | None = None
                                ) -> tuple[tuple[str, int, str | None], dict[tuple[str, int], CommittedOffset]]:
    """An (Txn)OffsetCommit's ``member`` (member id, generation or member epoch, instance id) and its partitions
    to commit, as the classic coordinator is to see them: unchanged for a classic group; for a KIP-848 consumer
    group the member epoch is checked here (on failure every partition gets the error in ``errors`` and nothing
    is committed), and the offsets are then stored as a commit from outside a group (the classic coordinator
    keeps a consumer group's offsets). ``api_version``: an OffsetCommit's (below v9 a consumer-protocol member gets
    UNSUPPORTED_VERSION, as Kafka answers); None for a TxnOffsetCommit."""
    member_id, generation, _ = member
    error = consumer_group_coordinator(apis).validate_offset_commit(group_id, member_id, generation, api_version)
    if error is None:
        return member, to_commit
    if error != 0:
        errors.update({tp: error for tp in to_commit})
        to_commit = {}
    return ("", -1, None), to_commit


def split_unknown_partitions(broker: BrokerContext, auth: RequestAuth, topics: Sequence[Any],
                             committed: Callable[[Any], CommittedOffset], denied: int = 0
                             ) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], CommittedOffset]]:
    """The OffsetCommit / TxnOffsetCommit request partitions: ``denied`` (a group or transactional id
    authorization error) for all when set; else TOPIC_AUTHORIZATION_FAILED for topics the principal may not READ,
    UNKNOWN_TOPIC_OR_PARTITION for those the broker does not have, ``committed(partition)`` for the others."""
    errors: dict[tuple[str, int], int] = {}
    to_commit: dict[tuple[str, int], CommittedOffset] = {}
    readable = auth.topics(AclOperation.READ, (t.name for t in topics)) if not denied else set()
    for topic in topics:
        for p in topic.partitions:
            tp = (topic.name, p.partition_index)
            if denied:
                errors[tp] = denied
            elif topic.name not in readable:
                errors[tp] = TopicAuthorizationFailedError.code
            elif not broker.metadata_cache.contains_partition(topic.name, p.partition_index):
                errors[tp] = UnknownTopicOrPartitionError.code
            else:
                to_commit[tp] = committed(p)
    return errors, to_commit


def client_host(request: Request) -> str:
    """How Kafka shows a member's host in DescribeGroups: ``/<ip>``."""
    return "/" + request.context.client_address


def client_id(request: Request) -> str:
    return request.context.client_id or ""

"""Shared by the group API modules: reaching this broker's group coordinator."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from mini_broker.group.consumer import ConsumerGroupCoordinator
from mini_broker.group.group_coordinator import GroupCoordinator
from mini_broker.group.group_requests import CommittedOffset
from mini_broker.network.request_channel import Request
from mini_broker.server.context import BrokerContext
from mini_broker.server.kafka_apis import KafkaApis
from pykafka_client.errors import UnknownTopicOrPartitionError


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


def split_unknown_partitions(broker: BrokerContext, topics: Iterable[Any],
                             committed: Callable[[Any], CommittedOffset]
                             ) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], CommittedOffset]]:
    """The OffsetCommit / TxnOffsetCommit request partitions: UNKNOWN_TOPIC_OR_PARTITION for those the broker
    does not have, ``committed(partition)`` for the others."""
    errors: dict[tuple[str, int], int] = {}
    to_commit: dict[tuple[str, int], CommittedOffset] = {}
    for topic in topics:
        for p in topic.partitions:
            tp = (topic.name, p.partition_index)
            if not broker.metadata_cache.contains_partition(topic.name, p.partition_index):
                errors[tp] = UnknownTopicOrPartitionError.code
            else:
                to_commit[tp] = committed(p)
    return errors, to_commit


def client_host(request: Request) -> str:
    """How Kafka shows a member's host in DescribeGroups: ``/<ip>``."""
    return "/" + request.context.client_address


def client_id(request: Request) -> str:
    return request.context.client_id or ""

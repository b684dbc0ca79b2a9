"""Which broker coordinates a key (Kafka: ``GroupCoordinator.partitionFor`` / ``TransactionStateManager.partitionFor``
and ``KafkaApis.getCoordinator``): the one place FindCoordinator, the coordinators and the partition leaders ask.

A group id's coordinator is the leader of ``__consumer_offsets`` partition ``partition_for(group_id, n)``, a
transactional id's the leader of ``__transaction_state`` partition ``partition_for(transactional_id, n)``
(:mod:`mini_broker.coordinator.partitioning`: Kafka's ``Utils.abs(key.hashCode) % n``), ``n`` the topic's partition
count (``offsets.topic.num.partitions`` / ``transaction.state.log.num.partitions`` when it was created, 50 by
default), so keys spread over the brokers leading those partitions as on Kafka.

Sans-IO: reads a :class:`~mini_broker.server.metadata_cache.MetadataCache` only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from mini_broker.coordinator.internal_topics import GROUP_KEY_TYPE, SHARE_KEY_TYPE, TRANSACTION_KEY_TYPE
from mini_broker.coordinator.internal_topics import INTERNAL_TOPIC_OF_KEY_TYPE as _TOPICS
from mini_broker.coordinator.partitioning import java_string_hash, partition_for
from mini_broker.server.metadata_cache import MetadataCache
from pykafka_client.errors import CoordinatorNotAvailableError, InvalidRequestError

__all__ = ["GROUP_KEY_TYPE", "INTERNAL_TOPIC_OF_KEY_TYPE", "SHARE_KEY_TYPE", "TRANSACTION_KEY_TYPE", "CoordinatorLookup",
           "coordinates", "coordinator_for", "java_string_hash", "partition_for"]

INTERNAL_TOPIC_OF_KEY_TYPE: Final = {key_type: t.name for key_type, t in _TOPICS.items()}


@dataclass(frozen=True)
class CoordinatorLookup:
    """The answer for one key: error 0 with the coordinator's node, or an error (node -1)."""

    error_code: int
    error_message: str | None
    node_id: int = -1
    host: str = ""
    port: int = -1
    #: the internal topic partition whose leader coordinates the key (-1: the topic does not exist yet)
    partition: int = -1


def coordinator_for(cache: MetadataCache, key_type: int, key: str,
                    listener_name: str | None = None) -> CoordinatorLookup:
    """The broker coordinating ``key`` on a cluster: the live leader of its internal topic partition, with its
    endpoint on ``listener_name`` (the listener the request came in on; None: the inter-broker one).
    COORDINATOR_NOT_AVAILABLE when the topic does not exist (the caller creates it), the partition has no live
    leader or the leader has no such listener (Kafka); INVALID_REQUEST for an unknown key type."""
    topic = INTERNAL_TOPIC_OF_KEY_TYPE.get(key_type)
    if topic is None:
        return CoordinatorLookup(InvalidRequestError.code, f"Unknown coordinator key type {key_type}")
    md = cache.get_topic(topic)
    if md is None:
        return CoordinatorLookup(CoordinatorNotAvailableError.code, f"{topic} does not exist yet; retry")
    partition = partition_for(key, md.num_partitions)
    reg = cache.partition_registration(topic, partition)
    leader = -1 if reg is None else int(reg["leader"])
    endpoint = None if leader < 0 else cache.live_broker_endpoint(leader, listener_name)
    if endpoint is None:
        return CoordinatorLookup(CoordinatorNotAvailableError.code,
                                 f"{topic}-{partition} has no live leader (a failover is in progress); retry",
                                 partition=partition)
    return CoordinatorLookup(0, None, leader, endpoint[0], endpoint[1], partition)


def coordinates(cache: MetadataCache, broker_id: int, key_type: int, key: str) -> bool:
    """Whether ``broker_id`` is the coordinator of ``key`` in this broker's view of the cluster."""
    return coordinator_for(cache, key_type, key).node_id == broker_id

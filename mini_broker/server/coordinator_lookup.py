"""Which broker coordinates a key (Kafka: ``GroupCoordinator.partitionFor`` / ``TransactionStateManager.partitionFor``
and ``KafkaApis.getCoordinator``): the one place FindCoordinator, the coordinators and the partition leaders ask.

A group id's coordinator is the leader of ``__consumer_offsets`` partition ``partition_for(group_id, n)``, a
transactional id's the leader of ``__transaction_state`` partition ``partition_for(transactional_id, n)``, with
Kafka's ``Utils.abs(key.hashCode) % n`` (Java's ``String.hashCode``), so a key maps to the partition Kafka would
pick. mini_broker creates each internal topic with one partition (see docs/ARCHITECTURE.md "Cluster and
replication"), so today every key maps to partition 0; the rule stays general. A share partition's state
(key type 2, SHARE: ``group:topicId:partition``, :func:`share_key`) is in ``__share_group_state``, created with
``share.coordinator.state.topic.num.partitions`` partitions (:mod:`mini_broker.cluster.share_state`).

Sans-IO: reads a :class:`~mini_broker.server.metadata_cache.MetadataCache` only.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from typing import Final

from mini_broker.group.group_metadata_manager import GROUP_METADATA_TOPIC_NAME
from mini_broker.server.metadata_cache import MetadataCache
from mini_broker.share.share_coordinator import SHARE_GROUP_STATE_TOPIC_NAME
from mini_broker.transaction.transaction_log import TRANSACTION_STATE_TOPIC_NAME
from pykafka_client.errors import CoordinatorNotAvailableError, InvalidRequestError

GROUP_KEY_TYPE: Final = 0
TRANSACTION_KEY_TYPE: Final = 1
#: a share partition's state (KIP-932): key ``group:topicId:partition`` (:func:`share_key`)
SHARE_KEY_TYPE: Final = 2
INTERNAL_TOPIC_OF_KEY_TYPE: Final = {GROUP_KEY_TYPE: GROUP_METADATA_TOPIC_NAME,
                                     TRANSACTION_KEY_TYPE: TRANSACTION_STATE_TOPIC_NAME,
                                     SHARE_KEY_TYPE: SHARE_GROUP_STATE_TOPIC_NAME}


def share_key(key: tuple[str, uuid.UUID, int]) -> str:
    """The coordinator key of a share partition (Kafka's ``SharePartitionKey.asCoordinatorKey``: group id, the
    topic id as Kafka prints a ``Uuid`` (URL-safe base64, unpadded) and the partition, joined by ``:``)."""
    topic = base64.urlsafe_b64encode(key[1].bytes).rstrip(b"=").decode("ascii")
    return f"{key[0]}:{topic}:{key[2]}"


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode`` (UTF-16 code units, 32-bit signed overflow)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(key: str, num_partitions: int) -> int:
    """Kafka's ``Utils.abs(key.hashCode) % numPartitions`` (``Utils.abs`` maps Integer.MIN_VALUE to 0)."""
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions


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

"""Shared by the transaction API modules: reaching this broker's transaction coordinator, partitions a
request names that the broker does not host, PRODUCER_FENCED for versions that predate it."""

from __future__ import annotations

from collections.abc import Iterable

from mini_broker.server.kafka_apis import KafkaApis
from mini_broker.transaction.transaction_coordinator import TransactionCoordinator
from pykafka_client.errors import (
    InvalidProducerEpochError,
    OperationNotAttemptedError,
    ProducerFencedError,
    UnknownTopicOrPartitionError,
)
from pykafka_client.structs import TopicPartition


def transaction_coordinator(apis: KafkaApis) -> TransactionCoordinator:
    """The coordinator the broker owns (created and started before the broker serves requests)."""
    coordinator = apis.broker.transaction_coordinator
    if coordinator is None:
        raise RuntimeError("the broker context has no transaction coordinator: the broker must create it before "
                           "it serves requests")
    return coordinator


def unknown_partition_errors(apis: KafkaApis, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int] | None:
    """None when the broker hosts every partition; else Kafka's answer without asking the coordinator:
    UNKNOWN_TOPIC_OR_PARTITION for the unknown ones, OPERATION_NOT_ATTEMPTED for the others."""
    parts = list(partitions)
    unknown = {tp for tp in parts if not apis.broker.metadata_cache.contains_partition(tp.topic, tp.partition)}
    if not unknown:
        return None
    return {tp: UnknownTopicOrPartitionError.code if tp in unknown else OperationNotAttemptedError.code
            for tp in parts}


def fenced_for_version(error: int, version: int, first_version_with_fenced: int) -> int:
    """Versions older than the one that added PRODUCER_FENCED get INVALID_PRODUCER_EPOCH instead, which
    their clients handle the same way (Kafka's KafkaApis does this per API)."""
    if error == ProducerFencedError.code and version < first_version_with_fenced:
        return int(InvalidProducerEpochError.code)
    return error

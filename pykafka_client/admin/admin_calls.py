"""What every AdminClient call module shares: the broker error of a response's error code, and the check
that fresh metadata lists each asked-for partition."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from pykafka_client.errors import (
    UnknownTopicOrPartitionError,
    for_code,
)
from pykafka_client.errors_base import BrokerResponseError
from pykafka_client.network.cluster import Cluster
from pykafka_client.structs import TopicPartition


def broker_error(code: int, message: str | None, subject: str) -> BrokerResponseError:
    cls = for_code(code)
    return cls(f"{subject}: {message}" if message else subject)


def absent_partition_error(cluster: Cluster, tp: tuple[str, int]) -> UnknownTopicOrPartitionError | None:
    """The UnknownTopicOrPartitionError of partition ``tp`` when fresh metadata does not list it, else None."""
    topic, partition = tp
    if topic not in cluster.topics():
        return UnknownTopicOrPartitionError(
            f"topic {topic!r} does not exist (asked for partition {topic}-{partition}); "
            "create it first or check the name"
        )
    if cluster.partition((topic, partition)) is None:
        count = cluster.partition_count_for_topic(topic)
        return UnknownTopicOrPartitionError(
            f"partition {topic}-{partition} does not exist: topic {topic!r} has {count} partitions "
            f"(0..{(count or 1) - 1})"
        )
    return None


def raise_for_absent_partitions(cluster: Cluster, partitions: Iterable[tuple[str, int]]) -> None:
    """Raise UnknownTopicOrPartitionError for the first partition that fresh metadata does not list."""
    for tp in partitions:
        error = absent_partition_error(cluster, tp)
        if error is not None:
            raise error


def asked_partitions(topics: Iterable[Any], keys: Iterable[TopicPartition]) -> Iterator[tuple[TopicPartition, Any]]:
    """Each partition of a leader's per-topic answer (``name``, ``partitions`` with ``partition_index``) that
    was asked about in ``keys``, with its answer."""
    asked = set(keys)
    for t in topics:
        for p in t.partitions:
            tp = TopicPartition(t.name, p.partition_index)
            if tp in asked:
                yield tp, p

"""What every AdminClient call module shares: the broker error of a response's error code, and the check
that fresh metadata lists each asked-for partition."""

from __future__ import annotations

from collections.abc import Iterable

from pykafka_client.errors import (
    UnknownTopicOrPartitionError,
    for_code,
)
from pykafka_client.errors_base import BrokerResponseError
from pykafka_client.network.cluster import Cluster


def broker_error(code: int, message: str | None, subject: str) -> BrokerResponseError:
    cls = for_code(code)
    return cls(f"{subject}: {message}" if message else subject)


def raise_for_absent_partitions(cluster: Cluster, partitions: Iterable[tuple[str, int]]) -> None:
    """Raise UnknownTopicOrPartitionError for the first partition that fresh metadata does not list."""
    topics = cluster.topics()
    for topic, partition in partitions:
        if topic not in topics:
            raise UnknownTopicOrPartitionError(
                f"topic {topic!r} does not exist (asked for partition {topic}-{partition}); "
                "create it first or check the name"
            )
        if cluster.partition((topic, partition)) is None:
            count = cluster.partition_count_for_topic(topic)
            raise UnknownTopicOrPartitionError(
                f"partition {topic}-{partition} does not exist: topic {topic!r} has {count} partitions "
                f"(0..{(count or 1) - 1})"
            )

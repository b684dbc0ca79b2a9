"""Checks and normalisation of the arguments users pass to KafkaConsumer's public methods.

Done up front, before any state changes, as Java's KafkaConsumer does; each failure is an
IllegalArgumentError that names the bad value. Partitions may be given as TopicPartition or as
``(topic, partition)`` tuples; offsets as ints or OffsetAndMetadata.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping

from pykafka_client.consumer.rebalance_listener import ConsumerRebalanceListener
from pykafka_client.errors import IllegalArgumentError
from pykafka_client.structs import OffsetAndMetadata, TopicPartition
from pykafka_client.utils.arguments import list_argument


def to_ms(timeout: float | None, default_ms: int) -> int:
    """A public timeout in float seconds as config-style milliseconds (None: the default)."""
    if timeout is None:
        return default_ms
    if timeout < 0:
        raise IllegalArgumentError(f"timeout must not be negative: {timeout}")
    return int(timeout * 1000)


def topic_partitions(partitions: Iterable[tuple[str, int]]) -> list[TopicPartition]:
    return [TopicPartition(tp[0], tp[1]) for tp in partitions]


def check_listener(listener: object) -> None:
    if listener is not None and not isinstance(listener, ConsumerRebalanceListener):
        if not all(hasattr(listener, m) for m in ("on_partitions_revoked", "on_partitions_assigned")):
            raise IllegalArgumentError("listener must implement ConsumerRebalanceListener")


def subscription_pattern(
    topics: Collection[str] | re.Pattern[str] | None, pattern: str | re.Pattern[str] | None
) -> re.Pattern[str] | None:
    """The compiled pattern of a pattern subscription, or None for a subscription by names."""
    if isinstance(topics, re.Pattern):
        return topics
    if pattern is None:
        return None
    if topics is not None:
        raise IllegalArgumentError("give either topics or pattern, not both")
    if isinstance(pattern, re.Pattern):
        return pattern
    if not pattern or not isinstance(pattern, str):
        raise IllegalArgumentError("topic pattern to subscribe to cannot be empty")
    try:
        return re.compile(pattern)
    except re.error as e:
        raise IllegalArgumentError(f"invalid topic pattern {pattern!r}: {e}") from e


def topic_names(topics: Collection[str] | None) -> list[str]:
    """The names of a subscription by names (an empty list unsubscribes). TypeError for anything but a
    collection of str (a bare str is not taken as one topic: it could as well be a regex)."""
    names = list_argument(
        "subscribe", "topics", topics, str,
        "a list of topic names, e.g. ['orders'] (a bare str is not taken as one topic; use pattern= for a regex)",
    )
    for t in names:
        if not t.strip():
            raise IllegalArgumentError(f"topic collection to subscribe to cannot contain null or empty topic: {t!r}")
    return names


def partitions_to_assign(partitions: Collection[TopicPartition]) -> list[TopicPartition]:
    given = list_argument(
        "assign", "partitions", partitions, tuple, "a list of TopicPartition, e.g. [TopicPartition('orders', 0)]"
    )
    if any(len(tp) != 2 for tp in given):
        raise TypeError(f"assign() expects partitions as a list of TopicPartition(topic, partition), got {given!r}")
    tps = topic_partitions(given)
    for tp in tps:
        if not isinstance(tp.topic, str) or not tp.topic.strip():
            raise IllegalArgumentError(f"topic partitions to assign cannot have null or empty topic: {tp}")
        if not isinstance(tp.partition, int) or tp.partition < 0:
            raise IllegalArgumentError(f"invalid partition number in {tp}")
    return tps


def seek_offset(offset: int | OffsetAndMetadata) -> int:
    off = offset.offset if isinstance(offset, OffsetAndMetadata) else offset
    if not isinstance(off, int) or isinstance(off, bool) or off < 0:
        raise IllegalArgumentError(f"seek offset must not be a negative number: {off!r}")
    return off


def commit_offsets(
    offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
) -> dict[TopicPartition, OffsetAndMetadata]:
    out: dict[TopicPartition, OffsetAndMetadata] = {}
    for tp, om in offsets.items():
        tp2 = TopicPartition(tp[0], tp[1])
        if isinstance(om, OffsetAndMetadata):
            out[tp2] = om
        elif isinstance(om, int) and not isinstance(om, bool) and om >= 0:
            out[tp2] = OffsetAndMetadata(om)
        else:
            raise IllegalArgumentError(f"invalid offset {om!r} for {tp2}")
    return out


def target_times(timestamps: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
    query: dict[TopicPartition, int] = {}
    for tp, ts in timestamps.items():
        if not isinstance(ts, int) or ts < 0:
            raise IllegalArgumentError(f"the target time for partition {tp} is {ts}: it should be non-negative")
        query[TopicPartition(tp[0], tp[1])] = ts
    return query

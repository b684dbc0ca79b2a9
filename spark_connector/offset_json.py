"""Kafka-format JSON for offsets, partitions and timestamps, as Spark's Kafka source writes and reads it.

* partition offsets ``{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}`` (-2 earliest, -1 latest): the
  ``startingOffsets`` / ``endingOffsets`` options and every streaming offset (the next offset to read);
* partitions ``{"topicA":[0,1],"topicB":[2,4]}``: the ``assign`` option;
* partition timestamps ``{"topicA":{"0":1000}}`` (ms): ``startingOffsetsByTimestamp`` /
  ``endingOffsetsByTimestamp``.

Parse errors raise ``ValueError`` with Spark's text ("Expected e.g. ..., got ..."). Pure functions: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pykafka_client.structs import TopicPartition

#: -2 / -1 in an offsets JSON: resolve to the earliest / latest offset
EARLIEST = -2
LATEST = -1

#: a streaming offset as Spark stores it in the checkpoint: ``{topic: {"<partition>": offset}}``
OffsetDict = dict[str, dict[str, int]]

_OFFSETS_EXAMPLE = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
_PARTITIONS_EXAMPLE = '{"topicA":[0,1],"topicB":[0,1]}'
_TIMESTAMPS_EXAMPLE = ('{"topicA": {"0": 123456789, "1": 123456789}, '
                       '"topicB": {"0": 123456789, "1": 123456789}}')


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _load_object(text: str, example: str) -> dict[str, Any]:
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise ValueError(f"Expected e.g. {example}, got {text}")
    return parsed


def _partition_map(text: str, example: str) -> dict[TopicPartition, int]:
    out: dict[TopicPartition, int] = {}
    for topic, per_partition in _load_object(text, example).items():
        if not isinstance(per_partition, dict):
            raise ValueError(f"Expected e.g. {example}, got {text}")
        for partition, value in per_partition.items():
            try:
                number = int(partition)
            except ValueError:
                raise ValueError(f"Expected e.g. {example}, got {text}") from None
            if not _is_int(value):
                raise ValueError(f"Expected e.g. {example}, got {text}")
            out[TopicPartition(topic, number)] = value
    return out


def partition_offsets(text: str) -> dict[TopicPartition, int]:
    """Parse ``{"topicA":{"0":23,"1":-1}}`` (Spark's ``JsonUtils.partitionOffsets``)."""
    return _partition_map(text, _OFFSETS_EXAMPLE)


def partition_timestamps(text: str) -> dict[TopicPartition, int]:
    """Parse ``{"topicA":{"0":1000}}`` (Spark's ``JsonUtils.partitionTimestamps``)."""
    return _partition_map(text, _TIMESTAMPS_EXAMPLE)


def partitions(text: str) -> list[TopicPartition]:
    """Parse ``{"topicA":[0,1]}`` (Spark's ``JsonUtils.partitions``)."""
    out: list[TopicPartition] = []
    for topic, numbers in _load_object(text, _PARTITIONS_EXAMPLE).items():
        if not isinstance(numbers, list) or not all(_is_int(n) for n in numbers):
            raise ValueError(f"Expected e.g. {_PARTITIONS_EXAMPLE}, got {text}")
        out.extend(TopicPartition(topic, n) for n in numbers)
    return out


def to_offset_dict(offsets: Mapping[TopicPartition, int]) -> OffsetDict:
    """The checkpoint form of ``offsets``: topics, then partitions, in order; primitive values only (Spark
    round-trips it through JSON, so keys must already be strings)."""
    out: OffsetDict = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = int(offsets[tp])
    return out


def from_offset_dict(offsets: Mapping[str, Mapping[str, Any]]) -> dict[TopicPartition, int]:
    """Inverse of :func:`to_offset_dict` (also accepts what comes back from a checkpoint)."""
    out: dict[TopicPartition, int] = {}
    for topic, per_partition in offsets.items():
        for partition, offset in per_partition.items():
            out[TopicPartition(topic, int(partition))] = int(offset)
    return out


def to_json(offsets: Mapping[TopicPartition, int]) -> str:
    """``offsets`` as Kafka-format JSON text (compact, sorted)."""
    return json.dumps(to_offset_dict(offsets), separators=(",", ":"))

"""Records handed to the application (Java: ConsumerRecord, ConsumerRecords).

A :class:`ConsumerRecord` is immutable. :class:`ConsumerRecords` is what ``poll()`` returns: records
grouped by partition, in offset order within a partition, iterable in partition order.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from enum import IntEnum
from typing import Any, Generic, TypeVar

from pykafka_client.structs import OffsetAndMetadata, TopicPartition

K = TypeVar("K")
V = TypeVar("V")


class TimestampType(IntEnum):
    """How a record's timestamp was set (-1 when the message format has none)."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class ConsumerRecord(Generic[K, V]):
    """One record: where it is (topic, partition, offset), when (timestamp, timestamp_type), its
    deserialized key and value, its headers as ``(key, value)`` pairs and the leader epoch of the
    batch it came from (None when unknown)."""

    # The record kernel (``_kernel.decode_consumer_records``) builds instances without ``__init__`` by filling
    # these slots by name: a new field must be added there too (its test fails otherwise).
    __slots__ = (
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestamp_type",
        "key",
        "value",
        "headers",
        "leader_epoch",
        "serialized_key_size",
        "serialized_value_size",
    )

    def __init__(
        self,
        topic: str,
        partition: int,
        offset: int,
        timestamp: int,
        timestamp_type: TimestampType,
        key: K,
        value: V,
        headers: Sequence[tuple[str, bytes | None]] = (),
        leader_epoch: int | None = None,
        serialized_key_size: int = -1,
        serialized_value_size: int = -1,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.timestamp = timestamp
        self.timestamp_type = timestamp_type
        self.key = key
        self.value = value
        self.headers = tuple(headers)
        self.leader_epoch = leader_epoch
        self.serialized_key_size = serialized_key_size
        self.serialized_value_size = serialized_value_size

    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConsumerRecord):
            return NotImplemented
        return all(getattr(self, s) == getattr(other, s) for s in self.__slots__)

    def __hash__(self) -> int:
        return hash((self.topic, self.partition, self.offset))

    def __repr__(self) -> str:
        return (
            f"ConsumerRecord(topic={self.topic!r}, partition={self.partition}, offset={self.offset}, "
            f"timestamp={self.timestamp}, timestamp_type={self.timestamp_type.name}, key={self.key!r}, "
            f"value={self.value!r}, headers={list(self.headers)!r}, leader_epoch={self.leader_epoch})"
        )


class ConsumerRecords(Generic[K, V]):
    """The records of one ``poll()``: a read-only mapping from partition to its list of records,
    plus the positions to resume from (``next_offsets``) for each partition that returned data."""

    __slots__ = ("_records", "_next_offsets")

    def __init__(
        self,
        records: Mapping[TopicPartition, list[ConsumerRecord[K, V]]],
        next_offsets: Mapping[TopicPartition, OffsetAndMetadata] | None = None,
    ) -> None:
        self._records: dict[TopicPartition, list[ConsumerRecord[K, V]]] = {
            tp: recs for tp, recs in records.items() if recs
        }
        self._next_offsets = dict(next_offsets or {})

    @classmethod
    def empty(cls) -> ConsumerRecords[Any, Any]:
        return ConsumerRecords({})

    def records(self, partition: TopicPartition | None = None, topic: str | None = None) -> list[ConsumerRecord[K, V]]:
        """The records of one partition, of one topic, or of all partitions."""
        if partition is not None:
            return list(self._records.get(partition, ()))
        out: list[ConsumerRecord[K, V]] = []
        for tp, recs in self._records.items():
            if topic is None or tp.topic == topic:
                out.extend(recs)
        return out

    def partitions(self) -> set[TopicPartition]:
        return set(self._records)

    def next_offsets(self) -> dict[TopicPartition, OffsetAndMetadata]:
        return dict(self._next_offsets)

    def count(self) -> int:
        return sum(len(r) for r in self._records.values())

    def is_empty(self) -> bool:
        return not self._records

    def items(self) -> Iterator[tuple[TopicPartition, list[ConsumerRecord[K, V]]]]:
        return iter(self._records.items())

    def __getitem__(self, partition: TopicPartition) -> list[ConsumerRecord[K, V]]:
        return self._records[partition]

    def __contains__(self, partition: object) -> bool:
        return partition in self._records

    def __iter__(self) -> Iterator[ConsumerRecord[K, V]]:
        for recs in self._records.values():
            yield from recs

    def __len__(self) -> int:
        return self.count()

    def __bool__(self) -> bool:
        return bool(self._records)

    def __repr__(self) -> str:
        return f"ConsumerRecords({ {str(tp): len(r) for tp, r in self._records.items()} })"

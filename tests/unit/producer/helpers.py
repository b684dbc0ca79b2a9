"""Test helpers: a static metadata view for the accumulator; a batch's records with a producer state to encode; the
kernel switched on or off for a block; the partitions of a produce request."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pykafka_client.protocol.messages.produce_request import ProduceRequest
from pykafka_client.protocol.records import _native
from pykafka_client.structs import Node, TopicPartition


class FakeMetadata:
    """Partitions -> leader node (None = unknown) with epochs; implements AccumulatorMetadata."""

    def __init__(self, leaders: dict[tuple[str, int], Node | None], epochs: dict[tuple[str, int], int] | None = None) -> None:
        self.leaders = dict(leaders)
        self.epochs = dict(epochs or {})

    def leader_and_epoch(self, tp: tuple[str, int]) -> tuple[Node | None, int | None]:
        key = (tp[0], tp[1])
        return self.leaders.get(key), self.epochs.get(key)

    def partitions_for_node(self, node_id: int) -> Sequence[TopicPartition]:
        return sorted(TopicPartition(t, p) for (t, p), n in self.leaders.items() if n is not None and n.id == node_id)

    def partition_count_for_topic(self, topic: str) -> int | None:
        n = sum(1 for t, _ in self.leaders if t == topic)
        return n or None

    def available_partitions_for_topic(self, topic: str) -> Sequence[int]:
        return sorted(p for (t, p), n in self.leaders.items() if t == topic and n is not None)


NODE1 = Node(1, "localhost", 9091)
NODE2 = Node(2, "localhost", 9092)


@dataclass
class EncodableRecords:
    """What ``batch_encoder.encode_batch`` reads of a producer batch: its records (a list of record tuples, or the
    kernel's PendingRecords) and its producer state."""

    pending: Any
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    is_transactional: bool = False
    extra: list[Any] = field(default_factory=list)


@contextmanager
def native_switched(enabled: bool) -> Iterator[None]:
    """The compiled kernel on (``enabled``) or off for the block, as it was after."""
    previous = _native.use_native(enabled)
    try:
        yield
    finally:
        _native.use_native(previous)


def partitions_of(body: ProduceRequest) -> list[TopicPartition]:
    """The partitions a produce request's body carries, in its order."""
    return [TopicPartition(t.name, p.index) for t in body.topic_data for p in t.partition_data]

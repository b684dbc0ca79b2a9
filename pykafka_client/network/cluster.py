"""An immutable view of the cluster from one metadata response (Java: ``PartitionInfo``, ``Cluster``;
``Node`` is in :mod:`pykafka_client.structs`).

Partition keys are plain ``(topic, partition)`` tuples (typed ``tuple[str, int]``), so
``pykafka_client.structs.TopicPartition`` (a NamedTuple, equal to its tuple) works as a key unchanged.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pykafka_client.structs import Node


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """One partition as the metadata describes it. ``leader`` is None when unknown or offline."""

    topic: str
    partition: int
    leader: Node | None
    leader_epoch: int | None = None
    replicas: tuple[int, ...] = ()
    in_sync_replicas: tuple[int, ...] = ()
    offline_replicas: tuple[int, ...] = ()
    error_code: int = 0


@dataclass(frozen=True, slots=True)
class LeaderAndEpoch:
    leader: Node | None
    epoch: int | None


@dataclass(frozen=True)
class Cluster:
    """Brokers, partitions, leaders, topic ids, controller and cluster id."""

    nodes: tuple[Node, ...]
    partitions: Mapping[tuple[str, int], PartitionInfo] = field(default_factory=dict)
    cluster_id: str | None = None
    controller: Node | None = None
    topic_ids: Mapping[str, uuid.UUID] = field(default_factory=dict)
    unauthorized_topics: frozenset[str] = frozenset()
    invalid_topics: frozenset[str] = frozenset()
    internal_topics: frozenset[str] = frozenset()
    is_bootstrap_configured: bool = False

    @classmethod
    def empty(cls) -> Cluster:
        return cls(())

    @classmethod
    def bootstrap(cls, addresses: Iterable[tuple[str, int]]) -> Cluster:
        nodes = tuple(Node(-(i + 1), host, port) for i, (host, port) in enumerate(addresses))
        return cls(nodes, is_bootstrap_configured=True)

    def node_by_id(self, node_id: int) -> Node | None:
        for node in self.nodes:
            if node.id == node_id:
                return node
        return None

    def topics(self) -> set[str]:
        return {tp[0] for tp in self.partitions}

    def partitions_for_topic(self, topic: str) -> list[PartitionInfo]:
        return sorted((p for tp, p in self.partitions.items() if tp[0] == topic), key=lambda p: p.partition)

    def partition_count_for_topic(self, topic: str) -> int | None:
        n = sum(1 for tp in self.partitions if tp[0] == topic)
        return n or None

    def leader_for(self, tp: tuple[str, int]) -> Node | None:
        info = self.partitions.get((tp[0], tp[1]))
        return info.leader if info is not None else None

    def partition(self, tp: tuple[str, int]) -> PartitionInfo | None:
        return self.partitions.get((tp[0], tp[1]))

    def topic_id(self, topic: str) -> uuid.UUID | None:
        return self.topic_ids.get(topic)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        for name, tid in self.topic_ids.items():
            if tid == topic_id:
                return name
        return None

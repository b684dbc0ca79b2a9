"""The range assignor (Java RangeAssignor): per topic, consecutive ranges of partitions to the
members subscribed to it, in member order; the first ``partitions % members`` get one extra."""

from __future__ import annotations

from collections.abc import Mapping

from pykafka_client.consumer.assignors.abstract_assignor import (
    AbstractPartitionAssignor,
    Subscription,
    sorted_members,
)
from pykafka_client.structs import TopicPartition


class RangeAssignor(AbstractPartitionAssignor):
    def name(self) -> str:
        return "range"

    def assign_partitions(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, list[TopicPartition]]:
        assignment: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
        members = sorted_members(subscriptions)
        topics = sorted({t for s in subscriptions.values() for t in s.topics})
        for topic in topics:
            count = partitions_per_topic.get(topic)
            if not count:
                continue
            consumers = [m for m in members if topic in subscriptions[m].topics]
            per, extra = divmod(count, len(consumers))
            for i, member in enumerate(consumers):
                start = per * i + min(i, extra)
                length = per + (1 if i < extra else 0)
                assignment[member].extend(TopicPartition(topic, p) for p in range(start, start + length))
        return assignment

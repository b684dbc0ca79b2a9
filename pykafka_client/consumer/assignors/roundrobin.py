"""The round-robin assignor (Java RoundRobinAssignor): all partitions of all subscribed topics,
sorted by topic then partition, dealt one by one to members in order, skipping members that are not
subscribed to the partition's topic."""

from __future__ import annotations

from collections.abc import Mapping

from pykafka_client.consumer.assignors.abstract_assignor import (
    AbstractPartitionAssignor,
    Subscription,
    partitions_of,
    sorted_members,
)
from pykafka_client.structs import TopicPartition


class RoundRobinAssignor(AbstractPartitionAssignor):
    def name(self) -> str:
        return "roundrobin"

    def assign_partitions(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, list[TopicPartition]]:
        assignment: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
        members = sorted_members(subscriptions)
        if not members:
            return assignment
        topic_sets = {m: set(subscriptions[m].topics) for m in members}
        topics = sorted({t for s in topic_sets.values() for t in s})
        idx = 0
        for topic in topics:
            for tp in partitions_of(topic, partitions_per_topic.get(topic, 0)):
                # some member is subscribed to `topic` (it came from a subscription), so this ends
                while topic not in topic_sets[members[idx % len(members)]]:
                    idx += 1
                assignment[members[idx % len(members)]].append(tp)
                idx += 1
        return assignment

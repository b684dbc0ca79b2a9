"""Metadata narrowed to what the consumer needs (Java: ConsumerMetadata).

Requests the subscribed topics (plus, on the group leader, every member's topics), the manually
assigned partitions' topics and transient topics asked for by ``partitions_for``; with a pattern
subscription it requests all topics so new matches are found. Internal topics are skipped by
pattern matching when ``exclude.internal.topics`` is set.
"""

from __future__ import annotations

from pykafka_client.consumer.subscription_state import SubscriptionState
from pykafka_client.network.metadata import Metadata


class ConsumerMetadata(Metadata):
    def __init__(
        self,
        subscriptions: SubscriptionState,
        refresh_backoff_ms: int = 100,
        refresh_backoff_max_ms: int = 1000,
        metadata_expire_ms: int = 300_000,
        *,
        allow_auto_topic_creation: bool = True,
        include_internal_topics: bool = False,
    ) -> None:
        super().__init__(
            refresh_backoff_ms,
            refresh_backoff_max_ms,
            metadata_expire_ms,
            allow_auto_topic_creation=allow_auto_topic_creation,
        )
        self.subscriptions = subscriptions
        self.include_internal_topics = include_internal_topics
        self.transient_topics: set[str] = set()

    def topics_to_request(self) -> list[str] | None:
        if self.subscriptions.has_pattern_subscription():
            return None
        topics = set(self.subscriptions.metadata_topics()) | self.transient_topics
        topics |= {tp.topic for tp in self.subscriptions.assigned_partitions()}
        return sorted(topics)

    def add_transient_topics(self, topics: set[str]) -> None:
        self.transient_topics |= topics
        self.request_update_for_new_topics()

    def clear_transient_topics(self) -> None:
        self.transient_topics.clear()

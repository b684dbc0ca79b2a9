"""Rebalance callbacks (Java: ConsumerRebalanceListener).

Callbacks run in the thread that calls ``poll()`` (or ``close()``/``unsubscribe()``), never in the
heartbeat thread and never under an internal lock, so they may call consumer methods such as
``commit_sync`` or ``seek``.
"""

from __future__ import annotations

from collections.abc import Collection

from pykafka_client.structs import TopicPartition


class ConsumerRebalanceListener:
    """Override what you need. ``on_partitions_lost`` defaults to ``on_partitions_revoked``, as in Java."""

    def on_partitions_revoked(self, revoked: Collection[TopicPartition]) -> None:
        """Partitions given up in a rebalance; commit their offsets here if committing manually.
        With an eager assignor this is called with every owned partition before each rebalance; with
        cooperative-sticky only with those actually moving away (and not called if none are)."""

    def on_partitions_assigned(self, assigned: Collection[TopicPartition]) -> None:
        """Partitions newly given to this member (with cooperative-sticky: only the added ones;
        always called after a successful rebalance, possibly with an empty collection)."""

    def on_partitions_lost(self, lost: Collection[TopicPartition]) -> None:
        """Partitions that may already belong to another member (session timed out, fenced): do not
        commit their offsets."""
        self.on_partitions_revoked(lost)


class NoOpConsumerRebalanceListener(ConsumerRebalanceListener):
    """The listener used when the application gives none."""

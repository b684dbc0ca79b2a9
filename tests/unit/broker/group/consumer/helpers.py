"""Shared by the consumer group driver tests."""

from __future__ import annotations

from mini_broker.group.consumer import (
    ConsumerGroupCoordinator,
    ConsumerGroupHeartbeatParams,
    ConsumerGroupHeartbeatResult,
)


def heartbeat(consumer: ConsumerGroupCoordinator, request: ConsumerGroupHeartbeatParams) -> ConsumerGroupHeartbeatResult:
    """The heartbeat's answer, which a single broker gives at once (its appends are durable when they return)."""
    replies: list[ConsumerGroupHeartbeatResult] = []
    consumer.heartbeat(request, replies.append)
    assert len(replies) == 1, "a single broker answers a heartbeat at once"
    return replies[0]

"""Shared by the group API modules: reaching this broker's group coordinator."""

from __future__ import annotations

from mini_broker.group.group_coordinator import GroupCoordinator
from mini_broker.network.request_channel import Request
from mini_broker.server.kafka_apis import KafkaApis


def group_coordinator(apis: KafkaApis) -> GroupCoordinator:
    """The coordinator the broker owns (created and started before the broker serves requests, shut down
    with it: then it answers COORDINATOR_NOT_AVAILABLE)."""
    coordinator = apis.broker.group_coordinator
    if coordinator is None:
        raise RuntimeError("the broker context has no group coordinator: the broker must create it before "
                           "it serves requests")
    return coordinator


def client_host(request: Request) -> str:
    """How Kafka shows a member's host in DescribeGroups: ``/<ip>``."""
    return "/" + request.context.client_address


def client_id(request: Request) -> str:
    return request.context.client_id or ""

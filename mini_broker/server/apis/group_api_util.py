"""Shared by the group API modules: reaching the group coordinator."""

from __future__ import annotations

import threading

from mini_broker.group.group_coordinator import GroupConfig, GroupCoordinator
from mini_broker.group.group_metadata_manager import GroupMetadataManager
from mini_broker.network.request_channel import Request
from mini_broker.server.kafka_apis import KafkaApis

_inactive: GroupCoordinator | None = None
_inactive_lock = threading.Lock()


def group_coordinator(apis: KafkaApis) -> GroupCoordinator:
    """The broker's coordinator; before one exists, a never-started one that answers every call with
    COORDINATOR_NOT_AVAILABLE (it has no threads and stores nothing)."""
    coordinator = apis.broker.group_coordinator
    if coordinator is not None:
        return coordinator
    global _inactive
    with _inactive_lock:
        if _inactive is None:
            _inactive = GroupCoordinator(GroupConfig(), GroupMetadataManager(None), timer_run_inline=True,
                                         reaper_enabled=False)
        return _inactive


def client_host(request: Request) -> str:
    """How Kafka shows a member's host in DescribeGroups: ``/<ip>``."""
    return "/" + request.context.client_address


def client_id(request: Request) -> str:
    return request.context.client_id or ""

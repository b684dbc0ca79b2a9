"""The classic-protocol group coordinator (Kafka: ``kafka.coordinator.group``)."""

from __future__ import annotations

from mini_broker.group.group_coordinator import (
    FetchedOffset,
    GroupConfig,
    GroupCoordinator,
    LeaveMember,
    LeaveMemberResult,
)
from mini_broker.group.group_metadata import (
    GroupMetadata,
    GroupState,
    JoinGroupResult,
    OffsetAndMetadata,
    SyncGroupResult,
)
from mini_broker.group.group_metadata_manager import GroupMetadataManager
from mini_broker.group.member_metadata import MemberMetadata

__all__ = [
    "FetchedOffset",
    "GroupConfig",
    "GroupCoordinator",
    "GroupMetadata",
    "GroupMetadataManager",
    "GroupState",
    "JoinGroupResult",
    "LeaveMember",
    "LeaveMemberResult",
    "MemberMetadata",
    "OffsetAndMetadata",
    "SyncGroupResult",
]

"""The classic-protocol group coordinator (Kafka: ``kafka.coordinator.group``).

Sans-IO core: :mod:`group_state` (state table), :mod:`group_join` (JoinGroup, SyncGroup),
:mod:`group_heartbeat` (Heartbeat, LeaveGroup), :mod:`group_offsets` (commits, fetches, deletion, expiry),
:mod:`group_rebalance` (join rounds, sessions, fired timeouts), with :mod:`group_requests` in and
:mod:`group_effects` out. Driver: :mod:`group_coordinator` (locks, purgatories, the offsets log).
"""

from __future__ import annotations

from mini_broker.group.group_config import GroupConfig
from mini_broker.group.group_coordinator import GroupCoordinator
from mini_broker.group.group_metadata import GroupMetadata
from mini_broker.group.group_metadata_manager import GroupMetadataManager
from mini_broker.group.group_requests import (
    CommittedOffset,
    FetchedOffset,
    HeartbeatParams,
    JoinGroupParams,
    JoinGroupResult,
    LeaveGroupParams,
    LeaveMember,
    LeaveMemberResult,
    OffsetCommitParams,
    SyncGroupParams,
    SyncGroupResult,
)
from mini_broker.group.group_state import GroupState
from mini_broker.group.member_metadata import MemberMetadata

__all__ = [
    "CommittedOffset",
    "FetchedOffset",
    "GroupConfig",
    "GroupCoordinator",
    "GroupMetadata",
    "GroupMetadataManager",
    "GroupState",
    "HeartbeatParams",
    "JoinGroupParams",
    "JoinGroupResult",
    "LeaveGroupParams",
    "LeaveMember",
    "LeaveMemberResult",
    "MemberMetadata",
    "OffsetCommitParams",
    "SyncGroupParams",
    "SyncGroupResult",
]

"""The group membership settings of a classic-protocol member (Java: GroupRebalanceConfig) and
what closing does to the membership (Java: CloseOptions.GroupMembershipOperation)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


@dataclass(frozen=True, slots=True)
class GroupRebalanceConfig:
    group_id: str
    group_instance_id: str | None = None
    session_timeout_ms: int = 45000
    rebalance_timeout_ms: int = 300000
    heartbeat_interval_ms: int = 3000
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1000
    request_timeout_ms: int = 30000
    leave_group_on_close: bool = True


class GroupMembershipOperation(Enum):
    """What closing does to the membership (Java: CloseOptions.GroupMembershipOperation)."""

    DEFAULT = "DEFAULT"  # dynamic members leave, static members stay until their session expires
    LEAVE_GROUP = "LEAVE_GROUP"  # leave, static members too
    REMAIN_IN_GROUP = "REMAIN_IN_GROUP"  # never send LeaveGroup


__all__ = ["GroupMembershipOperation", "GroupRebalanceConfig"]

"""The group membership settings of a classic-protocol member (Java: GroupRebalanceConfig) and
what closing does to the membership (Java: CloseOptions.GroupMembershipOperation)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from pykafka_client.config import AbstractConfig
from pykafka_client.protocol.api_keys import ApiKey

#: The first version of each group API that carries ``group.instance.id`` (KIP-345). A static member
#: cannot use an older one: its request would silently become a dynamic member's (Java's request
#: builders refuse it with UnsupportedVersionError, and so does the NetworkClient here).
STATIC_MEMBERSHIP_OLDEST_VERSION: dict[ApiKey, int] = {
    ApiKey.JOIN_GROUP: 5,
    ApiKey.SYNC_GROUP: 3,
    ApiKey.HEARTBEAT: 3,
    ApiKey.OFFSET_COMMIT: 7,
}


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

    @classmethod
    def from_consumer_config(cls, cfg: AbstractConfig, group_id: str) -> GroupRebalanceConfig:
        """Java: ``new GroupRebalanceConfig(config, ProtocolType.CONSUMER)`` (``group_id``: the configured
        ``group.id``, checked to be set by the caller)."""
        return cls(
            group_id=group_id,
            group_instance_id=cfg["group.instance.id"],
            session_timeout_ms=cfg["session.timeout.ms"],
            rebalance_timeout_ms=cfg["rebalance.timeout.ms"],
            heartbeat_interval_ms=cfg["heartbeat.interval.ms"],
            retry_backoff_ms=cfg["retry.backoff.ms"],
            retry_backoff_max_ms=cfg["retry.backoff.max.ms"],
            request_timeout_ms=cfg["request.timeout.ms"],
            leave_group_on_close=cfg["internal.leave.group.on.close"],
        )

    def oldest_allowed_version(self, api: ApiKey) -> int | None:
        """The oldest version of ``api`` this member may send (None: any): static members need the
        versions that carry ``group.instance.id``."""
        if self.group_instance_id is None:
            return None
        return STATIC_MEMBERSHIP_OLDEST_VERSION.get(api)


class GroupMembershipOperation(Enum):
    """What closing does to the membership (Java: CloseOptions.GroupMembershipOperation)."""

    DEFAULT = "DEFAULT"  # dynamic members leave, static members stay until their session expires
    LEAVE_GROUP = "LEAVE_GROUP"  # leave, static members too
    REMAIN_IN_GROUP = "REMAIN_IN_GROUP"  # never send LeaveGroup


__all__ = ["STATIC_MEMBERSHIP_OLDEST_VERSION", "GroupMembershipOperation", "GroupRebalanceConfig"]

"""The share-group (KIP-932) settings: Kafka's ``group.share.*`` broker configs in snake_case, and the broker-wide
defaults of the per-group ``share.auto.offset.reset`` and ``share.isolation.level``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

#: the only server-side share assignor (Kafka's ``SimpleAssignor``)
SIMPLE_ASSIGNOR: Final = "simple"


@dataclass(frozen=True)
class ShareGroupConfig:
    """``session_timeout_ms``: a member not heard from for this long leaves the group; ``heartbeat_interval_ms``:
    told to members; ``record_lock_duration_ms``: how long an acquired record stays locked to its member;
    ``delivery_count_limit``: deliveries after which a record is archived instead of made available again;
    ``partition_max_record_locks``: in-flight records per share partition; ``max_size``: members per group;
    ``max_share_sessions``: share sessions this broker keeps; ``auto_offset_reset``: ``latest`` or ``earliest``;
    ``isolation_level``: ``read_uncommitted`` or ``read_committed``."""

    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 5000
    record_lock_duration_ms: int = 30000
    delivery_count_limit: int = 5
    partition_max_record_locks: int = 2000
    max_size: int = 200
    max_share_sessions: int = 2000
    auto_offset_reset: str = "latest"
    isolation_level: str = "read_uncommitted"

    @classmethod
    def from_broker(cls, get: Callable[[str], object]) -> ShareGroupConfig:
        """From the broker's configs (``get(name)``: the value with its default applied)."""
        def num(name: str) -> int:
            return int(str(get(name)))

        return cls(session_timeout_ms=num("group.share.session.timeout.ms"),
                   heartbeat_interval_ms=num("group.share.heartbeat.interval.ms"),
                   record_lock_duration_ms=num("group.share.record.lock.duration.ms"),
                   delivery_count_limit=num("group.share.delivery.count.limit"),
                   partition_max_record_locks=num("group.share.partition.max.record.locks"),
                   max_size=num("group.share.max.size"),
                   max_share_sessions=num("group.share.max.share.sessions"),
                   auto_offset_reset=str(get("share.auto.offset.reset")).strip().lower(),
                   isolation_level=str(get("share.isolation.level")).strip().lower())

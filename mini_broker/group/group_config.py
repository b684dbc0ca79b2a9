"""The group coordinator's settings (Kafka's ``GroupConfig`` / ``OffsetConfig`` names in snake_case)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

INT_MAX: Final = 2**31 - 1


@dataclass(frozen=True)
class GroupConfig:
    """Coordinator settings (Kafka names in snake_case)."""

    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_initial_rebalance_delay_ms: int = 3000
    group_max_size: int = INT_MAX
    offset_metadata_max_bytes: int = 4096
    offsets_retention_ms: int = 10080 * 60 * 1000
    offsets_retention_check_interval_ms: int = 600000
    offsets_topic_segment_bytes: int = 104857600

    @classmethod
    def from_broker(cls, get: Callable[[str], object]) -> GroupConfig:
        """From broker configs; ``get(name)`` returns the value (defaults applied) or None."""
        d = cls()

        def val(name: str, default: int) -> int:
            v = get(name)
            return default if v is None else int(str(v))

        return cls(
            group_min_session_timeout_ms=val("group.min.session.timeout.ms", d.group_min_session_timeout_ms),
            group_max_session_timeout_ms=val("group.max.session.timeout.ms", d.group_max_session_timeout_ms),
            group_initial_rebalance_delay_ms=val("group.initial.rebalance.delay.ms",
                                                 d.group_initial_rebalance_delay_ms),
            group_max_size=val("group.max.size", d.group_max_size),
            offset_metadata_max_bytes=val("offset.metadata.max.bytes", d.offset_metadata_max_bytes),
            offsets_retention_ms=val("offsets.retention.minutes", d.offsets_retention_ms // 60000) * 60000,
            offsets_retention_check_interval_ms=val("offsets.retention.check.interval.ms",
                                                    d.offsets_retention_check_interval_ms),
            offsets_topic_segment_bytes=val("offsets.topic.segment.bytes", d.offsets_topic_segment_bytes),
        )

"""The consumer-group (KIP-848) settings: Kafka's ``group.consumer.*`` broker configs in snake_case."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

INT_MAX: Final = 2**31 - 1
UNIFORM_ASSIGNOR: Final = "uniform"
RANGE_ASSIGNOR: Final = "range"
#: ``group.consumer.migration.policy`` values (Kafka's ``ConsumerGroupMigrationPolicy``); Kafka's default first
MIGRATION_POLICIES: Final = ("bidirectional", "upgrade", "downgrade", "disabled")


@dataclass(frozen=True)
class ConsumerGroupConfig:
    """``group.consumer.session.timeout.ms`` (a member not heard from for this long is fenced),
    ``group.consumer.heartbeat.interval.ms`` (told to the members in every heartbeat response),
    ``group.consumer.assignors`` (the server-side assignors; the first is the default), ``group.consumer.max.size``,
    ``group.consumer.migration.policy`` (which online conversions between classic and consumer groups happen:
    ``bidirectional``, ``upgrade``, ``downgrade`` or ``disabled``)."""

    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 5000
    assignors: tuple[str, ...] = field(default=(UNIFORM_ASSIGNOR, RANGE_ASSIGNOR))
    max_size: int = INT_MAX
    migration_policy: str = MIGRATION_POLICIES[0]
    #: the bounds of a group's own ``consumer.session.timeout.ms`` / ``consumer.heartbeat.interval.ms``
    min_session_timeout_ms: int = 45000
    max_session_timeout_ms: int = 60000
    min_heartbeat_interval_ms: int = 5000
    max_heartbeat_interval_ms: int = 15000

    def __post_init__(self) -> None:
        if self.migration_policy not in MIGRATION_POLICIES:
            raise ValueError(f"group.consumer.migration.policy: {self.migration_policy!r} is not one of "
                             f"{', '.join(MIGRATION_POLICIES)}")

    @property
    def upgrade_enabled(self) -> bool:
        """A consumer-protocol member joining a classic group with members converts it."""
        return self.migration_policy in ("bidirectional", "upgrade")

    @property
    def downgrade_enabled(self) -> bool:
        """The last consumer-protocol member leaving a group of classic members converts it back."""
        return self.migration_policy in ("bidirectional", "downgrade")

    @property
    def mixed_groups_enabled(self) -> bool:
        """Classic members may join a consumer group with members (any policy but ``disabled``)."""
        return self.migration_policy != "disabled"

    @classmethod
    def from_broker(cls, get: Callable[[str], object]) -> ConsumerGroupConfig:
        """From the broker's configs (``get(name)``: the value with its default applied)."""
        assignors = get("group.consumer.assignors")
        names = assignors if isinstance(assignors, list) else str(assignors).split(",")
        return cls(session_timeout_ms=int(str(get("group.consumer.session.timeout.ms"))),
                   heartbeat_interval_ms=int(str(get("group.consumer.heartbeat.interval.ms"))),
                   assignors=tuple(_short_assignor_name(str(n)) for n in names if str(n).strip()),
                   max_size=int(str(get("group.consumer.max.size"))),
                   migration_policy=str(get("group.consumer.migration.policy")).strip().lower(),
                   min_session_timeout_ms=int(str(get("group.consumer.min.session.timeout.ms"))),
                   max_session_timeout_ms=int(str(get("group.consumer.max.session.timeout.ms"))),
                   min_heartbeat_interval_ms=int(str(get("group.consumer.min.heartbeat.interval.ms"))),
                   max_heartbeat_interval_ms=int(str(get("group.consumer.max.heartbeat.interval.ms"))))


def _short_assignor_name(name: str) -> str:
    """Kafka accepts the assignor's class name or its short name; both map to the short name here."""
    name = name.strip()
    lowered = name.rsplit(".", 1)[-1].lower()
    if lowered in ("uniformassignor", UNIFORM_ASSIGNOR):
        return UNIFORM_ASSIGNOR
    if lowered in ("rangeassignor", RANGE_ASSIGNOR):
        return RANGE_ASSIGNOR
    raise ValueError(f"group.consumer.assignors: unknown server-side assignor {name!r}; "
                     f"use {UNIFORM_ASSIGNOR!r} and/or {RANGE_ASSIGNOR!r}")

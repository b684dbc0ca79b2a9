"""Per-group share configs (the ``share.*`` keys of Kafka's GROUP config resource): a share group's
``share.auto.offset.reset``, ``share.isolation.level``, ``share.record.lock.duration.ms``,
``share.session.timeout.ms`` and ``share.heartbeat.interval.ms`` override the broker's values for that group.

Validation as Kafka's ``GroupConfig``: the reset strategy ``latest`` or ``earliest``, the isolation level
``read_uncommitted`` or ``read_committed``, positive integers with the heartbeat interval below the session
timeout. Kept in ``__consumer_offsets`` as a share-group record (:mod:`mini_broker.share.records`), so the
coordinator that serves the group has them after a restart.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Final

from mini_broker.group.consumer.group_configs import GroupConfigEntry
from mini_broker.share.config import ShareGroupConfig
from pykafka_client.errors import InvalidConfigurationError

AUTO_OFFSET_RESET: Final = "share.auto.offset.reset"
ISOLATION_LEVEL: Final = "share.isolation.level"
RECORD_LOCK_DURATION_MS: Final = "share.record.lock.duration.ms"
SESSION_TIMEOUT_MS: Final = "share.session.timeout.ms"
HEARTBEAT_INTERVAL_MS: Final = "share.heartbeat.interval.ms"
#: key -> (ShareGroupConfig field, allowed values (None: a positive integer), documentation)
_KEYS: Final[dict[str, tuple[str, tuple[str, ...] | None, str]]] = {
    AUTO_OFFSET_RESET: ("auto_offset_reset", ("latest", "earliest"),
                        "Where a share group starts reading a partition it has not read before."),
    ISOLATION_LEVEL: ("isolation_level", ("read_uncommitted", "read_committed"),
                      "Whether a share group reads the records of transactions that are not committed."),
    RECORD_LOCK_DURATION_MS: ("record_lock_duration_ms", None,
                              "How long a record acquired by a share group member stays locked to it."),
    SESSION_TIMEOUT_MS: ("session_timeout_ms", None,
                         "The timeout to detect client failures when using the share group protocol."),
    HEARTBEAT_INTERVAL_MS: ("heartbeat_interval_ms", None, "The heartbeat interval given to share group members."),
}
SHARE_GROUP_CONFIG_KEYS: Final = tuple(sorted(_KEYS))
#: the keys whose values are integers (the others are strings)
INT_KEYS: Final = frozenset(k for k, (_, allowed, _) in _KEYS.items() if allowed is None)


def for_group(config: ShareGroupConfig, overrides: Mapping[str, str]) -> ShareGroupConfig:
    """The broker's share config with the group's overrides applied."""
    changes: dict[str, object] = {}
    for name, value in overrides.items():
        field, allowed, _ = _KEYS[name]
        changes[field] = value if allowed is not None else int(value)
    return dataclasses.replace(config, **changes) if changes else config  # type: ignore[arg-type]


def describe(overrides: Mapping[str, str], config: ShareGroupConfig,
             keys: list[str] | None = None) -> list[GroupConfigEntry]:
    """Every share group config (or those of ``keys`` that exist), with the value that applies to the group."""
    effective = for_group(config, overrides)
    return [GroupConfigEntry(n, str(getattr(effective, _KEYS[n][0])), n in overrides, _KEYS[n][2])
            for n in SHARE_GROUP_CONFIG_KEYS if keys is None or n in keys]


def validate(proposed: Mapping[str, str], config: ShareGroupConfig) -> dict[str, str]:
    """The group's new overrides (normalized); InvalidConfigurationError says which value is wrong and why."""
    out: dict[str, str] = {}
    for name, raw in proposed.items():
        if name not in _KEYS:
            raise InvalidConfigurationError(f"Unknown group config name: {name}; the share group configs are "
                                            f"{', '.join(SHARE_GROUP_CONFIG_KEYS)}")
        value = str(raw).strip().lower()
        allowed = _KEYS[name][1]
        if allowed is not None and value not in allowed:
            raise InvalidConfigurationError(f"Invalid value {raw} for configuration {name}: String must be one of: "
                                            f"{', '.join(allowed)}")
        if allowed is None and (not value.isdigit() or int(value) <= 0):
            raise InvalidConfigurationError(f"Invalid value {raw} for configuration {name}: a positive integer "
                                            f"is needed")
        out[name] = value
    effective = for_group(config, out)
    if effective.heartbeat_interval_ms >= effective.session_timeout_ms:
        raise InvalidConfigurationError(f"{HEARTBEAT_INTERVAL_MS} ({effective.heartbeat_interval_ms}) must be less "
                                        f"than {SESSION_TIMEOUT_MS} ({effective.session_timeout_ms})")
    return out

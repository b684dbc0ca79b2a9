"""Per-group configs (KIP-848's GROUP config resource, type 32): a group's ``consumer.session.timeout.ms`` and
``consumer.heartbeat.interval.ms`` override the broker's ``group.consumer.session.timeout.ms`` /
``group.consumer.heartbeat.interval.ms`` for that group (Kafka's ``GroupConfig``; its share-group and
streams-group keys are not served here).

Validation as Kafka's: an integer within the broker's ``group.consumer.min/max.session.timeout.ms`` and
``group.consumer.min/max.heartbeat.interval.ms``, and the heartbeat interval below the session timeout (each
taken from the group's value, else the broker's).

Kept in ``__consumer_offsets`` as a record of the group (:mod:`records` type 9), so the coordinator that serves
the group has them after a restart or a failover, with no other state to keep in step (Kafka keeps them in the
cluster metadata; here the group coordinator's partition is the one store that moves with the group).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Final, TypeVar

from mini_broker.group.consumer.config import ConsumerGroupConfig
from pykafka_client.errors import InvalidConfigurationError

V = TypeVar("V")
CONSUMER_SESSION_TIMEOUT_MS: Final = "consumer.session.timeout.ms"
CONSUMER_HEARTBEAT_INTERVAL_MS: Final = "consumer.heartbeat.interval.ms"
GROUP_CONFIG_KEYS: Final = (CONSUMER_HEARTBEAT_INTERVAL_MS, CONSUMER_SESSION_TIMEOUT_MS)
GROUP_CONFIG_DOCS: Final = {
    CONSUMER_SESSION_TIMEOUT_MS: "The timeout to detect client failures when using the consumer group protocol.",
    CONSUMER_HEARTBEAT_INTERVAL_MS: "The heartbeat interval given to the members of a consumer group.",
}


@dataclass(frozen=True)
class GroupConfigEntry:
    name: str
    value: str
    #: the group's own value (False: the broker's default for the group)
    is_group_value: bool
    documentation: str


def broker_default(name: str, config: ConsumerGroupConfig) -> int:
    return config.session_timeout_ms if name == CONSUMER_SESSION_TIMEOUT_MS else config.heartbeat_interval_ms


def effective(name: str, overrides: Mapping[str, int], config: ConsumerGroupConfig) -> int:
    """The group's value of ``name``: its override, else the broker's."""
    return overrides.get(name, broker_default(name, config))


def describe(overrides: Mapping[str, int], config: ConsumerGroupConfig,
             keys: list[str] | None = None) -> list[GroupConfigEntry]:
    """Every group config (or those of ``keys`` that exist), with the value that applies to the group."""
    names = [k for k in GROUP_CONFIG_KEYS if keys is None or k in keys]
    return [GroupConfigEntry(n, str(effective(n, overrides, config)), n in overrides, GROUP_CONFIG_DOCS[n])
            for n in names]


def validate(proposed: Mapping[str, int | str], config: ConsumerGroupConfig) -> dict[str, int]:
    """The group's new overrides (raw values parsed); InvalidConfigurationError says which value breaks which
    bound."""
    out: dict[str, int] = {}
    for name, raw in proposed.items():
        if name not in GROUP_CONFIG_KEYS:
            raise InvalidConfigurationError(f"Unknown group config name: {name}; the group configs are "
                                            f"{', '.join(GROUP_CONFIG_KEYS)}")
        try:
            out[name] = int(str(raw).strip())
        except ValueError:
            raise InvalidConfigurationError(f"Invalid value {raw} for configuration {name}: Not a number of "
                                            f"type INT") from None
    bounds = {CONSUMER_SESSION_TIMEOUT_MS: ("group.consumer.min.session.timeout.ms", config.min_session_timeout_ms,
                                            "group.consumer.max.session.timeout.ms", config.max_session_timeout_ms),
              CONSUMER_HEARTBEAT_INTERVAL_MS: ("group.consumer.min.heartbeat.interval.ms",
                                               config.min_heartbeat_interval_ms,
                                               "group.consumer.max.heartbeat.interval.ms",
                                               config.max_heartbeat_interval_ms)}
    for name, value in out.items():
        min_name, low, max_name, high = bounds[name]
        if value < low:
            raise InvalidConfigurationError(f"{name} must be greater than or equal to {min_name} ({low}); "
                                            f"{value} is not")
        if value > high:
            raise InvalidConfigurationError(f"{name} must be less than or equal to {max_name} ({high}); "
                                            f"{value} is not")
    session = effective(CONSUMER_SESSION_TIMEOUT_MS, out, config)
    heartbeat = effective(CONSUMER_HEARTBEAT_INTERVAL_MS, out, config)
    if heartbeat >= session:
        raise InvalidConfigurationError(f"{CONSUMER_HEARTBEAT_INTERVAL_MS} ({heartbeat}) must be less than "
                                        f"{CONSUMER_SESSION_TIMEOUT_MS} ({session})")
    return out


def apply_changes(stored: dict[str, dict[str, V]], group_id: str, changes: Mapping[str, str | None],
                  known: Collection[str], validate: Callable[[Mapping[str, V | str]], dict[str, V]],
                  validate_only: bool) -> dict[str, V] | None:
    """Set (a value) or remove (None) some of a group's configs in ``stored`` (group id -> overrides), validated
    as a whole (``validate`` raises InvalidConfigurationError); removing an unknown name is refused too. Returns
    the group's new overrides when they changed and were stored (the caller writes them), else None."""
    proposed: dict[str, V | str] = dict(stored.get(group_id, {}))
    for name, value in changes.items():
        if value is None:
            if name not in known:
                raise InvalidConfigurationError(f"Unknown group config name: {name}")
            proposed.pop(name, None)
        else:
            proposed[name] = value
    overrides = validate(proposed)
    if validate_only or overrides == stored.get(group_id, {}):
        return None
    if overrides:
        stored[group_id] = overrides
    else:
        stored.pop(group_id, None)
    return overrides

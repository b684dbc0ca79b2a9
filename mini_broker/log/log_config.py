"""Per-topic log configuration (Java LogConfig), with Kafka's topic config names and defaults.

:class:`LogConfig` is immutable; a log holds one and is given a new one on config change. Build it from
topic overrides with :meth:`LogConfig.from_props` (``{"segment.bytes": "1048576", ...}``), on top of
broker defaults taken with :meth:`LogConfig.from_broker` (``log.segment.bytes`` ...; see
:data:`BROKER_SYNONYMS`). :meth:`LogConfig.to_props` gives every topic config as strings (DescribeConfigs).

Only the settings the log acts on are typed fields: segment/roll, index, retention, flush, max message
size, timestamp type and delete delay. The others are kept as strings in ``other`` so that
DescribeConfigs can report them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final

from mini_broker.metadata_version import DEFAULT_MESSAGE_FORMAT_VERSION
from pykafka_client.config import ConfigType, parse_typed
from pykafka_client.errors import ConfigurationError

LONG_MAX: Final = 2**63 - 1

CREATE_TIME: Final = "CreateTime"
LOG_APPEND_TIME: Final = "LogAppendTime"

# Topic config name -> (field name, default, minimum). Defaults: Kafka's LogConfig / ServerLogConfigs.
_TYPED: Final[dict[str, tuple[str, int, int]]] = {
    "segment.bytes": ("segment_bytes", 1073741824, 14),
    "segment.ms": ("segment_ms", 604800000, 1),
    "segment.jitter.ms": ("segment_jitter_ms", 0, 0),
    "segment.index.bytes": ("max_index_size", 10485760, 4),
    "index.interval.bytes": ("index_interval_bytes", 4096, 0),
    "flush.messages": ("flush_interval_messages", LONG_MAX, 1),
    "flush.ms": ("flush_ms", LONG_MAX, 0),
    "retention.bytes": ("retention_bytes", -1, -(2**63)),
    "retention.ms": ("retention_ms", 604800000, -1),
    "max.message.bytes": ("max_message_bytes", 1048588, 0),
    "file.delete.delay.ms": ("file_delete_delay_ms", 60000, 0),
    "message.timestamp.before.max.ms": ("message_timestamp_before_max_ms", LONG_MAX, 0),
    "message.timestamp.after.max.ms": ("message_timestamp_after_max_ms", LONG_MAX, 0),
    "message.timestamp.difference.max.ms": ("message_timestamp_difference_max_ms", LONG_MAX, 0),
    "min.insync.replicas": ("min_in_sync_replicas", 1, 1),
}

# Topic configs the log does not act on, with their default (reported by DescribeConfigs).
OTHER_DEFAULTS: Final[dict[str, str]] = {
    "cleanup.policy": "delete",
    "compression.type": "producer",
    "delete.retention.ms": "86400000",
    "min.compaction.lag.ms": "0",
    "max.compaction.lag.ms": str(LONG_MAX),
    "min.cleanable.dirty.ratio": "0.5",
    "preallocate": "false",
    "unclean.leader.election.enable": "false",
    "message.downconversion.enable": "true",
    "message.format.version": DEFAULT_MESSAGE_FORMAT_VERSION,  # deprecated; ignored as Kafka 3.x ignores it
    "follower.replication.throttled.replicas": "",
    "leader.replication.throttled.replicas": "",
    "local.retention.bytes": "-2",
    "local.retention.ms": "-2",
    "remote.storage.enable": "false",
}

#: Topic config -> broker config it defaults from (Java ServerTopicConfigSynonyms, the ones we use).
BROKER_SYNONYMS: Final[dict[str, tuple[str, ...]]] = {
    "segment.bytes": ("log.segment.bytes",),
    "segment.ms": ("log.roll.ms", "log.roll.hours"),
    "segment.jitter.ms": ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    "segment.index.bytes": ("log.index.size.max.bytes",),
    "index.interval.bytes": ("log.index.interval.bytes",),
    "flush.messages": ("log.flush.interval.messages",),
    "flush.ms": ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    "retention.bytes": ("log.retention.bytes",),
    "retention.ms": ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    "max.message.bytes": ("message.max.bytes",),
    "file.delete.delay.ms": ("log.segment.delete.delay.ms",),
    "message.timestamp.type": ("log.message.timestamp.type",),
    "message.timestamp.before.max.ms": ("log.message.timestamp.before.max.ms",),
    "message.timestamp.after.max.ms": ("log.message.timestamp.after.max.ms",),
    "message.timestamp.difference.max.ms": ("log.message.timestamp.difference.max.ms",),
    "message.format.version": ("log.message.format.version",),
    "min.insync.replicas": ("min.insync.replicas",),
    "cleanup.policy": ("log.cleanup.policy",),
    "delete.retention.ms": ("log.cleaner.delete.retention.ms",),
    "min.compaction.lag.ms": ("log.cleaner.min.compaction.lag.ms",),
    "max.compaction.lag.ms": ("log.cleaner.max.compaction.lag.ms",),
    "min.cleanable.dirty.ratio": ("log.cleaner.min.cleanable.ratio",),
    "compression.type": ("compression.type",),
    "preallocate": ("log.preallocate",),
    "unclean.leader.election.enable": ("unclean.leader.election.enable",),
}

_UNIT_MS: Final[dict[str, int]] = {"hours": 3_600_000, "minutes": 60_000}


@dataclass(frozen=True, slots=True)
class LogConfig:
    """The configuration of one partition log. Field names are the Java ones in snake_case."""

    segment_bytes: int = 1073741824
    segment_ms: int = 604800000
    segment_jitter_ms: int = 0
    max_index_size: int = 10485760
    index_interval_bytes: int = 4096
    flush_interval_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    retention_bytes: int = -1
    retention_ms: int = 604800000
    max_message_bytes: int = 1048588
    file_delete_delay_ms: int = 60000
    message_timestamp_type: str = CREATE_TIME
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_after_max_ms: int = LONG_MAX
    #: Deprecated in Kafka 3.6 (removed in 4.0); see :attr:`timestamp_before_max_ms`.
    message_timestamp_difference_max_ms: int = LONG_MAX
    min_in_sync_replicas: int = 1
    other: Mapping[str, str] = field(default_factory=dict)
    #: Names that were set explicitly (topic overrides), for DescribeConfigs' is_default.
    overridden: frozenset[str] = frozenset()

    @property
    def is_log_append_time(self) -> bool:
        return self.message_timestamp_type == LOG_APPEND_TIME

    # -- compaction (``other`` holds these as strings; the log cleaner reads them here) ------------------
    @property
    def cleanup_policies(self) -> frozenset[str]:
        return frozenset(p.strip() for p in self.other.get("cleanup.policy", "delete").split(",") if p.strip())

    @property
    def compact(self) -> bool:
        """``cleanup.policy`` holds ``compact`` (alone or with ``delete``): the log cleaner compacts the log."""
        return "compact" in self.cleanup_policies

    @property
    def delete(self) -> bool:
        """``cleanup.policy`` holds ``delete``: retention by time and size applies."""
        return "delete" in self.cleanup_policies

    def _other_number(self, name: str) -> float:
        raw = self.other.get(name, OTHER_DEFAULTS[name])
        try:
            return float(raw) if name == "min.cleanable.dirty.ratio" else int(raw)
        except ValueError:
            raise ConfigurationError(f"invalid value {raw!r} for configuration {name}: not a number") from None

    @property
    def delete_retention_ms(self) -> int:
        return int(self._other_number("delete.retention.ms"))

    @property
    def min_compaction_lag_ms(self) -> int:
        return int(self._other_number("min.compaction.lag.ms"))

    @property
    def max_compaction_lag_ms(self) -> int:
        return int(self._other_number("max.compaction.lag.ms"))

    @property
    def min_cleanable_ratio(self) -> float:
        return self._other_number("min.cleanable.dirty.ratio")

    @property
    def max_segment_ms(self) -> int:
        """The age at which the active segment rolls: ``segment.ms``, or ``max.compaction.lag.ms`` when that is
        smaller on a compacted log (so records become cleanable within the lag, as Kafka)."""
        if self.compact and 0 < self.max_compaction_lag_ms < self.segment_ms:
            return self.max_compaction_lag_ms
        return self.segment_ms

    @property
    def timestamp_before_max_ms(self) -> int:
        """How far before the broker's time a CreateTime timestamp may be (Kafka's effective
        ``messageTimestampBeforeMaxMs``): ``message.timestamp.before.max.ms``, or the deprecated
        ``message.timestamp.difference.max.ms`` while the former keeps its default."""
        if self.message_timestamp_before_max_ms != LONG_MAX:
            return self.message_timestamp_before_max_ms
        return self.message_timestamp_difference_max_ms

    @property
    def timestamp_after_max_ms(self) -> int:
        """As :attr:`timestamp_before_max_ms`, for timestamps after the broker's time."""
        if self.message_timestamp_after_max_ms != LONG_MAX:
            return self.message_timestamp_after_max_ms
        return self.message_timestamp_difference_max_ms

    @classmethod
    def from_props(cls, props: Mapping[str, object], defaults: LogConfig | None = None) -> LogConfig:
        """``defaults`` (or Kafka's defaults) overridden by topic configs ``props``.

        Raises ``ConfigurationError`` naming the key for an unknown name, a non-integer or an
        out-of-range value.
        """
        base = defaults if defaults is not None else cls()
        changes: dict[str, object] = {}
        other = dict(base.other)
        for name, raw in props.items():
            if name in _TYPED:
                attr, _, minimum = _TYPED[name]
                value = _parse_int(name, raw)
                if value < minimum:
                    raise ConfigurationError(f"invalid value {raw!r} for configuration {name}: must be >= {minimum}")
                changes[attr] = value
            elif name == "message.timestamp.type":
                if str(raw) not in (CREATE_TIME, LOG_APPEND_TIME):
                    raise ConfigurationError(f"invalid value {raw!r} for configuration {name}")
                changes["message_timestamp_type"] = str(raw)
            elif name in OTHER_DEFAULTS:
                other[name] = _to_str(raw)
            else:
                raise ConfigurationError(f"unknown topic config {name}")
        changes["other"] = other
        changes["overridden"] = base.overridden | frozenset(props)
        return dataclasses.replace(base, **changes)  # type: ignore[arg-type]

    @classmethod
    def from_broker(cls, get: Callable[[str], object]) -> LogConfig:
        """Broker-wide defaults from broker configs (``get(name)`` returns the value or None when unset)."""
        props: dict[str, object] = {}
        for topic_name, synonyms in BROKER_SYNONYMS.items():
            for broker_name in synonyms:
                value = get(broker_name)
                if value is None:
                    continue
                unit = broker_name.rsplit(".", 1)[-1]
                if unit in _UNIT_MS:
                    value = _parse_int(broker_name, value) * _UNIT_MS[unit]
                props[topic_name] = value
                break
        config = cls.from_props(props)
        return dataclasses.replace(config, overridden=frozenset())

    def to_props(self) -> dict[str, str]:
        """Every topic config by name, as strings."""
        out = {name: str(getattr(self, attr)) for name, (attr, _, _) in _TYPED.items()}
        out["message.timestamp.type"] = self.message_timestamp_type
        for name, default in OTHER_DEFAULTS.items():
            out[name] = self.other.get(name, default)
        return out

    def is_default(self, name: str) -> bool:
        return name not in self.overridden


def _parse_int(name: str, raw: object) -> int:
    value: int = parse_typed(name, ConfigType.LONG, raw)
    return value


def _to_str(raw: object) -> str:
    if isinstance(raw, bool):
        return "true" if raw else "false"
    if isinstance(raw, (list, tuple)):
        return ",".join(str(x) for x in raw)
    return str(raw)

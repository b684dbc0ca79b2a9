"""Topic-level config names and the broker-level keys that set their defaults (Java ``ServerTopicConfigSynonyms``),
and the broker value a topic config inherits (DescribeConfigs ``DEFAULT_BROKER_CONFIG`` / ``STATIC_BROKER_CONFIG``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mini_broker.config_def import config_value_to_string

if TYPE_CHECKING:
    from mini_broker.config import KafkaConfig


# Topic-level config name -> broker-level synonyms in precedence order (Kafka ServerTopicConfigSynonyms).
TOPIC_CONFIG_SYNONYMS: dict[str, tuple[str, ...]] = {
    "segment.bytes": ("log.segment.bytes",),
    "segment.ms": ("log.roll.ms", "log.roll.hours"),
    "segment.jitter.ms": ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    "segment.index.bytes": ("log.index.size.max.bytes",),
    "flush.messages": ("log.flush.interval.messages",),
    "flush.ms": ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    "retention.bytes": ("log.retention.bytes",),
    "retention.ms": ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    "max.message.bytes": ("message.max.bytes",),
    "index.interval.bytes": ("log.index.interval.bytes",),
    "delete.retention.ms": ("log.cleaner.delete.retention.ms",),
    "min.compaction.lag.ms": ("log.cleaner.min.compaction.lag.ms",),
    "max.compaction.lag.ms": ("log.cleaner.max.compaction.lag.ms",),
    "file.delete.delay.ms": ("log.segment.delete.delay.ms",),
    "min.cleanable.dirty.ratio": ("log.cleaner.min.cleanable.ratio",),
    "cleanup.policy": ("log.cleanup.policy",),
    "unclean.leader.election.enable": ("unclean.leader.election.enable",),
    "min.insync.replicas": ("min.insync.replicas",),
    "compression.type": ("compression.type",),
    "preallocate": ("log.preallocate",),
    "message.format.version": ("log.message.format.version",),
    "message.timestamp.type": ("log.message.timestamp.type",),
    "message.timestamp.difference.max.ms": ("log.message.timestamp.difference.max.ms",),
    "message.timestamp.before.max.ms": ("log.message.timestamp.before.max.ms",),
    "message.timestamp.after.max.ms": ("log.message.timestamp.after.max.ms",),
    "message.downconversion.enable": ("log.message.downconversion.enable",),
}

_HOURS = 3600_000
_MINUTES = 60_000


def broker_value_for_topic_config(config: KafkaConfig, topic_key: str) -> tuple[str, str] | None:
    """If the broker sets a synonym of ``topic_key`` explicitly, return (synonym name, value as the
    topic-level string); otherwise None. Hour/minute synonyms are converted to ms."""
    for syn in TOPIC_CONFIG_SYNONYMS.get(topic_key, ()):
        if config.is_set(syn):
            v = config.get(syn)
            if v is None:
                continue
            if syn.endswith(".hours") and isinstance(v, int):
                v = v * _HOURS
            elif syn.endswith(".minutes") and isinstance(v, int):
                v = v * _MINUTES
            return syn, config_value_to_string(v)
    return None

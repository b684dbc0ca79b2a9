"""Topic configs as the broker describes and validates them (Kafka: ``ConfigHelper`` + ``LogConfig`` defaults).

A topic config's effective value comes, in order, from the topic override (source DYNAMIC_TOPIC_CONFIG),
the broker property that is its synonym when set in server.properties (STATIC_BROKER_CONFIG), or Kafka's
default (DEFAULT_CONFIG). :func:`describe_topic_configs` returns every topic config with its value,
source, default flag and synonyms, which is what DescribeConfigs and CreateTopics (v5+) report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mini_broker.config import KafkaConfig
from mini_broker.config_def import CONFIG_DEF, config_value_to_string
from mini_broker.server_topic_config_synonyms import TOPIC_CONFIG_SYNONYMS, broker_value_for_topic_config
from pykafka_client.config import ConfigType, parse_typed
from pykafka_client.errors import ConfigurationError, InvalidConfigurationError

# ConfigSource values of DescribeConfigs v1+
UNKNOWN = 0
DYNAMIC_TOPIC_CONFIG = 1
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5

# ConfigType of DescribeConfigs v3+ (SHORT = 4 is not used by any config we define)
CONFIG_TYPES: dict[ConfigType, int] = {
    ConfigType.BOOLEAN: 1, ConfigType.STRING: 2, ConfigType.INT: 3, ConfigType.LONG: 5, ConfigType.DOUBLE: 6,
    ConfigType.LIST: 7, ConfigType.CLASS: 8, ConfigType.PASSWORD: 9,
}
INT, LONG, BOOL, STR, LIST, DOUBLE = (ConfigType.INT, ConfigType.LONG, ConfigType.BOOLEAN, ConfigType.STRING,
                                      ConfigType.LIST, ConfigType.DOUBLE)

LONG_MAX = 2**63 - 1

# Topic config name -> (type, Kafka default as the topic-level string).
TOPIC_CONFIGS: dict[str, tuple[ConfigType, str]] = {
    "cleanup.policy": (LIST, "delete"),
    "compression.type": (STR, "producer"),
    "compression.gzip.level": (INT, "-1"),
    "compression.lz4.level": (INT, "9"),
    "compression.zstd.level": (INT, "3"),
    "delete.retention.ms": (LONG, "86400000"),
    "file.delete.delay.ms": (LONG, "60000"),
    "flush.messages": (LONG, str(LONG_MAX)),
    "flush.ms": (LONG, str(LONG_MAX)),
    "follower.replication.throttled.replicas": (LIST, ""),
    "index.interval.bytes": (INT, "4096"),
    "leader.replication.throttled.replicas": (LIST, ""),
    "local.retention.bytes": (LONG, "-2"),
    "local.retention.ms": (LONG, "-2"),
    "max.compaction.lag.ms": (LONG, str(LONG_MAX)),
    "max.message.bytes": (INT, "1048588"),
    "message.downconversion.enable": (BOOL, "true"),
    "message.timestamp.after.max.ms": (LONG, str(LONG_MAX)),
    "message.timestamp.before.max.ms": (LONG, str(LONG_MAX)),
    "message.timestamp.type": (STR, "CreateTime"),
    "min.cleanable.dirty.ratio": (DOUBLE, "0.5"),
    "min.compaction.lag.ms": (LONG, "0"),
    "min.insync.replicas": (INT, "1"),
    "preallocate": (BOOL, "false"),
    "remote.storage.enable": (BOOL, "false"),
    "retention.bytes": (LONG, "-1"),
    "retention.ms": (LONG, "604800000"),
    "segment.bytes": (INT, "1073741824"),
    "segment.index.bytes": (INT, "10485760"),
    "segment.jitter.ms": (LONG, "0"),
    "segment.ms": (LONG, "604800000"),
    "unclean.leader.election.enable": (BOOL, "false"),
}

_ENUMS = {
    "cleanup.policy": {"delete", "compact"},
    "compression.type": {"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"},
    "message.timestamp.type": {"CreateTime", "LogAppendTime"},
}
_AT_LEAST = {
    "segment.bytes": 14, "segment.ms": 1, "segment.index.bytes": 4, "segment.jitter.ms": 0, "retention.ms": -1,
    "retention.bytes": -1, "max.message.bytes": 0, "index.interval.bytes": 0, "delete.retention.ms": 0,
    "min.compaction.lag.ms": 0, "max.compaction.lag.ms": 1, "file.delete.delay.ms": 0, "flush.messages": 1,
    "flush.ms": 0, "min.insync.replicas": 1, "message.timestamp.before.max.ms": 0,
    "message.timestamp.after.max.ms": 0,
}


@dataclass(frozen=True)
class ConfigSynonym:
    name: str
    value: str | None
    source: int


@dataclass(frozen=True)
class ConfigEntry:
    """One described config."""

    name: str
    value: str | None
    source: int
    config_type: int
    read_only: bool = False
    is_sensitive: bool = False
    documentation: str | None = None
    synonyms: list[ConfigSynonym] = field(default_factory=list)

    @property
    def is_default(self) -> bool:
        return self.source == DEFAULT_CONFIG


def validate_topic_config(name: str, value: str | None) -> str:
    """Check one topic config; returns the normalised string. The value is parsed by the client's typed parser
    (:func:`pykafka_client.config.parse_typed`); a failure is reported as INVALID_CONFIG with Kafka's text
    (``InvalidConfigurationError``, which the request handlers put on the wire)."""
    spec = TOPIC_CONFIGS.get(name)
    if spec is None:
        raise InvalidConfigurationError(f"Unknown topic config name: {name}")
    if value is None:
        raise InvalidConfigurationError(f"Null value not supported for topic configs: {name}")
    type_, _ = spec
    v = value.strip()
    try:
        parsed = parse_typed(name, type_, v)
    except ConfigurationError:
        expected = ("Expected value to be either true or false" if type_ is BOOL
                    else f"Not a number of type {type_.name}")
        raise InvalidConfigurationError(f"Invalid value {value} for configuration {name}: {expected}") from None
    if type_ in (INT, LONG):
        lo = _AT_LEAST.get(name)
        if lo is not None and parsed < lo:
            raise InvalidConfigurationError(f"Invalid value {value} for configuration {name}: Value must be at least {lo}")
        return str(parsed)
    if type_ is DOUBLE:
        return str(parsed)
    if type_ is BOOL:
        return "true" if parsed else "false"
    items: list[str] = parsed if type_ is LIST else [parsed]
    allowed = _ENUMS.get(name)
    if allowed is not None and any(i not in allowed for i in items):
        raise InvalidConfigurationError(f"Invalid value {value} for configuration {name}: "
                                        f"String must be one of: {', '.join(sorted(allowed))}")
    return ",".join(items)


def validate_topic_configs(configs: dict[str, str | None]) -> dict[str, str]:
    return {k: validate_topic_config(k, v) for k, v in configs.items()}


def describe_topic_config(broker: KafkaConfig, overrides: dict[str, str], name: str,
                          include_synonyms: bool = False) -> ConfigEntry:
    type_, kafka_default = TOPIC_CONFIGS[name]
    synonyms: list[ConfigSynonym] = []
    if name in overrides:
        synonyms.append(ConfigSynonym(name, overrides[name], DYNAMIC_TOPIC_CONFIG))
    for syn in TOPIC_CONFIG_SYNONYMS.get(name, ()):
        if broker.is_set(syn):
            synonyms.append(ConfigSynonym(syn, config_value_to_string(broker.get(syn)), STATIC_BROKER_CONFIG))
    default_value = kafka_default
    syns = TOPIC_CONFIG_SYNONYMS.get(name, ())
    if syns:
        key = CONFIG_DEF.get(syns[0])
        if key is not None and key.default is not None and not syns[0].endswith((".hours", ".minutes")):
            default_value = config_value_to_string(key.default)
    synonyms.append(ConfigSynonym(syns[0] if syns else name, default_value, DEFAULT_CONFIG))
    if name in overrides:
        value, source = overrides[name], DYNAMIC_TOPIC_CONFIG
    else:
        broker_value = broker_value_for_topic_config(broker, name)
        if broker_value is not None:
            value, source = broker_value[1], STATIC_BROKER_CONFIG
        else:
            value, source = kafka_default, DEFAULT_CONFIG
    return ConfigEntry(name, value, source, CONFIG_TYPES.get(type_, 0),
                       synonyms=synonyms if include_synonyms else [])


def describe_topic_configs(broker: KafkaConfig, overrides: dict[str, str], names: list[str] | None = None,
                           include_synonyms: bool = False) -> list[ConfigEntry]:
    """Every topic config (or just ``names``; unknown names are skipped, as Kafka does)."""
    wanted = sorted(TOPIC_CONFIGS) if names is None else [n for n in names if n in TOPIC_CONFIGS]
    return [describe_topic_config(broker, overrides, n, include_synonyms) for n in wanted]


def describe_broker_configs(broker: KafkaConfig, names: list[str] | None = None,
                            include_synonyms: bool = False) -> list[ConfigEntry]:
    """Broker configs: set ones are STATIC_BROKER_CONFIG, the rest DEFAULT_CONFIG. Passwords are hidden."""
    wanted = sorted(CONFIG_DEF) if names is None else [n for n in names if n in CONFIG_DEF]
    out: list[ConfigEntry] = []
    for n in wanted:
        key = CONFIG_DEF[n]
        source = STATIC_BROKER_CONFIG if broker.is_set(n) else DEFAULT_CONFIG
        raw = broker.get(n)
        value = None if key.sensitive or raw is None else config_value_to_string(raw)
        syns = [ConfigSynonym(n, value, source)] if include_synonyms else []
        out.append(ConfigEntry(n, value, source, CONFIG_TYPES.get(key.type, 0), read_only=True,
                               is_sensitive=key.sensitive, synonyms=syns))
    return out

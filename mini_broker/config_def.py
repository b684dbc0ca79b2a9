"""The broker's configuration keys and how a value of each is parsed and printed (Java ``ConfigDef`` with the
key definitions of ``KafkaConfig`` / ``ServerLogConfigs`` / ``SocketServerConfigs``). :class:`mini_broker.config.KafkaConfig`
reads its values through these definitions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from pykafka_client.errors import ConfigurationError

ConfigValue = Union[int, float, bool, str, list[str], None]

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1


@dataclass(frozen=True)
class ConfigKey:
    """One broker property: name, type (``int``, ``long``, ``bool``, ``str``, ``list``, ``double``,
    ``password``), default (already parsed) and an optional lower bound."""

    name: str
    type: str
    default: ConfigValue
    at_least: int | None = None
    doc: str = ""
    sensitive: bool = False


def _k(name: str, type_: str, default: ConfigValue, at_least: int | None = None, doc: str = "") -> ConfigKey:
    return ConfigKey(name, type_, default, at_least, doc, type_ == "password")


# Kafka's names and defaults (KafkaConfig / ServerLogConfigs / SocketServerConfigs ...).
CONFIG_KEYS: tuple[ConfigKey, ...] = (
    # identity / listeners
    _k("node.id", "int", -1, doc="broker id; broker.id is its older synonym"),
    _k("broker.id", "int", -1),
    _k("listeners", "list", ["PLAINTEXT://127.0.0.1:9092"]),
    _k("advertised.listeners", "list", None),
    _k("listener.security.protocol.map", "str", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"),
    _k("inter.broker.listener.name", "str", None),
    _k("process.roles", "list", []),
    _k("controller.listener.names", "str", None),
    _k("controller.quorum.voters", "list", []),
    _k("controller.quorum.bootstrap.servers", "list", []),
    _k("broker.session.timeout.ms", "int", 9000, 1),
    _k("broker.heartbeat.interval.ms", "int", 2000, 1),
    _k("cluster.id", "str", None, doc="mini_broker extension; normally read from meta.properties"),
    # socket server
    _k("num.network.threads", "int", 3, 1),
    _k("num.io.threads", "int", 8, 1),
    _k("queued.max.requests", "int", 500, 1),
    _k("queued.max.request.bytes", "long", 104857600,
       doc="bound on request-frame memory (Kafka's default is -1, unbounded; -1 turns the pool off here too)"),
    _k("socket.request.max.bytes", "int", 104857600, 1),
    _k("socket.send.buffer.bytes", "int", 102400),
    _k("socket.receive.buffer.bytes", "int", 102400),
    _k("socket.listen.backlog.size", "int", 50, 1),
    _k("connections.max.idle.ms", "long", 600000),
    _k("max.connections.per.ip", "int", INT_MAX, 0),
    _k("max.connections.per.ip.overrides", "str", ""),
    _k("max.connections", "int", INT_MAX, 0),
    _k("max.connection.creation.rate", "int", INT_MAX, 0),
    _k("quota.window.num", "int", 11, 1),
    _k("quota.window.size.seconds", "int", 1, 1),
    _k("background.threads", "int", 10, 1),
    _k("request.timeout.ms", "int", 30000, 0),
    # topics
    _k("num.partitions", "int", 1, 1),
    _k("default.replication.factor", "int", 1, 1),
    _k("auto.create.topics.enable", "bool", True),
    _k("delete.topic.enable", "bool", True),
    _k("message.max.bytes", "int", 1048588, 0),
    _k("fetch.max.bytes", "int", 57671680, 1024),
    _k("max.incremental.fetch.session.cache.slots", "int", 1000, 0),
    _k("min.insync.replicas", "int", 1, 1),
    _k("compression.type", "str", "producer"),
    _k("unclean.leader.election.enable", "bool", False),
    # log
    _k("log.dirs", "list", None),
    _k("log.dir", "str", "/tmp/kafka-logs"),
    _k("log.segment.bytes", "int", 1073741824, 14),
    _k("log.roll.ms", "long", None),
    _k("log.roll.hours", "int", 168, 1),
    _k("log.roll.jitter.ms", "long", None),
    _k("log.roll.jitter.hours", "int", 0, 0),
    _k("log.retention.ms", "long", None),
    _k("log.retention.minutes", "int", None),
    _k("log.retention.hours", "int", 168),
    _k("log.retention.bytes", "long", -1),
    _k("log.retention.check.interval.ms", "long", 300000, 1),
    _k("log.cleanup.policy", "list", ["delete"]),
    _k("log.cleaner.enable", "bool", True),
    _k("log.index.size.max.bytes", "int", 10485760, 4),
    _k("log.index.interval.bytes", "int", 4096, 0),
    _k("log.flush.interval.messages", "long", LONG_MAX, 1),
    _k("log.flush.interval.ms", "long", None),
    _k("log.flush.scheduler.interval.ms", "long", LONG_MAX),
    _k("log.segment.delete.delay.ms", "long", 60000, 0),
    _k("log.preallocate", "bool", False),
    _k("log.message.timestamp.type", "str", "CreateTime"),
    _k("log.message.timestamp.before.max.ms", "long", LONG_MAX, 0),
    _k("log.message.timestamp.after.max.ms", "long", LONG_MAX, 0),
    _k("log.message.downconversion.enable", "bool", True),
    _k("num.recovery.threads.per.data.dir", "int", 2, 1),
    _k("log.cleaner.delete.retention.ms", "long", 86400000, 0),
    _k("log.cleaner.min.compaction.lag.ms", "long", 0, 0),
    _k("log.cleaner.max.compaction.lag.ms", "long", LONG_MAX, 1),
    _k("log.cleaner.min.cleanable.ratio", "double", 0.5),
    # purgatories
    _k("fetch.purgatory.purge.interval.requests", "int", 1000),
    _k("producer.purgatory.purge.interval.requests", "int", 1000),
    _k("delete.records.purgatory.purge.interval.requests", "int", 1),
    # replication (single broker: informational)
    _k("replica.lag.time.max.ms", "long", 30000),
    _k("replica.fetch.max.bytes", "int", 1048576, 0),
    _k("replica.fetch.wait.max.ms", "int", 500),
    _k("replica.fetch.min.bytes", "int", 1),
    _k("controlled.shutdown.enable", "bool", True),
    # groups / offsets / transactions (later issues)
    _k("group.initial.rebalance.delay.ms", "int", 3000, 0),
    _k("group.min.session.timeout.ms", "int", 6000),
    _k("group.max.session.timeout.ms", "int", 1800000),
    _k("group.max.size", "int", INT_MAX, 1),
    _k("offsets.topic.num.partitions", "int", 50, 1),
    _k("offsets.topic.replication.factor", "int", 3, 1),
    _k("offsets.topic.segment.bytes", "int", 104857600, 1),
    _k("offsets.retention.minutes", "int", 10080, 1),
    _k("offsets.retention.check.interval.ms", "long", 600000, 1),
    _k("offsets.commit.timeout.ms", "int", 5000, 1),
    _k("offset.metadata.max.bytes", "int", 4096),
    _k("transaction.state.log.num.partitions", "int", 50, 1),
    _k("transaction.state.log.replication.factor", "int", 3, 1),
    _k("transaction.state.log.min.isr", "int", 2, 1),
    _k("transaction.max.timeout.ms", "int", 900000, 1),
    _k("transactional.id.expiration.ms", "int", 604800000, 1),
    _k("transaction.abort.timed.out.transaction.cleanup.interval.ms", "int", 10000, 1),
    _k("transaction.remove.expired.transaction.cleanup.interval.ms", "int", 3600000, 1),
    _k("transaction.state.log.segment.bytes", "int", 104857600, 1),
    _k("transaction.state.log.load.buffer.size", "int", 5242880, 1),
    _k("producer.id.expiration.ms", "int", 86400000, 1),
    _k("producer.id.expiration.check.interval.ms", "int", 600000, 1),
    _k("transaction.partition.verification.enable", "bool", True),
    # security (accepted, only PLAINTEXT is served for now)
    _k("sasl.enabled.mechanisms", "list", ["GSSAPI"]),
    _k("ssl.keystore.password", "password", None),
    _k("ssl.key.password", "password", None),
    _k("ssl.truststore.password", "password", None),
)

CONFIG_DEF: dict[str, ConfigKey] = {k.name: k for k in CONFIG_KEYS}


def _parse_bool(name: str, raw: str) -> bool:
    v = raw.strip().lower()
    if v == "true":
        return True
    if v == "false":
        return False
    raise ConfigurationError(f"Invalid value {raw!r} for configuration {name}: expected true or false")


def parse_int(name: str, raw: str, lo: int, hi: int, kind: str) -> int:
    try:
        v = int(raw.strip())
    except ValueError:
        raise ConfigurationError(f"Invalid value {raw!r} for configuration {name}: not a number of type {kind}") from None
    if not lo <= v <= hi:
        raise ConfigurationError(f"Invalid value {raw!r} for configuration {name}: out of range for {kind}")
    return v


def parse_value(key: ConfigKey, raw: object) -> ConfigValue:
    """Parse ``raw`` (a string from a properties file, or an already-typed Python value) for ``key``."""
    if raw is None:
        return None
    if key.type == "list":
        if isinstance(raw, (list, tuple)):
            items = [str(x).strip() for x in raw]
        else:
            items = [p.strip() for p in str(raw).split(",")]
        return [p for p in items if p]
    if isinstance(raw, bool):
        if key.type != "bool":
            raise ConfigurationError(f"Invalid value {raw!r} for configuration {key.name}: expected {key.type}")
        return raw
    text = str(raw)
    value: ConfigValue
    if key.type == "bool":
        value = _parse_bool(key.name, text)
    elif key.type == "int":
        value = parse_int(key.name, text, -(2**31), INT_MAX, "int")
    elif key.type == "long":
        value = parse_int(key.name, text, -(2**63), LONG_MAX, "long")
    elif key.type == "double":
        try:
            value = float(text)
        except ValueError:
            raise ConfigurationError(f"Invalid value {raw!r} for configuration {key.name}: not a double") from None
    else:
        value = text.strip()
    if key.at_least is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
        if value < key.at_least:
            raise ConfigurationError(f"Invalid value {raw!r} for configuration {key.name}: Value must be at least {key.at_least}")
    return value


def config_value_to_string(v: ConfigValue) -> str:
    """A value as Kafka prints it in DescribeConfigs (lists comma-joined, booleans lower case)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return ",".join(v)
    if v is None:
        return ""
    return str(v)

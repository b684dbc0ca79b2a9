"""The broker's configuration keys (Java ``ConfigDef`` with the key definitions of ``KafkaConfig`` /
``ServerLogConfigs`` / ``SocketServerConfigs``), defined with the client's config machinery
(:mod:`pykafka_client.config`): the same :class:`ConfigKey`, :class:`ConfigType`, validators, boolean parser and
:class:`ConfigurationError`. :class:`mini_broker.config.KafkaConfig` reads its values through these definitions.

A broker value usually comes from a ``server.properties`` file, so strings and lists are read leniently, as
Kafka reads a properties file: surrounding spaces are dropped, empty list items are skipped, and a non-string
value is taken by its text."""

from __future__ import annotations

from typing import Any, Union

from mini_broker.metadata_version import (
    DEFAULT_MESSAGE_FORMAT_VERSION,
    LATEST_PRODUCTION,
    version_validator,
)
from pykafka_client.config import (
    INT_MAX,
    LONG_MAX,
    ConfigDef,
    ConfigKey,
    ConfigType,
    Parser,
    Validator,
    at_least,
    one_of,
)
from pykafka_client.errors import ConfigurationError

ConfigValue = Union[int, float, bool, str, list[str], None]

__all__ = ["BROKER_CONFIG", "CONFIG_DEF", "CONFIG_KEYS", "INT_MAX", "LONG_MAX", "ConfigKey", "ConfigType",
           "ConfigValue", "config_value_to_string", "parse_value"]


def _parse_text(name: str, raw: Any) -> str:
    if isinstance(raw, bool):
        raise ConfigurationError(f"Invalid value {raw!r} for configuration {name}: expected a string")
    return str(raw).strip()


def _parse_items(name: str, raw: Any) -> list[str]:
    items = [str(x).strip() for x in raw] if isinstance(raw, (list, tuple)) else [p.strip() for p in str(raw).split(",")]
    return [p for p in items if p]


_LENIENT: dict[ConfigType, Parser] = {
    ConfigType.STRING: _parse_text, ConfigType.PASSWORD: _parse_text, ConfigType.LIST: _parse_items,
}

INT, LONG, BOOL, STR, LIST, DOUBLE, PASSWORD = (ConfigType.INT, ConfigType.LONG, ConfigType.BOOLEAN,
                                                ConfigType.STRING, ConfigType.LIST, ConfigType.DOUBLE,
                                                ConfigType.PASSWORD)

#: The broker's keys. Every value may be null (unset); ``min`` is the lower bound Kafka's definition has.
BROKER_CONFIG = ConfigDef()


def _k(name: str, type_: ConfigType, default: ConfigValue, min: int | None = None, doc: str = "",
       validator: Validator | None = None) -> None:
    check = at_least(min) if min is not None else validator
    BROKER_CONFIG.define(name, type_, default, check, doc, nullable=True, parser=_LENIENT.get(type_))


# Kafka's names and defaults (KafkaConfig / ServerLogConfigs / SocketServerConfigs ...).
# identity / listeners
_k("node.id", INT, -1, doc="broker id; broker.id is its older synonym")
_k("broker.id", INT, -1)
_k("listeners", LIST, ["PLAINTEXT://127.0.0.1:9092"])
_k("advertised.listeners", LIST, None)
_k("listener.security.protocol.map", STR,
   "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT")
_k("inter.broker.listener.name", STR, None,
   doc="the listener the brokers of a cluster use to reach each other (replica fetching, transaction markers)")
_k("security.inter.broker.protocol", STR, "PLAINTEXT",
   doc="the inter-broker listener's name when inter.broker.listener.name is not set (only one of them may be)")
_k("sasl.mechanism.inter.broker.protocol", STR, "GSSAPI",
   doc="the SASL mechanism a broker authenticates with on a SASL inter-broker listener (PLAIN, SCRAM-SHA-256/512)")
_k("process.roles", LIST, [])
_k("controller.listener.names", STR, None)
_k("controller.quorum.voters", LIST, [])
_k("controller.quorum.bootstrap.servers", LIST, [])
_k("inter.broker.protocol.version", STR, LATEST_PRODUCTION.version, validator=version_validator,
   doc="deprecated in KRaft mode (Kafka 3.3+): checked and otherwise ignored")
_k("broker.session.timeout.ms", INT, 9000, 1)
_k("broker.heartbeat.interval.ms", INT, 2000, 1)
_k("auto.leader.rebalance.enable", BOOL, True)
_k("leader.imbalance.check.interval.seconds", LONG, 300, 1)
_k("leader.imbalance.per.broker.percentage", INT, 10, 0)
_k("cluster.id", STR, None, doc="mini_broker extension; normally read from meta.properties")
# socket server
_k("num.network.threads", INT, 3, 1)
_k("num.io.threads", INT, 8, 1)
_k("queued.max.requests", INT, 500, 1)
_k("queued.max.request.bytes", LONG, 104857600,
    doc="bound on request-frame memory (Kafka's default is -1, unbounded; -1 turns the pool off here too)")
_k("socket.request.max.bytes", INT, 104857600, 1)
_k("socket.send.buffer.bytes", INT, 102400)
_k("socket.receive.buffer.bytes", INT, 102400)
_k("socket.listen.backlog.size", INT, 50, 1)
_k("connections.max.idle.ms", LONG, 600000)
_k("max.connections.per.ip", INT, INT_MAX, 0)
_k("max.connections.per.ip.overrides", STR, "")
_k("max.connections", INT, INT_MAX, 0)
_k("max.connection.creation.rate", INT, INT_MAX, 0)
_k("quota.window.num", INT, 11, 1)
_k("quota.window.size.seconds", INT, 1, 1)
_k("background.threads", INT, 10, 1)
_k("request.timeout.ms", INT, 30000, 0)
# topics
_k("num.partitions", INT, 1, 1)
_k("default.replication.factor", INT, 1, 1)
_k("auto.create.topics.enable", BOOL, True)
_k("delete.topic.enable", BOOL, True)
_k("message.max.bytes", INT, 1048588, 0)
_k("fetch.max.bytes", INT, 57671680, 1024)
_k("max.incremental.fetch.session.cache.slots", INT, 1000, 0)
_k("min.insync.replicas", INT, 1, 1)
_k("compression.type", STR, "producer")
_k("unclean.leader.election.enable", BOOL, False)
# log
_k("log.dirs", LIST, None)
_k("log.dir", STR, "/tmp/kafka-logs")
_k("log.segment.bytes", INT, 1073741824, 14)
_k("log.roll.ms", LONG, None)
_k("log.roll.hours", INT, 168, 1)
_k("log.roll.jitter.ms", LONG, None)
_k("log.roll.jitter.hours", INT, 0, 0)
_k("log.retention.ms", LONG, None)
_k("log.retention.minutes", INT, None)
_k("log.retention.hours", INT, 168)
_k("log.retention.bytes", LONG, -1)
_k("log.retention.check.interval.ms", LONG, 300000, 1)
_k("log.cleanup.policy", LIST, ["delete"])
_k("log.cleaner.enable", BOOL, True)
_k("log.cleaner.threads", INT, 1, 0)
_k("log.cleaner.backoff.ms", LONG, 15000, 0)
_k("log.cleaner.io.max.bytes.per.second", DOUBLE, 1.7976931348623157e308)
_k("log.cleaner.dedupe.buffer.size", LONG, 134217728)
_k("log.cleaner.io.buffer.size", INT, 524288, 0)
_k("log.cleaner.io.buffer.load.factor", DOUBLE, 0.9)
_k("log.index.size.max.bytes", INT, 10485760, 4)
_k("log.index.interval.bytes", INT, 4096, 0)
_k("log.flush.interval.messages", LONG, LONG_MAX, 1)
_k("log.flush.interval.ms", LONG, None)
_k("log.flush.scheduler.interval.ms", LONG, LONG_MAX)
_k("log.segment.delete.delay.ms", LONG, 60000, 0)
_k("log.preallocate", BOOL, False)
_k("log.message.timestamp.type", STR, "CreateTime")
_k("log.message.timestamp.before.max.ms", LONG, LONG_MAX, 0)
_k("log.message.timestamp.after.max.ms", LONG, LONG_MAX, 0)
_k("log.message.downconversion.enable", BOOL, True)
# deprecated in Kafka 3.x, removed in 4.0: accepted as 3.x accepts them
_k("log.message.format.version", STR, DEFAULT_MESSAGE_FORMAT_VERSION, validator=version_validator,
   doc="ignored: the inter-broker protocol is 3.0-IV1 or newer, records are always format v2")
_k("log.message.timestamp.difference.max.ms", LONG, LONG_MAX, 0,
   doc="used for log.message.timestamp.before/after.max.ms while they keep their defaults")
_k("num.recovery.threads.per.data.dir", INT, 2, 1)
_k("log.cleaner.delete.retention.ms", LONG, 86400000, 0)
_k("log.cleaner.min.compaction.lag.ms", LONG, 0, 0)
_k("log.cleaner.max.compaction.lag.ms", LONG, LONG_MAX, 1)
_k("log.cleaner.min.cleanable.ratio", DOUBLE, 0.5)
# purgatories
_k("fetch.purgatory.purge.interval.requests", INT, 1000)
_k("producer.purgatory.purge.interval.requests", INT, 1000)
_k("delete.records.purgatory.purge.interval.requests", INT, 1)
# replication (single broker: informational)
_k("replica.lag.time.max.ms", LONG, 30000)
_k("replica.fetch.max.bytes", INT, 1048576, 0)
_k("replica.fetch.wait.max.ms", INT, 500)
_k("replica.fetch.min.bytes", INT, 1)
_k("controlled.shutdown.enable", BOOL, True)
# groups / offsets / transactions (later issues)
_k("group.initial.rebalance.delay.ms", INT, 3000, 0)
_k("group.min.session.timeout.ms", INT, 6000)
_k("group.max.session.timeout.ms", INT, 1800000)
_k("group.max.size", INT, INT_MAX, 1)
# KIP-848 consumer groups (mini_broker/group/consumer)
_k("group.consumer.session.timeout.ms", INT, 45000, 1)
_k("group.consumer.heartbeat.interval.ms", INT, 5000, 1)
_k("group.consumer.assignors", LIST, ["uniform", "range"])
_k("group.consumer.max.size", INT, INT_MAX, 1)
_k("group.consumer.min.session.timeout.ms", INT, 45000, 1)
_k("group.consumer.max.session.timeout.ms", INT, 60000, 1)
_k("group.consumer.min.heartbeat.interval.ms", INT, 5000, 1)
_k("group.consumer.max.heartbeat.interval.ms", INT, 15000, 1)
_k("group.consumer.migration.policy", STR, "bidirectional",
   doc="bidirectional, upgrade, downgrade or disabled: the online conversions between classic and consumer groups",
   validator=one_of("bidirectional", "upgrade", "downgrade", "disabled"))
# KIP-932 share groups (mini_broker/share): Kafka's group.share.* broker configs; share.auto.offset.reset and
# share.isolation.level are Kafka's per-group configs, here broker-wide defaults
_k("group.share.session.timeout.ms", INT, 45000, 1)
_k("group.share.heartbeat.interval.ms", INT, 5000, 1)
_k("group.share.record.lock.duration.ms", INT, 30000, 1)
_k("group.share.delivery.count.limit", INT, 5, 1)
_k("group.share.partition.max.record.locks", INT, 2000, 1)
_k("group.share.max.size", INT, 200, 1)
_k("group.share.max.share.sessions", INT, 2000, 1)
_k("share.auto.offset.reset", STR, "latest", doc="latest or earliest: where a share group starts reading a "
   "partition it has not read before", validator=one_of("latest", "earliest"))
_k("share.isolation.level", STR, "read_uncommitted", validator=one_of("read_uncommitted", "read_committed"))
# the share coordinator's __share_group_state (mini_broker/share/share_coordinator, cluster/share_state)
_k("share.coordinator.state.topic.num.partitions", INT, 50, 1)
_k("share.coordinator.state.topic.replication.factor", INT, 3, 1)
_k("share.coordinator.state.topic.min.isr", INT, 2, 1)
_k("share.coordinator.state.topic.segment.bytes", INT, 104857600, 1)
_k("share.coordinator.snapshot.update.records.per.snapshot", INT, 500, 1)
_k("offsets.topic.num.partitions", INT, 50, 1)
_k("offsets.topic.replication.factor", INT, 3, 1)
_k("offsets.topic.segment.bytes", INT, 104857600, 1)
_k("offsets.retention.minutes", INT, 10080, 1)
_k("offsets.retention.check.interval.ms", LONG, 600000, 1)
_k("offsets.commit.timeout.ms", INT, 5000, 1)
_k("offset.metadata.max.bytes", INT, 4096)
_k("transaction.state.log.num.partitions", INT, 50, 1)
_k("transaction.state.log.replication.factor", INT, 3, 1)
_k("transaction.state.log.min.isr", INT, 2, 1)
_k("transaction.max.timeout.ms", INT, 900000, 1)
_k("transactional.id.expiration.ms", INT, 604800000, 1)
_k("transaction.abort.timed.out.transaction.cleanup.interval.ms", INT, 10000, 1)
_k("transaction.remove.expired.transaction.cleanup.interval.ms", INT, 3600000, 1)
_k("transaction.state.log.segment.bytes", INT, 104857600, 1)
_k("transaction.state.log.load.buffer.size", INT, 5242880, 1)
_k("producer.id.expiration.ms", INT, 86400000, 1)
_k("producer.id.expiration.check.interval.ms", INT, 600000, 1)
_k("transaction.partition.verification.enable", BOOL, True)
# authorization (mini_broker.security.authorizer)
_k("authorizer.class.name", STR, "",
   doc="org.apache.kafka.metadata.authorizer.StandardAuthorizer switches ACL authorization on; empty: off")
_k("super.users", STR, None, doc="principals allowed everything, separated by ';' (User:admin;User:broker)")
_k("allow.everyone.if.no.acl.found", BOOL, False,
   doc="with the authorizer on: allow a resource that has no ACL at all")
# listener security (mini_broker.security): each may also be set per listener as listener.name.<listener>.<key>
_k("sasl.enabled.mechanisms", LIST, ["GSSAPI"])
_k("sasl.jaas.config", PASSWORD, None)
_k("connections.max.reauth.ms", LONG, 0, 0)
_k("connection.failed.authentication.delay.ms", INT, 100, 0)
_k("ssl.keystore.type", STR, "JKS")
_k("ssl.keystore.location", STR, None)
_k("ssl.keystore.password", PASSWORD, None)
_k("ssl.keystore.certificate.chain", PASSWORD, None)
_k("ssl.keystore.key", PASSWORD, None)
_k("ssl.key.password", PASSWORD, None)
_k("ssl.truststore.type", STR, "JKS")
_k("ssl.truststore.location", STR, None)
_k("ssl.truststore.password", PASSWORD, None)
_k("ssl.truststore.certificates", PASSWORD, None)
_k("ssl.client.auth", STR, "none")
_k("ssl.principal.mapping.rules", STR, "DEFAULT")
_k("ssl.endpoint.identification.algorithm", STR, "https",
   doc="inter-broker TLS: https verifies the other broker's host name against its certificate; empty turns it off")
_k("ssl.enabled.protocols", LIST, ["TLSv1.2", "TLSv1.3"])
_k("ssl.cipher.suites", LIST, [])

CONFIG_DEF: dict[str, ConfigKey] = dict(BROKER_CONFIG.keys())
CONFIG_KEYS: tuple[ConfigKey, ...] = tuple(CONFIG_DEF.values())


def parse_value(key: ConfigKey, raw: object) -> ConfigValue:
    """Parse ``raw`` (a string from a properties file, or an already-typed Python value) for ``key`` and check it
    against the key's bound; ``None`` stays ``None`` (unset). Raises :class:`ConfigurationError` naming the key."""
    if raw is None:
        return None
    value: ConfigValue = key.parse(raw)
    if key.validator is not None:
        key.validator(key.name, value)
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

"""Consumer configuration (Java: ConsumerConfig): Kafka's key names and defaults, validated as a set,
on the shared :class:`pykafka_client.config.ConfigDef`.

:class:`ConsumerConfig` takes a mapping of dotted Kafka names to values (Python values or the strings a
properties file would hold: "true", "500", "a,b"); keyword overrides may use underscores for dots.
Unknown keys and invalid values raise :class:`~pykafka_client.errors.ConfigurationError` naming the key.
Durations keep their ``*.ms`` names and are integers in milliseconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykafka_client.config import AbstractConfig, ConfigDef, ConfigType, at_least, one_of
from pykafka_client.errors import ConfigurationError

_T = ConfigType
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
#: string keys whose values are case-insensitive enums, stored lower-case
_LOWERCASE_KEYS = ("auto.offset.reset", "isolation.level", "group.protocol", "client.dns.lookup")

# fmt: off
CONSUMER_CONFIG = (
    ConfigDef()
    .define("bootstrap.servers", _T.LIST, [], doc="host:port pairs used to discover the cluster")
    .define("client.dns.lookup", _T.STRING, "use_all_dns_ips", one_of("use_all_dns_ips", "resolve_canonical_bootstrap_servers_only"))
    .define("client.id", _T.STRING, "")
    .define("client.rack", _T.STRING, "")
    .define("group.id", _T.STRING, None, nullable=True)
    .define("group.instance.id", _T.STRING, None, nullable=True, doc="static membership id (KIP-345)")
    .define("group.protocol", _T.STRING, "classic", one_of("classic"))
    .define("session.timeout.ms", _T.INT, 45_000, at_least(1))
    .define("heartbeat.interval.ms", _T.INT, 3000, at_least(1))
    .define("max.poll.interval.ms", _T.INT, 300_000, at_least(1))
    .define("rebalance.timeout.ms", _T.INT, None, at_least(1), nullable=True, doc="defaults to max.poll.interval.ms")
    .define("partition.assignment.strategy", _T.CLASS, "range,cooperative-sticky",
            doc="assignor names (range, roundrobin, sticky, cooperative-sticky, or Java class names), "
                "ConsumerPartitionAssignor classes or instances")
    .define("enable.auto.commit", _T.BOOLEAN, True)
    .define("auto.commit.interval.ms", _T.INT, 5000, at_least(0))
    .define("auto.offset.reset", _T.STRING, "latest", one_of("latest", "earliest", "none"))
    .define("max.poll.records", _T.INT, 500, at_least(1))
    .define("fetch.min.bytes", _T.INT, 1, at_least(0))
    .define("fetch.max.bytes", _T.INT, 52_428_800, at_least(0))
    .define("fetch.max.wait.ms", _T.INT, 500, at_least(0))
    .define("max.partition.fetch.bytes", _T.INT, 1_048_576, at_least(0))
    .define("isolation.level", _T.STRING, "read_uncommitted", one_of("read_uncommitted", "read_committed"))
    .define("check.crcs", _T.BOOLEAN, True)
    .define("exclude.internal.topics", _T.BOOLEAN, True)
    .define("allow.auto.create.topics", _T.BOOLEAN, True)
    .define("key.deserializer", _T.CLASS, None, nullable=True)
    .define("value.deserializer", _T.CLASS, None, nullable=True)
    .define("metadata.max.age.ms", _T.LONG, 300_000, at_least(0))
    .define("metadata.recovery.strategy", _T.STRING, "none", one_of("none", "rebootstrap"))
    .define("request.timeout.ms", _T.INT, 30_000, at_least(0))
    .define("default.api.timeout.ms", _T.INT, 60_000, at_least(0))
    .define("retry.backoff.ms", _T.LONG, 100, at_least(0))
    .define("retry.backoff.max.ms", _T.LONG, 1000, at_least(0))
    .define("reconnect.backoff.ms", _T.LONG, 50, at_least(0))
    .define("reconnect.backoff.max.ms", _T.LONG, 1000, at_least(0))
    .define("socket.connection.setup.timeout.ms", _T.LONG, 10_000, at_least(0))
    .define("socket.connection.setup.timeout.max.ms", _T.LONG, 30_000, at_least(0))
    .define("connections.max.idle.ms", _T.LONG, 540_000)
    .define("send.buffer.bytes", _T.INT, 131_072, at_least(-1))
    .define("receive.buffer.bytes", _T.INT, 65_536, at_least(-1))
    .define("internal.leave.group.on.close", _T.BOOLEAN, True)
    .define("interceptor.classes", _T.LIST, [])
    .define("security.protocol", _T.STRING, "PLAINTEXT", one_of(*SECURITY_PROTOCOLS))
    .define("ssl.ca.location", _T.STRING, None, nullable=True)
    .define("ssl.certificate.location", _T.STRING, None, nullable=True)
    .define("ssl.key.location", _T.STRING, None, nullable=True)
    .define("ssl.key.password", _T.PASSWORD, None, nullable=True)
    .define("ssl.check.hostname", _T.BOOLEAN, True)
    .define("ssl.endpoint.identification.algorithm", _T.STRING, "https")
    .define("ssl.truststore.location", _T.STRING, None, nullable=True)
    .define("ssl.truststore.type", _T.STRING, None, nullable=True)
    .define("ssl.keystore.location", _T.STRING, None, nullable=True)
    .define("ssl.keystore.password", _T.PASSWORD, None, nullable=True)
    .define("ssl.keystore.type", _T.STRING, None, nullable=True)
    .define("ssl.enabled.protocols", _T.LIST, None, nullable=True)
    .define("ssl.cipher.suites", _T.LIST, None, nullable=True)
    .define("sasl.mechanism", _T.STRING, "GSSAPI")
    .define("sasl.username", _T.STRING, None, nullable=True)
    .define("sasl.password", _T.PASSWORD, None, nullable=True)
    .define("sasl.jaas.config", _T.PASSWORD, None, nullable=True)
    .define("metrics.num.samples", _T.INT, 2, at_least(1))
    .define("metrics.sample.window.ms", _T.LONG, 30_000, at_least(0))
    .define("metrics.recording.level", _T.STRING, "INFO", one_of("INFO", "DEBUG", "TRACE"))
    .define("enable.metrics.push", _T.BOOLEAN, True)
)
# fmt: on


class ConsumerConfig(AbstractConfig):
    """Validated consumer configuration; read values with ``cfg["fetch.min.bytes"]``.

    Cross-key rules (Java ConsumerConfig / KafkaConsumer constructor):
    * ``heartbeat.interval.ms`` must be lower than ``session.timeout.ms`` when a group is used;
    * ``enable.auto.commit`` cannot be set explicitly to true without ``group.id``; it is turned off
      silently when no group is configured and the user did not ask for it;
    * ``group.instance.id``, if given, must be non-empty;
    * ``partition.assignment.strategy`` names at least one assignor (a comma-separated string or a list).
    """

    def __init__(self, configs: Mapping[str, Any] | None = None, **overrides: Any) -> None:
        given: dict[str, Any] = dict(configs or {})
        for key, value in overrides.items():
            given[key.replace("_", ".")] = value
        for key in given:
            if not isinstance(key, str):
                raise ConfigurationError(f"configuration keys must be strings, got {key!r}")
        super().__init__(CONSUMER_CONFIG, given)
        self._validate()

    def _validate(self) -> None:
        v = self.values
        for key in _LOWERCASE_KEYS:
            if isinstance(v[key], str):
                v[key] = v[key].lower()
        strategy = v["partition.assignment.strategy"]
        if isinstance(strategy, str):
            strategy = [s.strip() for s in strategy.split(",") if s.strip()]
        elif isinstance(strategy, (list, tuple)):
            strategy = list(strategy)
        else:
            strategy = [strategy]
        if not strategy:
            raise ConfigurationError("partition.assignment.strategy must name at least one assignor")
        v["partition.assignment.strategy"] = strategy
        if v["group.id"] is None:
            if self.was_set("enable.auto.commit") and v["enable.auto.commit"]:
                raise ConfigurationError(
                    "enable.auto.commit cannot be set to true when the default group id (None) is used"
                )
            v["enable.auto.commit"] = False
        elif v["heartbeat.interval.ms"] >= v["session.timeout.ms"]:
            raise ConfigurationError(
                "heartbeat.interval.ms must be lower than session.timeout.ms "
                f"({v['heartbeat.interval.ms']} >= {v['session.timeout.ms']})"
            )
        gi = v["group.instance.id"]
        if gi is not None and not gi:
            raise ConfigurationError("group.instance.id cannot be an empty string")
        if v["rebalance.timeout.ms"] is None:
            v["rebalance.timeout.ms"] = v["max.poll.interval.ms"]

    def security_config(self) -> dict[str, Any]:
        """The keys the transport reads (security.protocol, ssl.*, sasl.*), unset ones left out."""
        return {
            k: v
            for k, v in self.values.items()
            if (k == "security.protocol" or k.startswith(("ssl.", "sasl."))) and v not in (None, [])
        }

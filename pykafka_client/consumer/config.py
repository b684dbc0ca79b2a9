"""Consumer configuration (Java: ConsumerConfig): Kafka's key names and defaults, validated as a set.

:class:`ConsumerConfig` takes a mapping of dotted Kafka names to values. Values may be given as
Python values or as the strings a properties file would hold ("true", "500", "a,b"). Unknown keys
and invalid values raise :class:`~pykafka_client.errors.ConfigurationError` naming the key.
Durations keep their ``*.ms`` names and are integers in milliseconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from pykafka_client.errors import ConfigurationError


class Type(Enum):
    """The type of a configuration value."""

    INT = "int"
    BOOLEAN = "boolean"
    STRING = "string"
    LIST = "list"
    OBJECT = "object"  # a class, a callable or an instance (deserializers, assignors, listeners)
    PASSWORD = "password"


_NO_DEFAULT = object()


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """One configuration key: its type, default and validation rule."""

    name: str
    type: Type
    default: Any
    doc: str = ""
    at_least: int | None = None
    at_most: int | None = None
    one_of: tuple[str, ...] | None = None
    nullable: bool = True

    def parse(self, value: Any) -> Any:
        """The typed value, or ConfigurationError naming the key."""
        if value is None:
            if self.type in (Type.STRING, Type.OBJECT, Type.PASSWORD) and self.nullable:
                return None
            if self.type is Type.LIST:
                return []
            raise ConfigurationError(f"invalid value None for configuration {self.name}: a value is required")
        parsed: Any
        if self.type is Type.INT:
            if isinstance(value, bool):
                raise ConfigurationError(f"invalid value {value!r} for configuration {self.name}: expected an integer")
            if isinstance(value, str):
                try:
                    parsed = int(value.strip())
                except ValueError:
                    raise ConfigurationError(
                        f"invalid value {value!r} for configuration {self.name}: expected an integer"
                    ) from None
            elif isinstance(value, int):
                parsed = value
            elif isinstance(value, float) and value.is_integer():
                parsed = int(value)
            else:
                raise ConfigurationError(f"invalid value {value!r} for configuration {self.name}: expected an integer")
            if self.at_least is not None and parsed < self.at_least:
                raise ConfigurationError(
                    f"invalid value {parsed} for configuration {self.name}: value must be at least {self.at_least}"
                )
            if self.at_most is not None and parsed > self.at_most:
                raise ConfigurationError(
                    f"invalid value {parsed} for configuration {self.name}: value must be no more than {self.at_most}"
                )
            return parsed
        if self.type is Type.BOOLEAN:
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.strip().lower() in ("true", "false"):
                return value.strip().lower() == "true"
            raise ConfigurationError(f"invalid value {value!r} for configuration {self.name}: expected true or false")
        if self.type in (Type.STRING, Type.PASSWORD):
            if not isinstance(value, str):
                raise ConfigurationError(f"invalid value {value!r} for configuration {self.name}: expected a string")
            if self.one_of is not None:
                norm = value.strip().lower()
                if norm not in self.one_of:
                    raise ConfigurationError(
                        f"invalid value {value!r} for configuration {self.name}: string must be one of "
                        + ", ".join(self.one_of)
                    )
                return norm
            return value
        if self.type is Type.LIST:
            if isinstance(value, str):
                return [v.strip() for v in value.split(",") if v.strip()]
            if isinstance(value, (list, tuple)):
                return list(value)
            return [value]
        return value  # OBJECT


def _k(name: str, type_: Type, default: Any, doc: str = "", **kw: Any) -> ConfigKey:
    return ConfigKey(name, type_, default, doc, **kw)


_I, _B, _S, _L, _O, _P = Type.INT, Type.BOOLEAN, Type.STRING, Type.LIST, Type.OBJECT, Type.PASSWORD

#: Every key the consumer accepts, with Java's defaults.
CONFIG_DEF: dict[str, ConfigKey] = {
    k.name: k
    for k in (
        _k("bootstrap.servers", _L, [], "host:port pairs used to discover the cluster"),
        _k(
            "client.dns.lookup",
            _S,
            "use_all_dns_ips",
            one_of=("use_all_dns_ips", "resolve_canonical_bootstrap_servers_only"),
        ),
        _k("client.id", _S, ""),
        _k("client.rack", _S, ""),
        _k("group.id", _S, None),
        _k("group.instance.id", _S, None, "static membership id (KIP-345)"),
        _k("group.protocol", _S, "classic", one_of=("classic",)),
        _k("session.timeout.ms", _I, 45000),
        _k("heartbeat.interval.ms", _I, 3000, at_least=1),
        _k("max.poll.interval.ms", _I, 300000, at_least=1),
        _k("rebalance.timeout.ms", _I, None),  # internal: defaults to max.poll.interval.ms
        _k(
            "partition.assignment.strategy",
            _L,
            ["range", "cooperative-sticky"],
            "assignor names (range, roundrobin, sticky, cooperative-sticky) or ConsumerPartitionAssignor objects",
        ),
        _k("enable.auto.commit", _B, True),
        _k("auto.commit.interval.ms", _I, 5000, at_least=0),
        _k("auto.offset.reset", _S, "latest", one_of=("latest", "earliest", "none")),
        _k("max.poll.records", _I, 500, at_least=1),
        _k("fetch.min.bytes", _I, 1, at_least=0),
        _k("fetch.max.bytes", _I, 52428800, at_least=0),
        _k("fetch.max.wait.ms", _I, 500, at_least=0),
        _k("max.partition.fetch.bytes", _I, 1048576, at_least=0),
        _k("isolation.level", _S, "read_uncommitted", one_of=("read_uncommitted", "read_committed")),
        _k("check.crcs", _B, True),
        _k("exclude.internal.topics", _B, True),
        _k("allow.auto.create.topics", _B, True),
        _k("key.deserializer", _O, None),
        _k("value.deserializer", _O, None),
        _k("metadata.max.age.ms", _I, 300000, at_least=0),
        _k("metadata.recovery.strategy", _S, "none", one_of=("none", "rebootstrap")),
        _k("request.timeout.ms", _I, 30000, at_least=0),
        _k("default.api.timeout.ms", _I, 60000, at_least=0),
        _k("retry.backoff.ms", _I, 100, at_least=0),
        _k("retry.backoff.max.ms", _I, 1000, at_least=0),
        _k("reconnect.backoff.ms", _I, 50, at_least=0),
        _k("reconnect.backoff.max.ms", _I, 1000, at_least=0),
        _k("socket.connection.setup.timeout.ms", _I, 10000, at_least=0),
        _k("socket.connection.setup.timeout.max.ms", _I, 30000, at_least=0),
        _k("connections.max.idle.ms", _I, 540000),
        _k("send.buffer.bytes", _I, 131072, at_least=-1),
        _k("receive.buffer.bytes", _I, 65536, at_least=-1),
        _k("internal.leave.group.on.close", _B, True),
        _k("interceptor.classes", _L, []),
        _k("security.protocol", _S, "PLAINTEXT"),
        _k("ssl.ca.location", _S, None),
        _k("ssl.certificate.location", _S, None),
        _k("ssl.key.location", _S, None),
        _k("ssl.key.password", _P, None),
        _k("ssl.check.hostname", _B, True),
        _k("ssl.endpoint.identification.algorithm", _S, "https"),
        _k("ssl.truststore.location", _S, None),
        _k("ssl.truststore.type", _S, None),
        _k("ssl.keystore.location", _S, None),
        _k("ssl.keystore.password", _P, None),
        _k("ssl.keystore.type", _S, None),
        _k("ssl.enabled.protocols", _L, None),
        _k("ssl.cipher.suites", _L, None),
        _k("sasl.mechanism", _S, "GSSAPI"),
        _k("sasl.username", _S, None),
        _k("sasl.password", _P, None),
        _k("sasl.jaas.config", _P, None),
        _k("metrics.num.samples", _I, 2, at_least=1),
        _k("metrics.sample.window.ms", _I, 30000, at_least=0),
        _k("metrics.recording.level", _S, "INFO", one_of=("info", "debug", "trace")),
        _k("enable.metrics.push", _B, True),
    )
}


class ConsumerConfig:
    """Validated consumer configuration. Read values with ``cfg["fetch.min.bytes"]``.

    Cross-key rules (Java ConsumerConfig / KafkaConsumer constructor):
    * ``heartbeat.interval.ms`` must be lower than ``session.timeout.ms`` when a group is used;
    * ``enable.auto.commit`` cannot be set explicitly to true without ``group.id``; it is turned off
      silently when no group is configured and the user did not ask for it;
    * ``group.instance.id``, if given, must be non-empty.
    """

    def __init__(self, configs: Mapping[str, Any] | None = None, **overrides: Any) -> None:
        given: dict[str, Any] = dict(configs or {})
        for key, value in overrides.items():
            given[key.replace("_", ".")] = value
        values: dict[str, Any] = {}
        for key, value in given.items():
            if not isinstance(key, str):
                raise ConfigurationError(f"configuration keys must be strings, got {key!r}")
            spec = CONFIG_DEF.get(key)
            if spec is None:
                raise ConfigurationError(f"unknown configuration {key!r}")
            values[key] = spec.parse(value)
        for name, spec in CONFIG_DEF.items():
            if name not in values:
                values[name] = list(spec.default) if isinstance(spec.default, list) else spec.default
        self._values = values
        self.originals = given
        self._validate()

    def _validate(self) -> None:
        v = self._values
        group_id = v["group.id"]
        if group_id is None:
            if "enable.auto.commit" in self.originals and v["enable.auto.commit"]:
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
        if not v["partition.assignment.strategy"]:
            raise ConfigurationError("partition.assignment.strategy must name at least one assignor")
        if v["rebalance.timeout.ms"] is None:
            v["rebalance.timeout.ms"] = v["max.poll.interval.ms"]

    def __getitem__(self, key: str) -> Any:
        try:
            return self._values[key]
        except KeyError:
            raise ConfigurationError(f"unknown configuration {key!r}") from None

    def get(self, key: str, default: Any = None) -> Any:
        return self._values.get(key, default)

    def values(self) -> dict[str, Any]:
        """A copy of every value, defaults included."""
        return dict(self._values)

    def security_config(self) -> dict[str, Any]:
        """The keys the transport reads (security.protocol, ssl.*, sasl.*), unset ones left out."""
        return {
            k: v
            for k, v in self._values.items()
            if (k == "security.protocol" or k.startswith(("ssl.", "sasl."))) and v not in (None, [])
        }

    def with_overrides(self, **changes: Any) -> ConsumerConfig:
        """A new config with some keys (dotted names, or underscores for dots) replaced."""
        merged = dict(self.originals)
        for key, value in changes.items():
            merged[key.replace("_", ".")] = value
        return ConsumerConfig(merged)

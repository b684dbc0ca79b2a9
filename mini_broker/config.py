"""Broker configuration (Kafka: ``kafka.server.KafkaConfig``).

:class:`KafkaConfig` is built from a ``server.properties`` file and/or a mapping of overrides, using
Kafka's property names and defaults. Unknown keys are logged and ignored (as Kafka does); a value that
does not parse or is out of range raises :class:`ConfigurationError` naming the key.

Only the settings the broker acts on are typed attributes; every known key (including those kept for
later issues) is readable with :meth:`KafkaConfig.get`. :meth:`KafkaConfig.originals` are the keys that
were set explicitly, which DescribeConfigs reports as ``STATIC_BROKER_CONFIG``.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Callable, Final, Mapping, Union

from pykafka_client.errors import ConfigurationError

log = logging.getLogger(__name__)

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


def _parse_int(name: str, raw: str, lo: int, hi: int, kind: str) -> int:
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
        value = _parse_int(key.name, text, -(2**31), INT_MAX, "int")
    elif key.type == "long":
        value = _parse_int(key.name, text, -(2**63), LONG_MAX, "long")
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


def load_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text: ``key=value`` / ``key: value`` / ``key value``, ``#``/``!`` comments,
    ``\\`` line continuations. Values are returned as raw strings."""
    out: dict[str, str] = {}
    logical: list[str] = []
    pending = ""
    for line in text.splitlines():
        stripped = line.lstrip()
        if not pending and (not stripped or stripped[0] in "#!"):
            continue
        body = pending + stripped
        # an odd number of trailing backslashes continues the line
        trailing = len(body) - len(body.rstrip("\\"))
        if trailing % 2 == 1:
            pending = body[:-1]
            continue
        pending = ""
        logical.append(body)
    if pending:
        logical.append(pending)
    for entry in logical:
        sep = len(entry)
        for i, ch in enumerate(entry):
            if ch in "=:" or ch.isspace():
                if i > 0 and entry[i - 1] == "\\":
                    continue
                sep = i
                break
        key = entry[:sep].strip().replace("\\", "")
        rest = entry[sep:].lstrip()
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip()
        out[key] = rest.rstrip()
    return out


@dataclass(frozen=True)
class EndPoint:
    """One listener: ``PLAINTEXT://host:port`` (host ``""`` = all interfaces; port 0 = ephemeral)."""

    listener_name: str
    host: str
    port: int

    @property
    def security_protocol(self) -> str:
        return self.listener_name

    def connection_string(self, port: int | None = None) -> str:
        return f"{self.listener_name}://{self.host}:{self.port if port is None else port}"


def parse_listener(name: str, spec: str) -> EndPoint:
    """Parse ``NAME://host:port`` (IPv6 host in brackets); raises ConfigurationError naming ``name``."""
    proto, sep, addr = spec.partition("://")
    if not sep or not proto:
        raise ConfigurationError(f"Invalid value {spec!r} for configuration {name}: expected NAME://host:port")
    if addr.startswith("["):
        host, _, port_s = addr[1:].partition("]")
        port_s = port_s.lstrip(":")
    else:
        host, _, port_s = addr.rpartition(":")
    try:
        port = int(port_s)
    except ValueError:
        raise ConfigurationError(f"Invalid value {spec!r} for configuration {name}: bad port {port_s!r}") from None
    if not 0 <= port <= 65535:
        raise ConfigurationError(f"Invalid value {spec!r} for configuration {name}: port out of range")
    return EndPoint(proto.upper(), host, port)


#: keys that may be set per listener as ``listener.name.<listener>.<key>`` (Kafka's listener prefix)
LISTENER_PREFIXED_KEYS: Final = frozenset({"max.connections", "max.connection.creation.rate"})


def _listener_prefixed(name: str) -> tuple[str, str] | None:
    """(listener in lower case, key) for ``listener.name.<listener>.<key>`` with a per-listener key."""
    if not name.startswith("listener.name."):
        return None
    listener, _, base = name[len("listener.name."):].partition(".")
    return (listener.lower(), base) if listener and base in LISTENER_PREFIXED_KEYS else None


class KafkaConfig:
    """The broker's configuration. Build with :meth:`from_properties_file` or ``KafkaConfig(props)``."""

    def __init__(self, props: Mapping[str, object] | None = None, *, warn: Callable[[str], None] | None = None) -> None:
        self._originals: dict[str, ConfigValue] = {}
        self._values: dict[str, ConfigValue] = {k.name: k.default for k in CONFIG_KEYS}
        warn_fn = warn or (lambda msg: log.warning(msg))
        self._listener_values: dict[tuple[str, str], ConfigValue] = {}
        for name, raw in (props or {}).items():
            key = CONFIG_DEF.get(name)
            prefixed = _listener_prefixed(name)
            if key is None and prefixed is not None:
                listener, base = prefixed
                value = parse_value(CONFIG_DEF[base], raw)
                self._originals[name] = value
                self._listener_values[(listener, base)] = value
                continue
            if key is None:
                warn_fn(f"event=unknown_config key={name} msg=\"The configuration '{name}' was supplied but isn't a known config.\"")
                continue
            value = parse_value(key, raw)
            self._originals[name] = value
            self._values[name] = value
        self._validate()

    @classmethod
    def from_properties_file(cls, path: str | os.PathLike[str], overrides: Mapping[str, object] | None = None) -> KafkaConfig:
        with open(path, encoding="utf-8") as fh:
            props: dict[str, object] = dict(load_properties(fh.read()))
        props.update(overrides or {})
        return cls(props)

    # --- generic access ---------------------------------------------------------------------------

    def get(self, name: str) -> ConfigValue:
        """The value of a known key (default when not set). Raises ConfigurationError for unknown keys."""
        if name not in self._values:
            raise ConfigurationError(f"Unknown configuration {name}")
        return self._values[name]

    def originals(self) -> dict[str, ConfigValue]:
        """Keys that were set explicitly, parsed."""
        return dict(self._originals)

    def is_set(self, name: str) -> bool:
        return name in self._originals

    def listener_int(self, listener_name: str, name: str) -> int:
        """``listener.name.<listener>.<name>`` when set (listener names are matched case-insensitively),
        else the broker-wide ``name``."""
        v = self._listener_values.get((listener_name.lower(), name), self._values[name])
        assert isinstance(v, int)
        return v

    def _int(self, name: str) -> int:
        v = self._values[name]
        assert isinstance(v, int)
        return v

    def _bool(self, name: str) -> bool:
        v = self._values[name]
        assert isinstance(v, bool)
        return v

    # --- typed accessors for what the broker uses --------------------------------------------------

    @property
    def node_id(self) -> int:
        nid = self._int("node.id")
        return nid if nid >= 0 else max(self._int("broker.id"), 0)

    @property
    def listeners(self) -> list[EndPoint]:
        specs = self._values["listeners"]
        assert isinstance(specs, list)
        return [parse_listener("listeners", s) for s in specs]

    @property
    def advertised_listeners(self) -> list[EndPoint]:
        specs = self._values["advertised.listeners"]
        if not specs:
            return self.listeners
        assert isinstance(specs, list)
        return [parse_listener("advertised.listeners", s) for s in specs]

    @property
    def log_dirs(self) -> list[str]:
        dirs = self._values["log.dirs"]
        if dirs:
            assert isinstance(dirs, list)
            return list(dirs)
        d = self._values["log.dir"]
        assert isinstance(d, str)
        return [d]

    @property
    def listener_security_protocol_map(self) -> dict[str, str]:
        raw = self._values["listener.security.protocol.map"]
        assert isinstance(raw, str)
        out: dict[str, str] = {}
        for part in raw.split(","):
            name, sep, protocol = part.strip().partition(":")
            if not sep or not name or not protocol:
                raise ConfigurationError(f"Invalid value {raw!r} for configuration listener.security.protocol.map")
            out[name.strip().upper()] = protocol.strip().upper()
        return out

    @property
    def num_network_threads(self) -> int:
        return self._int("num.network.threads")

    @property
    def num_io_threads(self) -> int:
        return self._int("num.io.threads")

    @property
    def queued_max_requests(self) -> int:
        return self._int("queued.max.requests")

    @property
    def queued_max_request_bytes(self) -> int:
        """Bytes of request frames being read or processed at once; -1 (or 0) means unbounded."""
        return self._int("queued.max.request.bytes")

    @property
    def socket_request_max_bytes(self) -> int:
        return self._int("socket.request.max.bytes")

    @property
    def socket_send_buffer_bytes(self) -> int:
        return self._int("socket.send.buffer.bytes")

    @property
    def socket_receive_buffer_bytes(self) -> int:
        return self._int("socket.receive.buffer.bytes")

    @property
    def socket_listen_backlog_size(self) -> int:
        return self._int("socket.listen.backlog.size")

    @property
    def connections_max_idle_ms(self) -> int:
        return self._int("connections.max.idle.ms")

    @property
    def max_connections_per_ip(self) -> int:
        return self._int("max.connections.per.ip")

    @property
    def max_connections_per_ip_overrides(self) -> dict[str, int]:
        raw = self._values["max.connections.per.ip.overrides"]
        assert isinstance(raw, str)
        out: dict[str, int] = {}
        for part in raw.split(","):
            part = part.strip()
            if not part:
                continue
            host, sep, count = part.rpartition(":")
            if not sep:
                raise ConfigurationError(f"Invalid value {raw!r} for configuration max.connections.per.ip.overrides")
            out[host.strip()] = _parse_int("max.connections.per.ip.overrides", count, 0, INT_MAX, "int")
        return out

    @property
    def max_connections(self) -> int:
        return self._int("max.connections")

    @property
    def quota_window_num(self) -> int:
        return self._int("quota.window.num")

    @property
    def quota_window_size_seconds(self) -> int:
        return self._int("quota.window.size.seconds")

    @property
    def max_connection_creation_rate(self) -> int:
        return self._int("max.connection.creation.rate")

    @property
    def num_partitions(self) -> int:
        return self._int("num.partitions")

    @property
    def default_replication_factor(self) -> int:
        return self._int("default.replication.factor")

    @property
    def auto_create_topics_enable(self) -> bool:
        return self._bool("auto.create.topics.enable")

    @property
    def delete_topic_enable(self) -> bool:
        return self._bool("delete.topic.enable")

    @property
    def message_max_bytes(self) -> int:
        return self._int("message.max.bytes")

    @property
    def fetch_max_bytes(self) -> int:
        return self._int("fetch.max.bytes")

    @property
    def log_segment_bytes(self) -> int:
        return self._int("log.segment.bytes")

    @property
    def log_roll_ms(self) -> int:
        ms = self._values["log.roll.ms"]
        if isinstance(ms, int):
            return ms
        return self._int("log.roll.hours") * 3600_000

    @property
    def log_retention_ms(self) -> int:
        """log.retention.ms, else .minutes, else .hours (Kafka's precedence); -1 = unlimited."""
        ms = self._values["log.retention.ms"]
        if isinstance(ms, int):
            return ms
        minutes = self._values["log.retention.minutes"]
        if isinstance(minutes, int):
            return minutes * 60_000
        return self._int("log.retention.hours") * 3600_000

    @property
    def log_retention_bytes(self) -> int:
        return self._int("log.retention.bytes")

    @property
    def log_retention_check_interval_ms(self) -> int:
        return self._int("log.retention.check.interval.ms")

    @property
    def cluster_id(self) -> str | None:
        v = self._values["cluster.id"]
        return v if isinstance(v, str) else None

    def _validate(self) -> None:
        listeners = self.listeners
        if not listeners:
            raise ConfigurationError("Invalid value for configuration listeners: at least one listener is required")
        names = [ep.listener_name for ep in listeners]
        if len(set(names)) != len(names):
            raise ConfigurationError(f"Invalid value for configuration listeners: duplicate listener names {names}")
        advertised = {ep.listener_name for ep in self.advertised_listeners}
        if not advertised <= set(names):
            raise ConfigurationError(f"Invalid value for configuration advertised.listeners: listener names "
                                     f"{sorted(advertised - set(names))} are not in listeners")
        protocols = self.listener_security_protocol_map
        for name in names:
            protocol = protocols.get(name, name)
            if protocol != "PLAINTEXT":
                raise ConfigurationError(f"Invalid value for configuration listeners: listener {name} uses "
                                         f"{protocol}; mini_broker serves PLAINTEXT only so far")
        self.max_connections_per_ip_overrides  # noqa: B018 - parse for errors
        nid, bid = self._int("node.id"), self._int("broker.id")
        if nid >= 0 and bid >= 0 and nid != bid:
            raise ConfigurationError(f"Invalid value {bid} for configuration broker.id: must equal node.id ({nid})")
        if self.default_replication_factor != 1:
            log.warning("event=config key=default.replication.factor value=%s msg=\"single broker: only 1 is usable\"",
                        self.default_replication_factor)


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
    "message.timestamp.type": ("log.message.timestamp.type",),
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


def config_value_to_string(v: ConfigValue) -> str:
    """A value as Kafka prints it in DescribeConfigs (lists comma-joined, booleans lower case)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return ",".join(v)
    if v is None:
        return ""
    return str(v)

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
from typing import Callable, Final, Mapping

from mini_broker.config_def import CONFIG_DEF, CONFIG_KEYS, INT_MAX, ConfigValue, parse_value
from pykafka_client.config import ConfigType, between, parse_typed
from pykafka_client.errors import ConfigurationError

log = logging.getLogger(__name__)


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


SECURITY_PROTOCOLS: Final = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True)
class EndPoint:
    """One listener: ``PLAINTEXT://host:port`` (host ``""`` = all interfaces; port 0 = ephemeral)."""

    listener_name: str
    host: str
    port: int

    @property
    def security_protocol(self) -> str:
        """The listener name, which is the protocol only for a listener named after it; the protocol of any
        listener is :meth:`KafkaConfig.listener_security_protocol`."""
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


#: keys that may be set per listener as ``listener.name.<listener>.<key>`` (Kafka's listener prefix), besides
#: every ``ssl.*`` / ``sasl.*`` key and ``<mechanism>.sasl.jaas.config``
LISTENER_PREFIXED_KEYS: Final = frozenset({"max.connections", "max.connection.creation.rate",
                                           "connections.max.reauth.ms", "connection.failed.authentication.delay.ms"})

#: the per-mechanism JAAS key of a listener (``listener.name.<l>.<mechanism>.sasl.jaas.config``)
JAAS_SUFFIX: Final = ".sasl.jaas.config"


def _listener_key(base: str) -> bool:
    if base in LISTENER_PREFIXED_KEYS or base.endswith(JAAS_SUFFIX):
        return True
    return base.startswith(("ssl.", "sasl.")) and base in CONFIG_DEF


def _listener_prefixed(name: str) -> tuple[str, str] | None:
    """(listener in lower case, key) for ``listener.name.<listener>.<key>`` with a per-listener key."""
    if not name.startswith("listener.name."):
        return None
    listener, _, base = name[len("listener.name."):].partition(".")
    if base.lower().endswith(JAAS_SUFFIX):
        base = base.lower()
    return (listener.lower(), base) if listener and _listener_key(base) else None


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
                value = parse_value(CONFIG_DEF.get(base, CONFIG_DEF["sasl.jaas.config"]), raw)
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

    def listener_value(self, listener_name: str, name: str) -> ConfigValue:
        """``listener.name.<listener>.<name>`` when set (Kafka's listener prefix, listener matched
        case-insensitively), else the broker-wide ``name`` (None for a ``<mechanism>.sasl.jaas.config``)."""
        key = (listener_name.lower(), name)
        if key in self._listener_values:
            return self._listener_values[key]
        return self._values.get(name)

    def listener_is_set(self, listener_name: str, name: str) -> bool:
        """Whether ``name`` was set for this listener or broker-wide."""
        return (listener_name.lower(), name) in self._listener_values or name in self._originals

    def listener_security_protocol(self, listener_name: str) -> str:
        """The security protocol of a listener: its ``listener.security.protocol.map`` entry, else its name."""
        return self.listener_security_protocol_map.get(listener_name.upper(), listener_name.upper())

    def get_int(self, name: str) -> int:
        """The value of a known int/long key (raises ConfigurationError for an unknown key)."""
        v = self.get(name)
        if not isinstance(v, int):
            raise ConfigurationError(f"{name} is not an integer config: {v!r}")
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
    def inter_broker_listener_name(self) -> str:
        """The listener brokers connect to each other on: ``inter.broker.listener.name``, else the listener named
        by ``security.inter.broker.protocol`` when set; else (mini_broker's default) the PLAINTEXT listener when
        there is one, or the first advertised listener."""
        name = self._values["inter.broker.listener.name"]
        if name:
            if self.is_set("security.inter.broker.protocol"):
                raise ConfigurationError("inter.broker.listener.name and security.inter.broker.protocol are both set; "
                                         "set only one of them (inter.broker.listener.name names any listener)")
            return str(name).upper()
        if self.is_set("security.inter.broker.protocol"):
            return str(self._values["security.inter.broker.protocol"]).upper()
        names = [ep.listener_name.upper() for ep in self.advertised_listeners]
        return "PLAINTEXT" if "PLAINTEXT" in names or not names else names[0]

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
            name = "max.connections.per.ip.overrides"
            limit: int = parse_typed(name, ConfigType.INT, count)
            between(0, INT_MAX)(name, limit)
            out[host.strip()] = limit
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
        for name in names:
            protocol = self.listener_security_protocol(name)
            if protocol not in SECURITY_PROTOCOLS:
                raise ConfigurationError(f"Invalid value for configuration listeners: listener {name} has no security "
                                         f"protocol ({protocol!r}); map it in listener.security.protocol.map to one of "
                                         f"{', '.join(SECURITY_PROTOCOLS)}")
        self.max_connections_per_ip_overrides  # noqa: B018 - parse for errors
        nid, bid = self._int("node.id"), self._int("broker.id")
        if nid >= 0 and bid >= 0 and nid != bid:
            raise ConfigurationError(f"Invalid value {bid} for configuration broker.id: must equal node.id ({nid})")
        if self.default_replication_factor != 1 and not self.get("controller.quorum.bootstrap.servers"):
            log.warning("event=config key=default.replication.factor value=%s msg=\"single broker: only 1 is usable\"",
                        self.default_replication_factor)

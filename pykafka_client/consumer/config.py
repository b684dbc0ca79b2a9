"""Consumer configuration (Java: ConsumerConfig): Kafka's key names and defaults, validated as a set,
on the shared :class:`pykafka_client.config.ConfigDef`.

:class:`ConsumerConfig` takes a mapping of dotted Kafka names to values (Python values or the strings a
properties file would hold: "true", "500", "a,b"); keyword overrides use underscores for dots
(:func:`pykafka_client.config.merge_config`). The shared keys come from
:mod:`pykafka_client.common_client_configs`.
Unknown keys and invalid values raise :class:`~pykafka_client.errors.ConfigurationError` naming the key.
Durations keep their ``*.ms`` names and are integers in milliseconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykafka_client.common_client_configs import define_common_client_configs, define_default_api_timeout
from pykafka_client.config import AbstractConfig, ConfigDef, ConfigType, at_least, one_of
from pykafka_client.errors import ConfigurationError

_T = ConfigType
#: keys only the classic protocol uses: set with group.protocol=consumer they are rejected (Java: ConsumerConfig)
CLASSIC_PROTOCOL_ONLY_CONFIGS = ("partition.assignment.strategy", "session.timeout.ms", "heartbeat.interval.ms")
#: keys only the consumer protocol uses: set with group.protocol=classic they are rejected
CONSUMER_PROTOCOL_ONLY_CONFIGS = ("group.remote.assignor",)
#: string keys whose values are case-insensitive enums, stored lower-case
_LOWERCASE_KEYS = ("auto.offset.reset", "isolation.level", "group.protocol", "client.dns.lookup")

# fmt: off
CONSUMER_CONFIG = (
    define_default_api_timeout(define_common_client_configs(ConfigDef()))
    .define("client.rack", _T.STRING, "")
    .define("group.id", _T.STRING, None, nullable=True)
    .define("group.instance.id", _T.STRING, None, nullable=True, doc="static membership id (KIP-345)")
    .define("group.protocol", _T.STRING, "classic", one_of("classic", "consumer"),
            doc="classic (JoinGroup/SyncGroup) or consumer (KIP-848 ConsumerGroupHeartbeat)")
    .define("group.remote.assignor", _T.STRING, None, nullable=True,
            doc="the broker-side assignor (uniform, range) with group.protocol=consumer; None: the broker's default")
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
    .define("internal.leave.group.on.close", _T.BOOLEAN, True)
    .define("interceptor.classes", _T.LIST, [])
)
# fmt: on


class ConsumerConfig(AbstractConfig):
    """Validated consumer configuration; read values with ``cfg["fetch.min.bytes"]``.

    Cross-key rules (Java ConsumerConfig / KafkaConsumer constructor):
    * ``heartbeat.interval.ms`` must be lower than ``session.timeout.ms`` when a group is used;
    * ``enable.auto.commit`` cannot be set explicitly to true without ``group.id``; it is turned off
      silently when no group is configured and the user did not ask for it;
    * ``group.instance.id``, if given, must be non-empty;
    * ``partition.assignment.strategy`` names at least one assignor (a comma-separated string or a list);
    * the keys of one group protocol cannot be set with the other: ``partition.assignment.strategy``,
      ``session.timeout.ms`` and ``heartbeat.interval.ms`` (the broker decides them) with
      ``group.protocol=consumer``, ``group.remote.assignor`` with ``group.protocol=classic``.
    """

    def __init__(self, configs: Mapping[str, Any] | None = None, **overrides: Any) -> None:
        super().__init__(CONSUMER_CONFIG, configs, overrides)
        self._validate()

    def _validate(self) -> None:
        v = self.values
        for key in _LOWERCASE_KEYS:
            if isinstance(v[key], str):
                v[key] = v[key].lower()
        self._check_protocol_only_configs()
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
        elif v["group.protocol"] == "classic" and v["heartbeat.interval.ms"] >= v["session.timeout.ms"]:
            raise ConfigurationError(
                "heartbeat.interval.ms must be lower than session.timeout.ms "
                f"({v['heartbeat.interval.ms']} >= {v['session.timeout.ms']})"
            )
        gi = v["group.instance.id"]
        if gi is not None and not gi:
            raise ConfigurationError("group.instance.id cannot be an empty string")
        if v["rebalance.timeout.ms"] is None:
            v["rebalance.timeout.ms"] = v["max.poll.interval.ms"]

    def _check_protocol_only_configs(self) -> None:
        """Java ConsumerConfig: a key of the other protocol set to a non-blank value is an error naming them."""
        protocol = self.values["group.protocol"]
        other_only = CLASSIC_PROTOCOL_ONLY_CONFIGS if protocol == "consumer" else CONSUMER_PROTOCOL_ONLY_CONFIGS
        invalid = [k for k in other_only if self.originals.get(k) is not None and str(self.originals[k]).strip()]
        if invalid:
            raise ConfigurationError(
                f"{', '.join(invalid)} cannot be set when group.protocol={protocol.upper()}"
            )

"""Producer configuration: Java ``ProducerConfig`` keys, defaults (Kafka 4.x) and cross-key rules.

Cross-key rules applied after per-key validation (Java ``ProducerConfig.postProcessAndValidateIdempotenceConfigs``
and ``KafkaProducer.configureDeliveryTimeout``):

* ``enable.idempotence`` explicitly true requires ``acks=all``, ``max.in.flight.requests.per.connection <= 5``
  and ``retries > 0``; an explicit conflicting setting raises ``ConfigurationError`` naming that key.
* ``enable.idempotence`` left at its default (true) is turned off when the user explicitly set a
  conflicting ``acks``, ``retries`` or ``max.in.flight``, exactly as Java 3.2+ does, and an INFO line says
  which key turned it off (as Java's ProducerConfig logs it).
* ``transactional.id`` requires idempotence.
* ``delivery.timeout.ms >= linger.ms + request.timeout.ms``: raises if the user set ``delivery.timeout.ms``,
  otherwise the default is raised to that sum.
* ``acks`` takes 0, 1, -1, ``"all"`` and the strings ``"0"``, ``"1"``, ``"-1"``, and is normalised to an
  int: ``all`` -> -1 (:func:`parse_acks`).

The shared keys come from :mod:`pykafka_client.common_client_configs`; keyword arguments name keys with
``_`` for ``.`` (:func:`pykafka_client.config.merge_config`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from pykafka_client.common_client_configs import define_common_client_configs
from pykafka_client.config import (
    INT_MAX,
    AbstractConfig,
    ConfigDef,
    ConfigType,
    at_least,
    between,
    one_of,
)
from pykafka_client.errors import ConfigurationError

log = logging.getLogger(__name__)

MAX_IN_FLIGHT_FOR_IDEMPOTENCE = 5
COMPRESSION_TYPES = ("none", "gzip", "snappy", "lz4", "zstd")

_T = ConfigType


def parse_acks(name: str, value: Any) -> int:
    """``acks`` as Java's int: ``"all"``/``-1``/``"-1"`` -> -1, ``0``/``"0"`` -> 0, ``1``/``"1"`` -> 1."""
    if isinstance(value, int) and not isinstance(value, bool) and value in (-1, 0, 1):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "all":
            return -1
        if text in ("-1", "0", "1"):
            return int(text)
    raise ConfigurationError(
        f"Invalid value {value!r} for configuration {name}: must be one of 0, 1, -1, 'all' (or '0', '1', '-1')"
    )


# fmt: off
PRODUCER_CONFIG_DEF = (
    define_common_client_configs(ConfigDef(), {"receive.buffer.bytes": 32_768})  # ProducerConfig's own default
    .define("acks", _T.STRING, "all", parser=parse_acks, doc="all/-1: full ISR; 1: leader only; 0: no response")
    .define("linger.ms", _T.LONG, 5, at_least(0), doc="extra wait to fill a batch (Kafka 4.0 default 5, KIP-1030)")
    .define("batch.size", _T.INT, 16384, at_least(0), doc="per-partition batch size in bytes")
    .define("buffer.memory", _T.LONG, 33554432, at_least(0), doc="bytes of records waiting to be sent")
    .define("max.block.ms", _T.LONG, 60000, at_least(0), doc="max time send()/partitions_for() block")
    .define("compression.type", _T.STRING, "none", one_of(*COMPRESSION_TYPES))
    .define("compression.gzip.level", _T.INT, -1, between(-1, 9))
    .define("compression.lz4.level", _T.INT, 9, between(1, 17))
    .define("compression.zstd.level", _T.INT, 3, between(-131072, 22))
    .define("retries", _T.INT, INT_MAX, between(0, INT_MAX))
    .define("delivery.timeout.ms", _T.INT, 120000, at_least(0))
    .define("max.in.flight.requests.per.connection", _T.INT, 5, at_least(1))
    .define("max.request.size", _T.INT, 1048576, at_least(0))
    .define("enable.idempotence", _T.BOOLEAN, True)
    .define("transactional.id", _T.STRING, None, nullable=True)
    .define("transaction.timeout.ms", _T.INT, 60000)
    .define("partitioner.class", _T.CLASS, None, nullable=True, doc="a Partitioner instance/class; None = built-in")
    .define("partitioner.ignore.keys", _T.BOOLEAN, False)
    .define("partitioner.adaptive.partitioning.enable", _T.BOOLEAN, True)
    .define("partitioner.availability.timeout.ms", _T.LONG, 0, at_least(0))
    .define("key.serializer", _T.CLASS, "bytes")
    .define("value.serializer", _T.CLASS, "bytes")
    .define("metadata.max.idle.ms", _T.LONG, 300000, at_least(5000))
    .define("interceptor.classes", _T.LIST, [])
)
# fmt: on


class ProducerConfig(AbstractConfig):
    """Parsed producer configuration with Java's cross-key rules applied (see module doc)."""

    def __init__(self, originals: Mapping[str, Any] | None = None, **overrides: Any) -> None:
        super().__init__(PRODUCER_CONFIG_DEF, originals, overrides)
        self._validate_idempotence()
        self._configure_delivery_timeout()
        # retry.backoff.ms > retry.backoff.max.ms is allowed: the backoff is then the constant max, as in Java.

    def _validate_idempotence(self) -> None:
        v = self.values
        explicit = self.was_set("enable.idempotence") and v["enable.idempotence"]
        # (key, why it conflicts, what idempotence needs instead)
        conflicts: list[tuple[str, str, str]] = []
        max_in_flight = "max.in.flight.requests.per.connection"
        if self.was_set(max_in_flight) and v[max_in_flight] > MAX_IN_FLIGHT_FOR_IDEMPOTENCE:
            conflicts.append((
                max_in_flight,
                f"must be at most {MAX_IN_FLIGHT_FOR_IDEMPOTENCE} to use the idempotent producer",
                f"{max_in_flight} <= {MAX_IN_FLIGHT_FOR_IDEMPOTENCE}",
            ))
        if self.was_set("retries") and v["retries"] == 0:
            conflicts.append(("retries", "must be greater than 0 to use the idempotent producer", "retries > 0"))
        if self.was_set("acks") and v["acks"] != -1:
            conflicts.append(("acks", "must be set to all (or -1) to use the idempotent producer", "acks=all"))
        if conflicts:
            if explicit:
                key, why, _ = conflicts[0]
                raise ConfigurationError(f"Invalid value {self.originals[key]!r} for configuration {key}: {why}")
            if not self.was_set("enable.idempotence"):
                for key, _, needed in conflicts:
                    log.info(
                        "idempotence is disabled because %s is set to %s (the idempotent producer needs %s);"
                        " set enable.idempotence=false to say so, or %s to keep idempotence",
                        key, self.originals[key], needed, needed,
                    )
            v["enable.idempotence"] = False
        if v["transactional.id"] is not None and not v["enable.idempotence"]:
            raise ConfigurationError(
                "Cannot set a transactional.id without also enabling idempotence (enable.idempotence)"
            )

    def _configure_delivery_timeout(self) -> None:
        v = self.values
        lower = v["linger.ms"] + v["request.timeout.ms"]
        if v["delivery.timeout.ms"] < lower:
            if self.was_set("delivery.timeout.ms"):
                raise ConfigurationError(
                    f"Invalid value {v['delivery.timeout.ms']} for configuration delivery.timeout.ms: should be equal "
                    f"to or larger than linger.ms + request.timeout.ms ({lower})"
                )
            v["delivery.timeout.ms"] = min(lower, INT_MAX)

    @property
    def idempotence_enabled(self) -> bool:
        return bool(self.values["enable.idempotence"])

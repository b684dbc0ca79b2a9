"""The write options of the ``pykafka`` sink, checked on the driver (``writer()`` / ``streamWriter()``) so a
mistake fails at ``save()`` / ``start()`` with Spark's message, not later in a task.

Options (Spark lower-cases the keys; values are strings): ``kafka.*`` (the prefix stripped, passed to our
KafkaProducer; ``kafka.bootstrap.servers`` required; ``kafka.key.serializer`` / ``kafka.value.serializer``
rejected as Spark rejects them, since keys and values are always bytes), ``topic`` (overrides the ``topic``
column), ``exactlyOnce`` (streaming only: the transactional sink of :mod:`spark_connector.exactly_once`),
``exactlyOnce.transactionalIdPrefix``, ``exactlyOnce.stateDir``, and the fault-injection options the tests use
(``testing.failAfterRecords`` with ``testing.failureMarker``: the first task to get there writes the marker
file and raises after flushing that many records, every later one writes normally).

``kafka_params`` is the read side's (:mod:`spark_connector.options`): strip ``kafka.``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pykafka_client.config import parse_bool
from pykafka_client.errors import ConfigurationError
from spark_connector.options import kafka_params, option_label

#: Kafka's broker default for ``transaction.max.timeout.ms``: the sink's default ``transaction.timeout.ms``, so a
#: driver restart has 15 minutes to commit the transactions its tasks left open (Flink's advice too).
DEFAULT_TRANSACTION_TIMEOUT_MS = "900000"


class KafkaWriteOptionError(ConfigurationError):
    """An invalid option or column of a write (surfaces as Spark's AnalysisException at save()/start()). A
    :class:`ConfigurationError`, so a ``ValueError`` too, like every option error of the source and the sink."""


def _flag(options: Mapping[str, str], key: str) -> bool:
    try:
        return parse_bool(key, _get(options, key, "false"), label=option_label(key))
    except ConfigurationError as e:
        raise KafkaWriteOptionError(str(e)) from None


def _get(options: Mapping[str, str], key: str, default: str | None = None) -> str | None:
    lowered = key.lower()
    for k, v in options.items():
        if k.lower() == lowered:
            return str(v)
    return default


@dataclass(frozen=True)
class WriteOptions:
    """Everything a write task needs, plain data only (the writer is pickled to the executors)."""

    producer_config: dict[str, str]
    topic: str | None
    exactly_once: bool = False
    transactional_id_prefix: str = "pykafka-spark"
    state_dir: str | None = None
    fail_after_records: int | None = None
    failure_marker: str | None = None
    extra: dict[str, str] = field(default_factory=dict)


def parse_write_options(options: Mapping[str, str], *, streaming: bool) -> WriteOptions:
    params = kafka_params(options)
    if "bootstrap.servers" not in params:
        raise KafkaWriteOptionError("Option 'kafka.bootstrap.servers' must be specified for configuring Kafka producer")
    if "key.serializer" in params:
        raise KafkaWriteOptionError(
            "Kafka option 'key.serializer' is not supported as keys are serialized with ByteArraySerializer."
        )
    if "value.serializer" in params:
        raise KafkaWriteOptionError(
            "Kafka option 'value.serializer' is not supported as value are serialized with ByteArraySerializer."
        )
    if "transactional.id" in params:
        raise KafkaWriteOptionError(
            "Kafka option 'transactional.id' is not supported: the exactly-once sink (option exactlyOnce=true) "
            "derives one transactional id per task from the checkpoint location"
        )
    exactly_once = _flag(options, "exactlyOnce")
    if exactly_once and not streaming:
        raise KafkaWriteOptionError(
            "Option 'exactlyOnce' applies to streaming writes only (writeStream); batch writes are at-least-once"
        )
    if exactly_once:
        if not parse_bool("enable.idempotence", params.get("enable.idempotence", "true"),
                          label=option_label("kafka.enable.idempotence")):
            raise KafkaWriteOptionError("Option 'exactlyOnce' needs an idempotent producer: remove kafka.enable.idempotence=false")
        params.setdefault("transaction.timeout.ms", DEFAULT_TRANSACTION_TIMEOUT_MS)
    topic = _get(options, "topic")
    if topic is not None and not topic.strip():
        raise KafkaWriteOptionError("Option 'topic' must not be empty")
    fail_after = _get(options, "testing.failAfterRecords")
    return WriteOptions(
        producer_config=params,
        topic=topic,
        exactly_once=exactly_once,
        transactional_id_prefix=_get(options, "exactlyOnce.transactionalIdPrefix", "pykafka-spark") or "pykafka-spark",
        state_dir=_get(options, "exactlyOnce.stateDir"),
        fail_after_records=int(fail_after) if fail_after is not None else None,
        failure_marker=_get(options, "testing.failureMarker"),
        extra={"checkpointlocation": _get(options, "checkpointLocation") or ""},
    )

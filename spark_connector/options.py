"""The read options of the ``pykafka`` source: Spark's Kafka source options, checked as Spark checks them.

Option names are case-insensitive (Spark hands a data source lower-cased keys; :func:`lower_keys` does the
same for a plain dict). ``kafka.*`` options are our client's configuration with the prefix stripped
(:func:`kafka_params`, shared with the write side). Values are parsed by the client's config machinery
(:func:`pykafka_client.config.parse_bool` / :func:`~pykafka_client.config.parse_typed`). Every invalid option
or combination raises :class:`~pykafka_client.errors.ConfigurationError` (a ``ValueError``: Spark's
``IllegalArgumentException``) with Spark's own message, so it surfaces at ``load()`` / ``start()`` as Spark's
would. Pure: no I/O, nothing here talks to Kafka.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pykafka_client.config import ConfigType, parse_bool, parse_typed
from pykafka_client.consumer.config import CONSUMER_CONFIG
from pykafka_client.errors import ConfigurationError
from pykafka_client.structs import TopicPartition
from spark_connector import offset_json

# option keys, lower-cased as Spark gives them to a data source
SUBSCRIBE = "subscribe"
SUBSCRIBE_PATTERN = "subscribepattern"
ASSIGN = "assign"
STRATEGY_KEYS = (SUBSCRIBE, SUBSCRIBE_PATTERN, ASSIGN)
STARTING_OFFSETS = "startingoffsets"
ENDING_OFFSETS = "endingoffsets"
STARTING_OFFSETS_BY_TIMESTAMP = "startingoffsetsbytimestamp"
ENDING_OFFSETS_BY_TIMESTAMP = "endingoffsetsbytimestamp"
STARTING_TIMESTAMP = "startingtimestamp"
ENDING_TIMESTAMP = "endingtimestamp"
STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY = "startingoffsetsbytimestampstrategy"
FAIL_ON_DATA_LOSS = "failondataloss"
MIN_PARTITIONS = "minpartitions"
MAX_RECORDS_PER_PARTITION = "maxrecordsperpartition"
MAX_OFFSETS_PER_TRIGGER = "maxoffsetspertrigger"
MIN_OFFSETS_PER_TRIGGER = "minoffsetspertrigger"
MAX_TRIGGER_DELAY = "maxtriggerdelay"
FETCH_OFFSET_NUM_RETRIES = "fetchoffset.numretries"
FETCH_OFFSET_RETRY_INTERVAL_MS = "fetchoffset.retryintervalms"
CONSUMER_POLL_TIMEOUT_MS = "kafkaconsumer.polltimeoutms"
GROUP_ID_PREFIX = "groupidprefix"
INCLUDE_HEADERS = "includeheaders"
KAFKA_PREFIX = "kafka."

DEFAULT_MAX_TRIGGER_DELAY = "15m"
DEFAULT_POLL_TIMEOUT_MS = 120_000
BATCH_GROUP_ID_PREFIX = "spark-kafka-relation"
STREAM_GROUP_ID_PREFIX = "spark-kafka-source"

_AUTO_OFFSET_RESET_MESSAGE = (
    "\nKafka option 'auto.offset.reset' is not supported.\n"
    "Instead set the source option 'startingoffsets' to 'earliest' or 'latest'\n"
    "to specify where to start. Structured Streaming manages which offsets are consumed\n"
    "internally, rather than relying on the kafkaConsumer to do it. This will ensure that no\n"
    "data is missed when new topics/partitions are dynamically subscribed. Note that\n"
    "'startingoffsets' only applies when a new Streaming query is started, and\n"
    "that resuming will always pick up from where the query left off. See the docs for more\n"
    "details.\n"
)
#: kafka.* keys Spark refuses, with its message for each
FORBIDDEN_KAFKA_KEYS: dict[str, str] = {
    "auto.offset.reset": _AUTO_OFFSET_RESET_MESSAGE,
    "key.deserializer": "Kafka option 'key.deserializer' is not supported as keys are deserialized as byte "
                        "arrays with ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize "
                        "the keys.",
    "value.deserializer": "Kafka option 'value.deserializer' is not supported as values are deserialized as "
                          "byte arrays with ByteArrayDeserializer. Use DataFrame operations to explicitly "
                          "deserialize the values.",
    "enable.auto.commit": "Kafka option 'enable.auto.commit' is not supported",
    "interceptor.classes": "Kafka option 'interceptor.classes' is not supported",
}


def lower_keys(options: Mapping[str, Any]) -> dict[str, str]:
    """``options`` with lower-cased keys and ``str`` values, as Spark passes them (``option("n", 3)`` is
    ``"3"``, ``True`` is ``"true"``)."""
    out: dict[str, str] = {}
    for key, value in options.items():
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        out[key.lower()] = text
    return out


def kafka_params(options: Mapping[str, Any]) -> dict[str, str]:
    """The ``kafka.*`` options with the prefix stripped: our client's configuration keys."""
    return {k[len(KAFKA_PREFIX):]: v for k, v in lower_keys(options).items() if k.startswith(KAFKA_PREFIX)}


def option_label(name: str) -> str:
    """How a message names a source or sink option: ``option 'failOnDataLoss'``."""
    return f"option '{name}'"


def bool_option(options: Mapping[str, str], key: str, name: str, default: bool) -> bool:
    """The boolean option ``key`` (Spark's spelling ``name`` in messages), ``default`` when absent."""
    raw = options.get(key)
    return default if raw is None else parse_bool(key, raw, label=option_label(name))


def _parse_int(options: Mapping[str, str], key: str, name: str, default: int | None) -> int | None:
    raw = options.get(key)
    if raw is None:
        return default
    value: int = parse_typed(key, ConfigType.LONG, raw, label=option_label(name))
    return value


_TIME_UNITS_MS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


def time_string_as_ms(text: str) -> int:
    """Spark's ``Utils.timeStringAsMs``: ``"15m"``, ``"10s"``, ``"100ms"``, ``"1h"``; no unit means ms."""
    match = re.fullmatch(r"\s*(-?[0-9]+)\s*([a-z]+)?\s*", text.lower())
    if match is None or (match.group(2) is not None and match.group(2) not in _TIME_UNITS_MS):
        raise ConfigurationError(f"Invalid time string '{text}' (e.g. 100ms, 10s, 15m, 1h, 1d)")
    return int(int(match.group(1)) * _TIME_UNITS_MS[match.group(2) or "ms"])


@dataclass(frozen=True)
class OffsetLimit:
    """Where a read starts or ends before it is resolved against the brokers (Spark's
    ``KafkaOffsetRangeLimit``): ``kind`` is ``earliest``, ``latest``, ``offsets`` (per-partition offsets, -2 /
    -1 allowed), ``timestamp`` (one ms value for every partition) or ``timestamps`` (per partition).
    ``strategy_latest``: a timestamp with no matching offset resolves to latest instead of failing."""

    kind: str
    offsets: dict[TopicPartition, int] = field(default_factory=dict)
    timestamp: int = -1
    strategy_latest: bool = False


EARLIEST_LIMIT = OffsetLimit("earliest")
LATEST_LIMIT = OffsetLimit("latest")


def offset_limit(options: Mapping[str, str], timestamp_key: str, by_timestamp_key: str, offsets_key: str,
                 default: OffsetLimit) -> OffsetLimit:
    """Spark's ``getKafkaOffsetRangeLimit``: a global timestamp wins over per-partition timestamps, which
    win over offsets; none given -> ``default``."""
    strategy = options.get(STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY, "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise ConfigurationError(f"Invalid value '{options[STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY]}' for option "
                         "'startingOffsetsByTimestampStrategy': expected error or latest")
    latest = strategy == "latest"
    if timestamp_key in options:
        text = options[timestamp_key].strip()
        try:
            return OffsetLimit("timestamp", timestamp=int(text), strategy_latest=latest)
        except ValueError:
            raise ConfigurationError(f"Expected a single long value, got {text}") from None
    if by_timestamp_key in options:
        timestamps = offset_json.partition_timestamps(options[by_timestamp_key].strip())
        return OffsetLimit("timestamps", offsets=timestamps, strategy_latest=latest)
    given = options.get(offsets_key)
    if given is None:
        return default
    if given.strip().lower() == "latest":
        return LATEST_LIMIT
    if given.strip().lower() == "earliest":
        return EARLIEST_LIMIT
    return OffsetLimit("offsets", offsets=offset_json.partition_offsets(given.strip()))


@dataclass(frozen=True)
class Strategy:
    """Which partitions are read: ``subscribe`` (topic names), ``subscribepattern`` (a regex matched against
    the whole topic name) or ``assign`` (fixed partitions)."""

    kind: str
    topics: tuple[str, ...] = ()
    pattern: str = ""
    partitions: tuple[TopicPartition, ...] = ()

    def describe(self) -> str:
        if self.kind == SUBSCRIBE:
            return f"Subscribe[{', '.join(self.topics)}]"
        if self.kind == SUBSCRIBE_PATTERN:
            return f"SubscribePattern[{self.pattern}]"
        return f"Assign[{', '.join(map(str, self.partitions))}]"


@dataclass(frozen=True)
class ReadOptions:
    """Every read option, parsed and checked. Picklable (primitives only): readers carry it to executors."""

    strategy: Strategy
    starting: OffsetLimit
    ending: OffsetLimit
    fail_on_data_loss: bool
    include_headers: bool
    min_partitions: int | None
    max_records_per_partition: int | None
    max_offsets_per_trigger: int | None
    min_offsets_per_trigger: int | None
    max_trigger_delay_ms: int
    fetch_offset_num_retries: int
    fetch_offset_retry_interval_ms: int
    poll_timeout_ms: int
    #: ``<groupIdPrefix>-<uuid>``: executors use ``<group_id>-executor`` unless ``kafka.group.id`` is set
    group_id: str
    #: ``kafka.*`` with the prefix stripped, as the user gave them
    kafka: dict[str, str]


def _strategy(options: Mapping[str, str]) -> Strategy:
    given = [k for k in STRATEGY_KEYS if k in options]
    listed = ", ".join(STRATEGY_KEYS)
    if not given:
        raise ConfigurationError(f"One of the following options must be specified for Kafka source: {listed}. "
                         "See the docs for more details.")
    if len(given) > 1:
        raise ConfigurationError(f"Only one of the following options can be specified for Kafka source: {listed}. "
                         "See the docs for more details.")
    kind, value = given[0], options[given[0]]
    if kind == ASSIGN:
        if not value.strip().startswith("{"):
            raise ConfigurationError(f"No topicpartitions to assign as specified value for option 'assign' is '{value}'")
        return Strategy(ASSIGN, partitions=tuple(offset_json.partitions(value)))
    if kind == SUBSCRIBE:
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise ConfigurationError(f"No topics to subscribe to as specified value for option 'subscribe' is '{value}'")
        return Strategy(SUBSCRIBE, topics=topics)
    pattern = value.strip()
    if not pattern:
        raise ConfigurationError(
            f"Pattern to subscribe is empty as specified value for option 'subscribePattern' is '{value}'")
    try:
        re.compile(pattern)
    except re.error as e:
        raise ConfigurationError(f"Invalid subscribePattern '{pattern}': {e}") from None
    return Strategy(SUBSCRIBE_PATTERN, pattern=pattern)


def _check_kafka_params(params: Mapping[str, str]) -> None:
    for key, message in FORBIDDEN_KAFKA_KEYS.items():
        if key in params:
            raise ConfigurationError(message)
    if "bootstrap.servers" not in params:
        raise ConfigurationError("Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer")
    known = set(CONSUMER_CONFIG.names())
    for key in params:
        if key not in known:
            raise ConfigurationError(f"{CONSUMER_CONFIG.unknown_key_error(key)} (option 'kafka.{key}': "
                                     "kafka.* options are passed to pykafka_client's KafkaConsumer)")


def scala_set(tps: Collection[TopicPartition]) -> str:
    """A partition set as Spark prints one in its messages: ``Set(t-0, t-1)``."""
    return "Set(" + ", ".join(str(tp) for tp in sorted(tps)) + ")"


def check_offset_limit_validity(start: OffsetLimit, end: OffsetLimit) -> None:
    """Spark's ``checkOffsetLimitValidity``: specific start and end must name the same partitions, and a
    specific start must not be after the specific end (earliest / latest are not compared)."""
    same_kind = (start.kind, end.kind) in (("offsets", "offsets"), ("timestamps", "timestamps"))
    if not same_kind:
        return
    if set(start.offsets) != set(end.offsets):
        raise ConfigurationError(
            "[MISMATCHED_TOPIC_PARTITIONS_BETWEEN_START_OFFSET_AND_END_OFFSET] The specified start offset and "
            "end offset should have the same topic-partitions. Topic-partitions for start offset: "
            f"{scala_set(start.offsets)}, topic-partitions for end offset: {scala_set(end.offsets)}.")
    what = "offset" if start.kind == "offsets" else "timestamp"
    for tp in sorted(start.offsets):
        s, e = start.offsets[tp], end.offsets[tp]
        if s > e and s >= 0 and e >= 0:
            raise ConfigurationError(
                f"[UNRESOLVED_START_{what.upper()}_GREATER_THAN_END_{what.upper()}] The specified start {what} "
                f"{s} is greater than the end {what} {e} for topic {tp.topic} partition {tp.partition}.")


def _check_batch_limits(start: OffsetLimit, end: OffsetLimit) -> None:
    if start.kind == "latest":
        raise ConfigurationError("starting offset can't be latest for batch queries on Kafka")
    for tp, off in sorted(start.offsets.items()) if start.kind == "offsets" else ():
        if off == offset_json.LATEST:
            raise ConfigurationError(f"startingOffsets for {tp} can't be latest for batch queries on Kafka")
    if end.kind == "earliest":
        raise ConfigurationError("ending offset can't be earliest for batch queries on Kafka")
    for tp, off in sorted(end.offsets.items()) if end.kind == "offsets" else ():
        if off == offset_json.EARLIEST:
            raise ConfigurationError(f"ending offset for {tp} can't be earliest for batch queries on Kafka")


class _General(NamedTuple):
    strategy: Strategy
    min_partitions: int | None
    max_records: int | None
    max_offsets: int | None
    min_offsets: int | None
    params: dict[str, str]


def _general_options(options: Mapping[str, str]) -> _General:
    strategy = _strategy(options)
    min_partitions = _parse_int(options, MIN_PARTITIONS, "minPartitions", None)
    if min_partitions is not None and min_partitions <= 0:
        raise ConfigurationError("minPartitions must be positive")
    max_records = _parse_int(options, MAX_RECORDS_PER_PARTITION, "maxRecordsPerPartition", None)
    if max_records is not None and max_records <= 0:
        raise ConfigurationError(f"{MAX_RECORDS_PER_PARTITION} must be positive")
    params = kafka_params(options)
    _check_kafka_params(params)
    max_offsets = _parse_int(options, MAX_OFFSETS_PER_TRIGGER, "maxOffsetsPerTrigger", None)
    min_offsets = _parse_int(options, MIN_OFFSETS_PER_TRIGGER, "minOffsetsPerTrigger", None)
    if min_offsets is not None and max_offsets is not None and min_offsets > max_offsets:
        raise ConfigurationError(f"The value of minOffsetPerTrigger({min_offsets}) is higher than the "
                         f"maxOffsetsPerTrigger({max_offsets}).")
    for name, value in (("maxOffsetsPerTrigger", max_offsets), ("minOffsetsPerTrigger", min_offsets)):
        if value is not None and value <= 0:
            raise ConfigurationError(f"{name} must be positive, but it was {value}")
    return _General(strategy, min_partitions, max_records, max_offsets, min_offsets, params)


def check_general_options(raw: Mapping[str, Any]) -> None:
    """The checks common to batch and streaming reads (Spark's ``validateGeneralOptions``): run by
    ``schema()`` so a bad option fails at ``load()``, as with Spark's source (``reader()`` runs later, at the
    first action)."""
    _general_options(lower_keys(raw))


def parse_read_options(raw: Mapping[str, Any], *, streaming: bool) -> ReadOptions:
    """Check and parse the options of a batch (``streaming=False``) or streaming read, in Spark's order
    (``validateBatchOptions`` / ``validateStreamOptions``, then ``validateGeneralOptions``)."""
    options = lower_keys(raw)
    if streaming:
        if ENDING_OFFSETS in options:
            raise ConfigurationError("ending offset not valid in streaming queries")
        if ENDING_OFFSETS_BY_TIMESTAMP in options or ENDING_TIMESTAMP in options:
            raise ConfigurationError("ending timestamp not valid in streaming queries")
        starting = offset_limit(options, STARTING_TIMESTAMP, STARTING_OFFSETS_BY_TIMESTAMP, STARTING_OFFSETS,
                                LATEST_LIMIT)
        ending = LATEST_LIMIT
    else:
        starting = offset_limit(options, STARTING_TIMESTAMP, STARTING_OFFSETS_BY_TIMESTAMP, STARTING_OFFSETS,
                                EARLIEST_LIMIT)
        ending = offset_limit(options, ENDING_TIMESTAMP, ENDING_OFFSETS_BY_TIMESTAMP, ENDING_OFFSETS,
                              LATEST_LIMIT)
        _check_batch_limits(starting, ending)
    strategy, min_partitions, max_records, max_offsets, min_offsets, params = _general_options(options)
    if not streaming:
        check_offset_limit_validity(starting, ending)
    # Spark's batchUniqueGroupId / streamingUniqueGroupId (no checkpoint path reaches a Python source, so
    # no path hash); ignored when kafka.group.id is set
    prefix = options.get(GROUP_ID_PREFIX, STREAM_GROUP_ID_PREFIX if streaming else BATCH_GROUP_ID_PREFIX)
    group_id = f"{prefix}-{uuid.uuid4()}"
    return ReadOptions(
        strategy=strategy,
        starting=starting,
        ending=ending,
        fail_on_data_loss=bool_option(options, FAIL_ON_DATA_LOSS, "failOnDataLoss", True),
        include_headers=bool_option(options, INCLUDE_HEADERS, "includeHeaders", False),
        min_partitions=min_partitions,
        max_records_per_partition=max_records,
        max_offsets_per_trigger=max_offsets,
        min_offsets_per_trigger=min_offsets,
        max_trigger_delay_ms=time_string_as_ms(options.get(MAX_TRIGGER_DELAY, DEFAULT_MAX_TRIGGER_DELAY)),
        fetch_offset_num_retries=_parse_int(options, FETCH_OFFSET_NUM_RETRIES, "fetchOffset.numRetries", 3) or 0,
        fetch_offset_retry_interval_ms=_parse_int(
            options, FETCH_OFFSET_RETRY_INTERVAL_MS, "fetchOffset.retryIntervalMs", 10) or 0,
        poll_timeout_ms=_parse_int(options, CONSUMER_POLL_TIMEOUT_MS, "kafkaConsumer.pollTimeoutMs",
                                   DEFAULT_POLL_TIMEOUT_MS) or DEFAULT_POLL_TIMEOUT_MS,
        group_id=group_id,
        kafka=params,
    )

"""Partitions of this broker and the reads/writes on them (Kafka: ``kafka.server.ReplicaManager``).

The single broker leads every partition at leader epoch 0. The ReplicaManager owns the LogManager, the
produce and fetch purgatories, and the topic lifecycle (registry + logs together):

* :meth:`append_records`: validate acks, append each partition's records to its log, then answer now
  (acks 0/1, or nothing appended) or through a :class:`DelayedProduce` (acks=-1), which completes at once on
  one broker. Every successful append wakes delayed fetches and produces watching that partition.
* :meth:`fetch_messages`: read every partition (``max_bytes`` overall, ``partition_max_bytes`` each, the first
  partition always returns at least one batch), then answer now or park a :class:`DelayedFetch`.
  read_committed (``FetchIsolation.TXN_COMMITTED``) reads stop at the last stable offset and carry the
  aborted transactions of the log's index overlapping ``[fetch offset, LSO)`` (a superset of Kafka's bound,
  which ends at the last fetched batch: entries past the data are ignored by consumers). A parked
  read_committed fetch waits for the LSO, so the marker append that moves it completes the fetch.
* :meth:`append_records` with ``origin=COORDINATOR`` is the WriteTxnMarkers path (control batches).
* offsets by timestamp, delete records, create / delete topics and partitions, topic config changes.

Lock order: registry lock -> (released) -> log locks. ``check_and_complete`` is called with no lock held.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from mini_broker.config import KafkaConfig
from mini_broker.log.log_cleaner import CleanerConfig
from mini_broker.log.log_config import LogConfig
from mini_broker.log.log_manager import LogManager
from mini_broker.log.log_offset_metadata import UNKNOWN_OFFSET_METADATA, FetchIsolation, LogOffsetMetadata
from mini_broker.log.unified_log import AppendOrigin, Log
from mini_broker.metrics import BrokerMetrics, Counter, inc_pair
from mini_broker.producer_state.producer_state_entry import ProducerStateEntry
from mini_broker.purgatory import (
    DelayedFetch,
    DelayedOperationPurgatory,
    FetchParams,
    FetchPartitionStatus,
    TopicPartitionOperationKey,
)
from mini_broker.server.api_error import error_code, error_message
from mini_broker.server.delayed_produce import DelayedProduce, ProducePartitionStatus
from mini_broker.server.fetch_session import FetchSessionCache
from mini_broker.server.metadata_cache import MetadataCache, TopicMetadata, is_internal_topic, validate_topic_name
from mini_broker.server.produce_append import ProduceAppender, new_produce_appender
from mini_broker.server.replication_strategy import (
    LEADER_EPOCH,
    FetchPartitionInfo,
    ReplicationStrategy,
    SingleBrokerReplication,
    TopicCreation,
)
from mini_broker.utils.positional_tuple import positional_tuple
from pykafka_client.errors import (
    ConfigurationError,
    CorruptRecordError,
    InvalidConfigurationError,
    InvalidRecordError,
    InvalidRequiredAcksError,
    InvalidTopicError,
    OffsetNotAvailableError,
    OffsetOutOfRangeError,
    UnknownTopicOrPartitionError,
)
from pykafka_client.errors_base import BrokerResponseError, KafkaError
from pykafka_client.network.transport.positional_new import positional_new
from pykafka_client.protocol.records.memory_records import MemoryRecords
from pykafka_client.protocol.types import RecordsLike
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import SYSTEM_TIME, Time

log = logging.getLogger(__name__)
#: the operation keys of every append made without their Python-level __new__
_tuple_new = tuple.__new__
#: read once (an Enum class attribute read goes through EnumType.__getattr__ on Python 3.11)
_CLIENT_ORIGIN = AppendOrigin.CLIENT

UNKNOWN_OFFSET = -1
#: the error message of an append that found no record batch (the compiled produce append's too)
NO_RECORD_BATCHES = "produce request has no record batches"
#: the counters every client append adds to (bytes, records), made together (see metrics.inc_pair)
_APPEND_COUNTERS = ("kafka_server_BrokerTopicMetrics_BytesIn_total", "kafka_server_BrokerTopicMetrics_MessagesIn_total")


@dataclass(slots=True)
class PartitionResponse:
    """One partition's produce result (Kafka ``ProduceResponse.PartitionResponse``)."""

    error_code: int = 0
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    record_errors: list[tuple[int, str | None]] = field(default_factory=list)
    error_message: str | None = None
    last_offset: int = -1  # not on the wire: what a DelayedProduce waits for (high watermark > last_offset)


#: a PartitionResponse from every field's value without its Python __init__ (one per partition appended)
_new_partition_response = positional_new(PartitionResponse)
#: TopicPartition made without its Python-level __new__ (the compiled produce append's: one per request)
_new_topic_partition = positional_tuple(TopicPartition)


@dataclass
class LogReadResult:
    """One partition's fetch result (Kafka ``LogReadResult`` / ``FetchPartitionData``)."""

    error_code: int = 0
    high_watermark: int = UNKNOWN_OFFSET
    log_start_offset: int = UNKNOWN_OFFSET
    last_stable_offset: int = UNKNOWN_OFFSET
    records: RecordsLike = b""  # Kafka sends empty records, never null (librdkafka rejects null)
    records_size: int = 0
    fetch_offset_metadata: LogOffsetMetadata = UNKNOWN_OFFSET_METADATA
    error_message: str | None = None
    #: (producer id, first offset) of aborted transactions; None unless read_committed.
    aborted_transactions: list[tuple[int, int]] | None = None


def _records_size(records: object) -> int:
    if records is None:
        return 0
    if isinstance(records, (bytes, bytearray)):
        return len(records)
    if isinstance(records, memoryview):
        return records.nbytes
    return int(getattr(records, "length", 0) or getattr(records, "size_in_bytes", 0) or 0)


def _keyless_record_indexes(records: bytes | bytearray | memoryview) -> list[int]:
    """Indexes (within their batch) of records without a key: a compacted topic refuses them with per-record
    errors, as Kafka's LogValidator does. Undecodable batches are left to the log's validation."""
    out: list[int] = []
    try:
        for batch in MemoryRecords(records).batches():
            for i, record in enumerate(batch.records()):
                if record.key is None:
                    out.append(i)
    except KafkaError:
        return []
    return out


def _int_config(config: KafkaConfig, name: str, default: int = 1000) -> int:
    v = config.get(name)
    return v if isinstance(v, int) else default


class ReplicaManager:
    """See the module docstring."""

    def __init__(self, config: KafkaConfig, metadata_cache: MetadataCache, data_dir: str,
                 metrics: BrokerMetrics | None = None, time: Time = SYSTEM_TIME,
                 log_manager: LogManager | None = None, log_dirs: Sequence[str] = ()) -> None:
        self.config = config
        self.metadata_cache = metadata_cache
        self.time = time
        self.metrics = metrics
        #: held while a topic's registry entry and logs change together
        self.topic_lock = threading.RLock()
        self.default_log_config = LogConfig.from_broker(lambda n: config.get(n) if config.is_set(n) else None)
        if log_manager is None:
            log_manager = LogManager(
                # partitions go to every directory of log.dirs (data_dir, the first, also holds the broker's files)
                [data_dir, *(d for d in log_dirs if os.path.abspath(d) != os.path.abspath(data_dir))],
                self.default_log_config, time=time,
                retention_check_interval_ms=config.log_retention_check_interval_ms,
                producer_id_expiration_ms=_int_config(config, "producer.id.expiration.ms", 86400000),
                producer_id_expiration_check_interval_ms=_int_config(
                    config, "producer.id.expiration.check.interval.ms", 600000),
                cleaner_config=CleanerConfig.from_broker(config.get))
        self.log_manager: LogManager = log_manager
        self.produce_purgatory: DelayedOperationPurgatory[DelayedProduce] = DelayedOperationPurgatory(
            "Produce", broker_id=config.node_id, purge_interval=_int_config(config, "producer.purgatory.purge.interval.requests"),
            time=time)
        self.fetch_purgatory: DelayedOperationPurgatory[DelayedFetch] = DelayedOperationPurgatory(
            "Fetch", broker_id=config.node_id, purge_interval=_int_config(config, "fetch.purgatory.purge.interval.requests"),
            time=time)
        #: how the partitions are replicated: a single broker leads every partition at epoch 0; a cluster broker's
        #: strategy (leaders, ISR, followers, fetchers) is set by the broker before startup
        self.replication: ReplicationStrategy = SingleBrokerReplication(self)
        self.fetch_sessions = FetchSessionCache(_int_config(config, "max.incremental.fetch.session.cache.slots"), time)
        #: the produce path's counters by name, each looked up in the registry at its first use
        self._counters: dict[str, Counter] = {}
        #: BytesIn and MessagesIn, counted per partition appended (looked up once)
        self._append_counters: tuple[Counter, Counter] | None = None
        #: topic names a client append found valid and not internal (the check is a function of the name alone)
        self._client_topics: set[str] = set()
        #: a single broker's common Produce request above the log in one compiled call (None without the kernel: see
        #: mini_broker.server.produce_append; it is lent what it reads, never this manager, which each call passes)
        self.client_appender: ProduceAppender[ReplicaManager, PartitionResponse] | None = new_produce_appender(
            metadata_cache.topics_by_name, self.log_manager.logs_by_partition, self._client_topics,
            self.fetch_purgatory, self.produce_purgatory, _new_topic_partition,
            partial(_tuple_new, TopicPartitionOperationKey),
            _new_partition_response, _CLIENT_ORIGIN, LEADER_EPOCH, CorruptRecordError, NO_RECORD_BATCHES,
            SingleBrokerReplication)
        if metrics is not None:
            metrics.gauge("kafka_server_FetchSessionCache_NumIncrementalFetchSessions",
                          lambda: float(len(self.fetch_sessions)))
            for name, purg in (("Produce", self.produce_purgatory), ("Fetch", self.fetch_purgatory)):
                self._register_purgatory_gauges(metrics, name, purg)

    @staticmethod
    def _register_purgatory_gauges(metrics: BrokerMetrics, name: str, purg: DelayedOperationPurgatory[Any]) -> None:
        metrics.gauge("kafka_server_DelayedOperationPurgatory_PurgatorySize", lambda: float(purg.watched),
                      delayedOperation=name)
        metrics.gauge("kafka_server_DelayedOperationPurgatory_NumDelayedOperations", lambda: float(purg.num_delayed),
                      delayedOperation=name)

    # --- lifecycle --------------------------------------------------------------------------------

    def startup(self) -> None:
        """Open (recover) the log of every partition in the registry."""
        topics = self.metadata_cache.all_topics()
        self.log_manager.startup({t.name: self.log_config_for(t) for t in topics})
        self.replication.load_logs()

    def shutdown(self, clean: bool = True) -> None:
        """Stop the purgatories and close the logs; ``clean=False`` (a failed start) writes no clean-shutdown
        marker."""
        self.produce_purgatory.shutdown()
        self.fetch_purgatory.shutdown()
        self.log_manager.shutdown(clean=clean)

    def log_config_for(self, md: TopicMetadata) -> LogConfig:
        """The log config of ``md``'s partitions (its overrides over the broker's defaults)."""
        return LogConfig.from_props(md.configs, self.default_log_config)

    def log_config_from(self, configs: dict[str, str]) -> LogConfig:
        """The log config of topic ``configs`` (raises ConfigurationError for a bad value)."""
        return LogConfig.from_props(configs, self.default_log_config)

    def leader_epoch(self, topic: str) -> int:
        return LEADER_EPOCH

    def current_leader(self, topic: str, partition: int) -> tuple[int, int]:
        """(leader id, leader epoch) of a partition as this broker knows it (KIP-951 hints)."""
        return self.replication.current_leader(topic, partition)

    # --- topics -------------------------------------------------------------------------------------

    def create_topic(self, name: str, num_partitions: int, configs: dict[str, str],
                     replication_factor: int = -1) -> TopicMetadata:
        return self.replication.create_topic(name, num_partitions, configs, replication_factor)

    def create_topics(self, specs: Sequence[TopicCreation]) -> dict[str, TopicMetadata | KafkaError]:
        return self.replication.create_topics(specs)

    def delete_topic(self, name: str) -> None:
        self.replication.delete_topic(name)

    def delete_topics(self, names: Sequence[str]) -> dict[str, KafkaError | None]:
        return self.replication.delete_topics(names)

    def add_partitions_batch(self, growth: Sequence[tuple[str, int, list[list[int]] | None]]
                             ) -> dict[str, KafkaError | None]:
        return self.replication.add_partitions_batch(growth)

    def add_partitions(self, name: str, count: int, assignment: list[list[int]] | None = None) -> TopicMetadata:
        return self.replication.add_partitions(name, count, assignment)

    def update_topic_configs(self, name: str, configs: dict[str, str]) -> TopicMetadata:
        with self.topic_lock:
            try:
                self.log_config_from(configs)
            except ConfigurationError as e:
                raise InvalidConfigurationError(str(e)) from e
            return self.replication.update_topic_configs(name, configs)

    def _get_log(self, tp: TopicPartition) -> Log:
        """The partition's log, or raise UNKNOWN_TOPIC_OR_PARTITION."""
        topic, partition = tp  # (unpacked: a named tuple's field read by name is a generic attribute lookup on 3.11)
        if not self.metadata_cache.contains_partition(topic, partition):
            raise UnknownTopicOrPartitionError(f"This server does not host this topic-partition: {tp}")
        lg = self.log_manager.get_log(topic, partition)
        if lg is None:
            raise self.replication.missing_log_error(tp)
        return lg

    # --- produce ------------------------------------------------------------------------------------

    def has_ongoing_txn(self, tp: TopicPartition, producer_id: int) -> bool:
        """Whether ``producer_id`` has an open transaction on ``tp`` (False for an unknown partition)."""
        try:
            entry = self._get_log(tp).producer_state.last_entry(producer_id)
        except BrokerResponseError:
            return False
        return entry is not None and entry.current_txn_first_offset is not None

    def describe_producers(self, tp: TopicPartition) -> list[ProducerStateEntry]:
        """The active producers of ``tp`` (copies); raises BrokerResponseError for an unknown partition."""
        return list(self._get_log(tp).producer_state.active_producers.values())

    def append_records(self, timeout_ms: int, required_acks: int, entries: Sequence[tuple[TopicPartition, object]],
                       respond: Callable[[dict[TopicPartition, PartitionResponse]], None],
                       origin: AppendOrigin = AppendOrigin.CLIENT) -> None:
        """Append and answer through ``respond`` (now, or when the DelayedProduce completes). ``origin``:
        CLIENT for Produce, COORDINATOR for transaction markers."""
        if required_acks not in (-1, 0, 1):
            respond({tp: PartitionResponse(error_code=InvalidRequiredAcksError.code) for tp, _ in entries})
            return
        results: dict[TopicPartition, PartitionResponse] = {}
        appended: list[tuple[TopicPartition, Log]] = []  # and the log each was appended to
        for tp, records in entries:
            result, lg = self._append_to_local_log(tp, records, origin, required_acks)
            results[tp] = result
            if lg is not None:
                appended.append((tp, lg))
        fetch_purgatory, produce_purgatory = self.fetch_purgatory, self.produce_purgatory
        # (a purgatory that never watched an operation has none to complete: no key, no call)
        if fetch_purgatory.has_watched or produce_purgatory.has_watched:
            for tp, _ in appended:
                key = _tuple_new(TopicPartitionOperationKey, tp)  # (topic, partition)
                fetch_purgatory.check_and_complete(key)
                produce_purgatory.check_and_complete(key)
        if required_acks == -1 and appended and not self._all_replicated(appended, results):
            self.delay_produce(timeout_ms, results, respond)
            return
        respond(results)

    def delay_produce(self, timeout_ms: int, results: dict[TopicPartition, PartitionResponse],
                      respond: Callable[[dict[TopicPartition, PartitionResponse]], None]) -> None:
        """An acks=-1 answer that waits for the replicas: a :class:`DelayedProduce` on ``results``' partitions,
        which calls ``respond`` with their final error codes (at once when they are replicated by now)."""
        statuses: dict[Hashable, ProducePartitionStatus] = {
            tp: ProducePartitionStatus(r.last_offset + 1, r.error_code, False) for tp, r in results.items()
        }

        def on_done(final: dict[Hashable, ProducePartitionStatus]) -> None:
            for tp2, st2 in final.items():
                assert isinstance(tp2, TopicPartition)
                results[tp2].error_code = st2.error_code
            respond(results)

        op = DelayedProduce(timeout_ms, statuses, self.check_enough_replicas, on_done)
        keys = [TopicPartitionOperationKey(tp.topic, tp.partition) for tp in results]
        self.produce_purgatory.try_complete_else_watch(op, keys)

    def _all_replicated(self, appended: list[tuple[TopicPartition, Log]],
                        results: dict[TopicPartition, PartitionResponse]) -> bool:
        """Whether every appended partition has its records on enough replicas already (a single broker: always):
        the DelayedProduce would complete on its first check, so the answer goes out without one (what Kafka's
        ``tryCompleteElseWatch`` does then, minus the operation). Each is asked of the log it was appended to."""
        for tp, lg in appended:
            reached, error = self._enough_replicas(tp, lg, results[tp].last_offset + 1)
            if error != 0 or not reached:
                return False
        return True

    def _count(self, name: str, n: int) -> None:
        """Add ``n`` to the broker counter ``name`` (nothing without metrics)."""
        counter = self._counters.get(name)
        if counter is None:
            if self.metrics is None:
                return
            counter = self._counter(name)
        counter.inc(n)

    def append_counters(self) -> tuple[Counter, Counter]:
        """BytesIn and MessagesIn (there are metrics), counted together under one lock on every append (made at the
        first ask; the compiled produce append asks once too)."""
        counters = self._append_counters
        if counters is None:
            assert self.metrics is not None
            bytes_in, messages_in = self.metrics.counters(*_APPEND_COUNTERS)
            counters = self._append_counters = bytes_in, messages_in
        return counters

    def _counter(self, name: str) -> Counter:
        """The broker counter ``name`` (there are metrics)."""
        counter = self._counters.get(name)
        if counter is None:
            assert self.metrics is not None
            counter = self._counters[name] = self.metrics.counter(name)
        return counter

    def check_enough_replicas(self, tp: Hashable, required_offset: int) -> tuple[bool, int]:
        assert isinstance(tp, TopicPartition)
        try:
            lg = self._get_log(tp)
        except BrokerResponseError as e:
            return False, int(e.code)
        return self._enough_replicas(tp, lg, required_offset)

    def _enough_replicas(self, tp: TopicPartition, lg: Log, required_offset: int) -> tuple[bool, int]:
        """:meth:`check_enough_replicas` on the partition's log ``lg``."""
        try:
            return self.replication.check_enough_replicas(tp, lg, required_offset)
        except BrokerResponseError as e:
            return False, int(e.code)

    def _append_to_local_log(self, tp: TopicPartition, records: object, origin: AppendOrigin = AppendOrigin.CLIENT,
                             required_acks: int = 1) -> tuple[PartitionResponse, Log | None]:
        """The partition's result, and the log appended to (None when the append failed)."""
        topic = tp.topic
        client = origin is _CLIENT_ORIGIN
        if not client or topic not in self._client_topics:
            try:
                validate_topic_name(topic)
                if client and is_internal_topic(topic):
                    # a cluster's __consumer_offsets / __transaction_state are the coordinators' (Kafka: the same)
                    raise InvalidTopicError(f"Cannot append to internal topic {topic}")
            except InvalidTopicError as e:
                return PartitionResponse(error_code=InvalidTopicError.code, error_message=error_message(e)), None
        try:
            lg = self._get_log(tp)
            if records is None:
                raise CorruptRecordError("produce request has no records")
            if not isinstance(records, (bytes, bytearray, memoryview)):
                raise CorruptRecordError("produce records must be in memory")
            if lg.append_checks.compacted:
                keyless = _keyless_record_indexes(records)
                if keyless:
                    msg = f"Compacted topic cannot accept message without key in topic partition {tp}."
                    return PartitionResponse(error_code=InvalidRecordError.code, error_message=msg,
                                             record_errors=[(i, msg) for i in keyless]), None
            info = self.replication.append_as_leader(tp, lg, records, origin, required_acks)
            # (unpacked rather than read by field name: a named tuple's field read by name is a generic attribute lookup on 3.11)
            first_offset, last_offset, _, _, log_append_time, log_start_offset, _, _, _ = info
            if first_offset < 0:
                raise CorruptRecordError(NO_RECORD_BATCHES)
        except Exception as e:
            return self.append_failed(tp, e), None
        if client:
            # a name that passed both checks above, of a topic that exists (so the set stays small)
            self._client_topics.add(topic)
        if self.metrics is not None:
            counters = self._append_counters
            if counters is None:
                counters = self.append_counters()
            inc_pair(counters[0], records.nbytes if records.__class__ is memoryview else _records_size(records),
                     counters[1], last_offset - first_offset + 1)
        # error code, base offset, log append time, log start offset, record errors, error message, last offset
        return _new_partition_response(0, first_offset, log_append_time, log_start_offset, [], None, last_offset), lg

    def append_failed(self, tp: TopicPartition, e: Exception) -> PartitionResponse:
        """The result of a client append to ``tp`` that raised ``e`` (counted as a failed produce when a KafkaError,
        logged with its traceback otherwise); the compiled produce append's too."""
        if isinstance(e, KafkaError):
            record_errors = list(getattr(e, "record_errors", []) or [])
            self._count("kafka_server_BrokerTopicMetrics_FailedProduceRequests_total", 1)
            log.debug("event=append_failed partition=%s error=%r", tp, e)
            return PartitionResponse(error_code=error_code(e), error_message=error_message(e),
                                     record_errors=record_errors)
        log.error("event=append_failed partition=%s", tp, exc_info=e)
        return PartitionResponse(error_code=error_code(e), error_message=error_message(e))

    # --- fetch --------------------------------------------------------------------------------------

    def read_from_local_log(self, params: FetchParams, infos: Sequence[tuple[TopicPartition, FetchPartitionInfo]]
                            ) -> list[tuple[TopicPartition, LogReadResult]]:
        limit = params.max_bytes
        min_one = True
        out: list[tuple[TopicPartition, LogReadResult]] = []
        for tp, info in infos:
            res = self._read(tp, info, params.isolation, min(limit, info.partition_max_bytes), min_one, params.replica_id)
            if res.records_size > 0:
                min_one = False
            limit = max(0, limit - res.records_size)
            out.append((tp, res))
        return out

    def _read(self, tp: TopicPartition, info: FetchPartitionInfo, isolation: FetchIsolation, max_bytes: int,
              min_one: bool, replica_id: int = -1) -> LogReadResult:
        try:
            lg = self.replication.leader_log_for_read(tp, self._get_log(tp), info.current_leader_epoch, replica_id,
                                                      info.fetch_offset)
            # snapshot the offsets before reading (Kafka reads HW/LSO before the log)
            hw = lg.high_watermark
            lso = lg.last_stable_offset
            log_start = lg.log_start_offset
            if info.fetch_offset < log_start or info.fetch_offset > lg.log_end_offset:
                raise OffsetOutOfRangeError(f"Received request for offset {info.fetch_offset} for partition {tp}, "
                                            f"but we only have log segments in the range {log_start} to "
                                            f"{lg.log_end_offset}.")
            committed = isolation is FetchIsolation.TXN_COMMITTED
            data = lg.read(info.fetch_offset, max_bytes, lso if committed else lg.max_offset_for(isolation), min_one)
            size = _records_size(data.records)
            if self.metrics is not None and size:
                self.metrics.counter("kafka_server_BrokerTopicMetrics_BytesOut_total").inc(size)
            aborted: list[tuple[int, int]] | None = None
            if committed:
                aborted = [(t.producer_id, t.first_offset)
                           for t in lg.collect_aborted_transactions(info.fetch_offset, lso)] if size else []
            return LogReadResult(0, hw, log_start, lso, data.records if size and data.records is not None else b"", size,
                                 data.fetch_offset_metadata, aborted_transactions=aborted)
        except KafkaError as e:
            return LogReadResult(error_code(e), error_message=error_message(e))
        except Exception as e:
            log.exception("event=read_failed partition=%s", tp)
            return LogReadResult(error_code(e), error_message=error_message(e))

    def fetch_messages(self, params: FetchParams, infos: Sequence[tuple[TopicPartition, FetchPartitionInfo]],
                       respond: Callable[[list[tuple[TopicPartition, LogReadResult]]], None], *,
                       also_watch: Sequence[Hashable] = (), ready: Callable[[], bool] | None = None) -> None:
        """Read, and answer at once or park the fetch in the purgatory until ``min_bytes`` / ``max_wait_ms``.
        A parked fetch is also watched under ``also_watch`` and completes when ``ready()`` (share fetches)."""
        if params.replica_id >= 0:
            self.replication.update_follower_fetch_state(params.replica_id, infos)
        results = self.read_from_local_log(params, infos)
        total = sum(r.records_size for _, r in results)
        has_error = any(r.error_code != 0 for _, r in results)
        if params.max_wait_ms <= 0 or not infos or total >= params.min_bytes or has_error:
            respond(results)
            return
        statuses = [FetchPartitionStatus(tp, r.fetch_offset_metadata, info.partition_max_bytes)
                    for (tp, info), (_, r) in zip(infos, results, strict=True)]

        def on_complete(op: DelayedFetch) -> None:
            respond(self.read_from_local_log(params, infos))

        op = DelayedFetch(params, statuses, self._end_offset_metadata, on_complete, ready)
        keys = [*(TopicPartitionOperationKey(tp.topic, tp.partition) for tp, _ in infos), *also_watch]
        self.fetch_purgatory.try_complete_else_watch(op, keys)

    def _end_offset_metadata(self, tp: Hashable, isolation: FetchIsolation) -> LogOffsetMetadata:
        assert isinstance(tp, TopicPartition)
        self.replication.check_leader(tp)  # a waiting fetch completes at once when leadership moves (Kafka)
        return self._get_log(tp).end_offset_metadata(isolation)

    # --- offsets ------------------------------------------------------------------------------------

    def fetch_offset_for_timestamp(self, tp: TopicPartition, timestamp: int, isolation_level: int,
                                   current_leader_epoch: int = -1, client_request: bool = False
                                   ) -> tuple[int, int, int]:
        """(timestamp, offset, leader epoch) for ListOffsets; raises BrokerResponseError. ``client_request``: a
        consumer's or admin's ListOffsets (replica id -1), which a leader whose high watermark has not yet
        reached the start of its leader epoch answers OFFSET_NOT_AVAILABLE for the latest offset (and for a
        timestamp it cannot answer below the high watermark) rather than an offset that may go backwards."""
        lg = self._get_log(tp)
        epoch = self.replication.check_leader(tp, current_leader_epoch)
        last_fetchable = lg.last_stable_offset if isolation_level == 1 else lg.high_watermark
        if timestamp in (-2, -4):  # EARLIEST, EARLIEST_LOCAL
            return -1, lg.log_start_offset, epoch
        if timestamp == -5:  # LATEST_TIERED: no tiered storage
            return -1, -1, -1
        found = None if timestamp == -1 else lg.fetch_offset_by_timestamp(timestamp)
        if found is not None and found.offset < last_fetchable:
            return found.timestamp, found.offset, found.leader_epoch if found.leader_epoch is not None else epoch
        if client_request:
            epoch_start = self.replication.leader_epoch_start_offset(tp)
            if epoch_start > lg.high_watermark:
                raise OffsetNotAvailableError(
                    f"offsets of {tp} are not available yet: the high watermark ({lg.high_watermark}) of its leader "
                    f"(epoch {epoch}) is behind the start of that epoch ({epoch_start}) after a leader election; "
                    f"retry once the followers caught up")
        if timestamp == -1:  # LATEST
            return -1, last_fetchable, epoch
        return -1, -1, -1

    def end_offset_for_epoch(self, tp: TopicPartition, leader_epoch: int, current_leader_epoch: int = -1
                             ) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch: epoch 0 (the only one) ends at the log end offset;
        any other requested epoch is undefined (-1, -1). Raises BrokerResponseError."""
        return self.replication.end_offset_for_epoch(tp, self._get_log(tp), leader_epoch, current_leader_epoch)

    def delete_records(self, tp: TopicPartition, offset: int) -> int:
        """Move the log start offset up to ``offset`` (-1 = high watermark); returns the new log start offset
        (the caller then waits for the replicas: ``replication.wait_for_delete_records``)."""
        lg = self._get_log(tp)
        self.replication.check_leader(tp)
        hw = lg.high_watermark
        target = hw if offset == -1 else offset
        if target < 0 or target > hw:
            raise OffsetOutOfRangeError(f"Cannot increment the log start offset to {target} of partition {tp} "
                                        f"since it is larger than the high watermark {hw}")
        low = self.log_manager.delete_records(tp.topic, tp.partition, target)
        key = TopicPartitionOperationKey(tp.topic, tp.partition)
        self.fetch_purgatory.check_and_complete(key)
        return low

"""The public producer (Java ``KafkaProducer``).

::

    from pykafka_client import KafkaProducer

    with KafkaProducer({"bootstrap.servers": "localhost:9092", "value.serializer": "str"}) as producer:
        future = producer.send("events", "hello", key=b"k")
        metadata = future.result(timeout=10)      # RecordMetadata(topic, partition, offset, ...)

Configuration uses Kafka's dotted names and Java's defaults (``pykafka_client.producer.config``).
``send`` is thread-safe and asynchronous: it serializes, picks a partition, appends to the
accumulator and returns a :class:`~concurrent.futures.Future` of :class:`RecordMetadata`. A background
thread (the Sender) batches and sends. ``send`` blocks only to wait for topic metadata or buffer memory,
both bounded by ``max.block.ms``.

Metadata waits, as in Java: a topic the cluster does not have (broker auto-creation off), or a partition
past its count, is waited for up to ``max.block.ms`` (it may be created meanwhile), then the record fails
with KafkaTimeoutError naming the topic and why (no broker reachable: the addresses and their last
connection errors; or the topic does not exist: how to create it); ``partitions_for`` raises the same. An invalid topic name or a
topic this client may not access fails at once (InvalidTopicError, TopicAuthorizationFailedError).

Errors, as in Java: broker-side and timeout errors of a record (record too large, metadata not available in
time, buffer exhausted, delivery timeout...) complete its future exceptionally and reach ``on_delivery``;
misuse raises at once (send after close, serialization failure, a bad partition or timestamp, a fatal
idempotence error). ``on_delivery(metadata, exception)`` runs on the I/O thread, outside any producer lock;
it must be quick and must not call ``flush`` or ``close`` with a timeout.

A producer the program forgets to close is closed at interpreter exit (an ``atexit`` hook holding only a
weak reference, removed by ``close``): it gets ``close_at_exit_timeout`` seconds to send what it
buffered, and a WARNING says how many records were dropped if that runs out.
"""

from __future__ import annotations

import atexit
import functools
import itertools
import logging
import sys
import threading
import time as _time
import weakref
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any

from pykafka_client.client_utils import create_network_client
from pykafka_client.errors import (
    ConfigurationError,
    IllegalArgumentError,
    IllegalStateError,
    InvalidTopicError,
    KafkaTimeoutError,
    ProducerClosedError,
    RecordTooLargeError,
    SerializationError,
    TopicAuthorizationFailedError,
)
from pykafka_client.errors_base import BrokerResponseError, KafkaError
from pykafka_client.network.cluster import PartitionInfo
from pykafka_client.producer import batch_append
from pykafka_client.producer.batch_encoder import compression_type_for
from pykafka_client.producer.buffer_pool import BufferPool
from pykafka_client.producer.config import ProducerConfig
from pykafka_client.producer.future_record_metadata import BatchMetadata, FutureRecordMetadata, SendBatchFuture
from pykafka_client.producer.idempotence_manager import STATE_ATTRIBUTE
from pykafka_client.producer.metadata_wait import topic_not_present_message
from pykafka_client.producer.partitioner import Partitioner, RoundRobinPartitioner, partition_for_key
from pykafka_client.producer.producer_metadata import CLUSTER_ATTRIBUTE, ProducerMetadata
from pykafka_client.producer.record_accumulator import UNKNOWN_PARTITION, RecordAccumulator
from pykafka_client.producer.record_metadata import RecordMetadata
from pykafka_client.producer.record_size import Callback, Header, estimate_size_upper_bound
from pykafka_client.producer.sender import WAKEUP_PENDING_ATTRIBUTE, IoRunner, IoRunnerFactory, Sender
from pykafka_client.producer.transaction_manager import GroupMetadata, TransactionManager
from pykafka_client.producer.transaction_state import State
from pykafka_client.producer.transactional_request_result import TransactionalRequestResult
from pykafka_client.protocol.compression import CompressionType
from pykafka_client.protocol.records import _native
from pykafka_client.serialization import ByteArraySerializer, Serializer, resolve_serializer
from pykafka_client.structs import OffsetAndMetadata, TopicPartition
from pykafka_client.utils.time import SYSTEM_TIME, SystemTime, Time

log = logging.getLogger(__name__)

_client_ids = itertools.count(1)
_time_ns = _time.time_ns
_monotonic_ns = _time.monotonic_ns


_PARTITIONER_NAMES = {
    "round_robin": RoundRobinPartitioner,
    "org.apache.kafka.clients.producer.RoundRobinPartitioner": RoundRobinPartitioner,
}


def _failed_future(exc: BaseException) -> FutureRecordMetadata:
    f = FutureRecordMetadata()
    f.set_exception(exc)
    return f


def _close_at_exit(ref: weakref.ref[KafkaProducer]) -> None:
    """The ``atexit`` hook of a producer that was never closed (does nothing once it was collected)."""
    producer = ref()
    if producer is not None:
        producer._close(producer.close_at_exit_timeout, at_exit=True)


class _SenderThread(threading.Thread):
    """The default :class:`IoRunner`: a daemon thread running ``Sender.run``, started at creation."""

    def ensure_started(self) -> None:
        """Started in :func:`_start_sender_thread`: nothing to do."""


def _start_sender_thread(sender: Sender, client_id: str) -> IoRunner:
    thread = _SenderThread(target=sender.run, name=f"kafka-producer-network-thread | {client_id}", daemon=True)
    thread.start()
    return thread


def _is_current_thread(runner: object) -> bool:
    """Whether ``runner`` (an :class:`IoRunner`) is the calling thread: a delivery callback runs there."""
    return threading.current_thread() is runner


class KafkaProducer:
    """A thread-safe Kafka producer with Java's configuration, batching, retries and idempotence.

    ``close_at_exit_timeout`` (seconds, default 10; settable on the class or an instance) bounds how long
    a producer that was not closed may take to deliver its buffered records when the interpreter exits.
    """

    #: ``_send_record`` in a slot: ``send`` (the kernel's SendMethod) reads it at a fixed offset once per record
    __slots__ = ("__dict__", "__weakref__", "_send_record")

    close_at_exit_timeout: float = 10.0

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        *,
        key_serializer: Any = None,
        value_serializer: Any = None,
        time: Time = SYSTEM_TIME,
        io_runner: IoRunnerFactory | None = None,
        **overrides: Any,
    ) -> None:
        """``config`` maps Kafka's dotted names to values; keyword arguments name the same keys with
        ``_`` for ``.`` (``KafkaProducer(bootstrap_servers="host:9092", acks=1)``) and win over ``config``.
        ``io_runner(sender, client_id)`` starts what runs the Sender (default: its I/O thread; the async
        producer passes its event-loop driver)."""
        cfg = ProducerConfig(config, **overrides)
        self.config = cfg
        self._time = time
        self._system_time = type(time) is SystemTime
        self.client_id = cfg["client.id"] or f"producer-{next(_client_ids)}"
        if cfg["interceptor.classes"]:
            raise ConfigurationError("Invalid value for configuration interceptor.classes: interceptors are not supported")
        self._key_serializer: Serializer[Any] = resolve_serializer(
            "key.serializer", key_serializer if key_serializer is not None else cfg["key.serializer"]
        )
        self._value_serializer: Serializer[Any] = resolve_serializer(
            "value.serializer", value_serializer if value_serializer is not None else cfg["value.serializer"]
        )
        # The default bytes serializer passes bytes and None through: send() skips the call for them.
        self._key_passthrough = type(self._key_serializer) is ByteArraySerializer
        self._value_passthrough = type(self._value_serializer) is ByteArraySerializer
        self._partitioner = self._resolve_partitioner(cfg["partitioner.class"])
        self._ignore_keys: bool = cfg["partitioner.ignore.keys"]
        self._max_block_ms: int = cfg["max.block.ms"]
        self._max_request_size: int = cfg["max.request.size"]
        self._total_memory: int = cfg["buffer.memory"]
        self._max_record_size = min(self._max_request_size, self._total_memory)
        codec = compression_type_for(cfg["compression.type"])
        level: int | None = {
            CompressionType.GZIP: cfg["compression.gzip.level"],
            CompressionType.LZ4: cfg["compression.lz4.level"],
            CompressionType.ZSTD: cfg["compression.zstd.level"],
        }.get(codec)
        if codec is CompressionType.GZIP and level == -1:
            level = None

        self.metadata = ProducerMetadata(
            cfg["retry.backoff.ms"],
            cfg["retry.backoff.max.ms"],
            cfg["metadata.max.age.ms"],
            metadata_idle_ms=cfg["metadata.max.idle.ms"],
        )
        self.transactional_id: str | None = cfg["transactional.id"]
        self.transaction_manager = (
            TransactionManager(
                self.transactional_id, cfg["transaction.timeout.ms"], cfg["retry.backoff.ms"], time
            )
            if cfg.idempotence_enabled
            else None
        )
        self.accumulator = RecordAccumulator(
            batch_size=cfg["batch.size"],
            linger_ms=cfg["linger.ms"],
            retry_backoff_ms=cfg["retry.backoff.ms"],
            retry_backoff_max_ms=cfg["retry.backoff.max.ms"],
            delivery_timeout_ms=cfg["delivery.timeout.ms"],
            buffer_pool=BufferPool(self._total_memory, time),
            time=time,
            compression_type=codec,
            compression_level=level,
            transaction_manager=self.transaction_manager,
            adaptive_partitioning=cfg["partitioner.adaptive.partitioning.enable"],
        )
        self.client = create_network_client(
            cfg,
            self.metadata,
            client_id=self.client_id,
            max_in_flight_requests_per_connection=cfg["max.in.flight.requests.per.connection"],
            time=time,
        )
        self.sender = Sender(
            self.client,
            self.metadata,
            self.accumulator,
            guarantee_message_order=cfg["max.in.flight.requests.per.connection"] == 1,
            max_request_size=self._max_request_size,
            acks=cfg["acks"],
            retries=cfg["retries"],
            request_timeout_ms=cfg["request.timeout.ms"],
            retry_backoff_ms=cfg["retry.backoff.ms"],
            time=time,
            transaction_manager=self.transaction_manager,
        )
        self.accumulator.free.on_wait = self.sender.wakeup  # a sender waiting for memory makes every batch sendable
        # send()'s compiled common case (RecordAccumulator.send_append): bytes or None key and value through the
        # default serializers and the built-in partitioner; None otherwise (and without the kernel)
        send_append = self.accumulator.send_append
        # the kernel skips the Sender.wakeup call (a Python frame) while the Sender's flag says a wake-up is
        # already pending, as Sender.wakeup itself would do nothing then
        wake_sender: tuple[Any, ...] = (self.sender, WAKEUP_PENDING_ATTRIBUTE, self.sender.wakeup)
        # with its own I/O thread, at a new batch the kernel hands the GIL to that thread when it waits for it and
        # the request it would build is full or the broker idle (Selector.enable_gil_handoff; the async producer's
        # one thread has nothing to hand over)
        selector = self.sender.pollable_selector if io_runner is None else None
        handoff = selector.enable_gil_handoff() if selector is not None else None
        request_full = functools.partial(self.accumulator.request_full, self.metadata)
        if handoff is not None:
            wake_sender += (handoff, request_full)
        #: send_batch's hand-off at a new batch (the same rule): ``offer(topic, partition)``, or None
        self._handoff_offer: Callable[[str, int], bool] | None = (
            None if handoff is None else functools.partial(handoff.offer, request_full)
        )
        self._send_append: Callable[..., Any] | None = (
            functools.partial(
                send_append, None if self._system_time else time.milliseconds, _NO_HEADERS, self.metadata,
                self._max_record_size - _UPPER_BOUND_NO_HEADERS, self._ignore_keys, wake_sender,
            )
            if send_append is not None and self._key_passthrough and self._value_passthrough
            and self._partitioner is None else None
        )
        # the whole of send()'s common case in one kernel call (its checks, the metadata, send_append), but for
        # a transactional producer (its state check may raise); None once closed
        tm = self.transaction_manager
        send_record = self.accumulator.send_record
        self._send_record: Callable[..., Any] | None = (
            send_record(
                None if self._system_time else time.milliseconds, _NO_HEADERS, self.metadata,
                self._max_record_size - _UPPER_BOUND_NO_HEADERS, self._ignore_keys, wake_sender,
                None if self._system_time else time.hi_res_clock_ms,
                None if tm is None else (tm, STATE_ATTRIBUTE, State.FATAL_ERROR), (self.metadata, CLUSTER_ATTRIBUTE),
            )
            if send_record is not None and self._send_append is not None and self.transactional_id is None else None
        )
        self._closed = False
        self._close_lock = threading.Lock()
        self._io_thread: IoRunner = (io_runner or _start_sender_thread)(self.sender, self.client_id)
        self._exit_hook = functools.partial(_close_at_exit, weakref.ref(self))
        atexit.register(self._exit_hook)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called (``send`` then raises ProducerClosedError)."""
        return self._closed

    @property
    def append_to_open_batch(self) -> Callable[..., Any] | None:
        """``send()``'s compiled common case, for a caller that must never block (the async producer):
        ``append_to_open_batch(topic, partition, timestamp, key, value, on_delivery)`` appends the record into its
        partition's open batch when that has room, else into a new batch when ``buffer.memory`` has its room at once
        (``RecordAccumulator.open_batch``), and returns the record's future; else it returns NotImplemented having
        appended nothing (the record needs :meth:`send`'s full path: buffer memory to wait for, the topic's
        metadata, or an error to raise; a full last batch may have been closed, as :meth:`send` closes it). It never
        waits. None once closed, for a transactional producer, and without the compiled kernel (call :meth:`send`
        then)."""
        return self._send_record

    @staticmethod
    def _resolve_partitioner(value: Any) -> Partitioner | None:
        if value is None:
            return None
        if isinstance(value, str):
            cls = _PARTITIONER_NAMES.get(value)
            if cls is None:
                raise ConfigurationError(f"Invalid value {value!r} for configuration partitioner.class: unknown partitioner")
            return cls()
        if isinstance(value, type):
            value = value()
        if not isinstance(value, Partitioner):
            raise ConfigurationError(f"Invalid value {value!r} for configuration partitioner.class: no partition() method")
        return value

    # --- sending -------------------------------------------------------------------------------------

    def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        timestamp: int | None = None,
        headers: Sequence[tuple[str, Any]] | Mapping[str, Any] | None = None,
        on_delivery: Callback | None = None,
    ) -> Future[RecordMetadata]:
        """Send a record asynchronously; see the module doc for which errors raise and which fail the future.

        Hot path (measured per call, see bench/producer.py --micro): no header normalisation without headers,
        no serializer call for bytes through the default bytes serializer, one deque-lock round when the
        partition's last batch has room (``RecordAccumulator.try_append_fast``). With the kernel, ``producer.send``
        is this function bound by the kernel's ``SendMethod``, which makes the ``_send_record`` call below
        without running this frame (a new batch included, when its memory is free at once) and calls
        :meth:`_send_declined` when it declines.
        """
        send_record = self._send_record
        if send_record is not None and headers is None:
            # checks, metadata, partition, append and wake-up in one C call; NotImplemented: nothing was appended,
            # the Python path does it all (and raises as it always did)
            future = send_record(topic, partition, timestamp, key, value, on_delivery)
            if future is not NotImplemented:
                return future  # type: ignore[no-any-return]
        return self._send_declined(topic, value, key, partition, timestamp, headers, on_delivery)

    def _send_declined(
        self,
        topic: str,
        value: Any,
        key: Any,
        partition: int | None,
        timestamp: int | None,
        headers: Sequence[tuple[str, Any]] | Mapping[str, Any] | None,
        on_delivery: Callback | None,
        no_room: bool = False,
    ) -> Future[RecordMetadata]:
        """:meth:`send` after the kernel's SendRecord declined the record (nothing appended) or without it.
        ``no_room``: SendRecord made send()'s checks and the metadata lookup (the topic and the partition are
        known) and found no open batch with room and no buffer memory free at once for a new one (or the
        accumulator closed): only the append into a new batch, waiting for its memory, is left to do."""
        if self._closed:
            raise ProducerClosedError("Cannot perform operation after producer has been closed")
        tm = self.transaction_manager
        if not no_room:
            if tm is not None or topic.__class__ is not str or not topic or partition is not None:
                fatal = self._check_can_send(topic, partition)
                if fatal is not None:
                    # as Java's send: the topic's metadata first (its own error fails the future), then the fatal
                    # error
                    try:
                        self.wait_on_metadata(topic, partition, self._max_block_ms)
                    except (BrokerResponseError, KafkaTimeoutError) as e:
                        if on_delivery is not None:
                            on_delivery(None, e)
                        return _failed_future(e)
                    raise fatal
            if timestamp is not None and timestamp < 0:
                raise IllegalArgumentError(
                    f"Invalid timestamp: {timestamp}. Timestamp should always be non-negative or None."
                )
        hdrs = _normalize_headers(headers) if headers else _NO_HEADERS
        metadata = self.metadata
        try:
            if no_room:
                remaining_ms = self._max_block_ms
            else:
                if self._system_time:
                    count = metadata.add_and_count(topic, _monotonic_ns() // 1_000_000)
                else:
                    count = metadata.add_and_count(topic, self._time.hi_res_clock_ms())
                if count is not None and (partition is None or partition < count):
                    remaining_ms = self._max_block_ms
                    send_append = self._send_append
                    if send_append is not None and not hdrs:
                        # the partition, the append into an open batch and the Sender's wake-up in one C call; None
                        # (the kernel found no open batch with room: try_append_fast would find none either, append
                        # does it) or NotImplemented: nothing changed, the Python path below does it
                        future = send_append(topic, partition, count, timestamp, key, value, on_delivery)
                        if future is None:
                            no_room = True
                        elif future is not NotImplemented:
                            return future  # type: ignore[no-any-return]
                else:
                    remaining_ms = self.wait_on_metadata(topic, partition, self._max_block_ms)
            if self._key_passthrough and (key is None or key.__class__ is bytes):
                key_bytes = key
            else:
                key_bytes = self._serialize(self._key_serializer, topic, key, hdrs, "key")
            if self._value_passthrough and (value is None or value.__class__ is bytes):
                value_bytes = value
            else:
                value_bytes = self._serialize(self._value_serializer, topic, value, hdrs, "value")
            if partition is None and self._partitioner is None and (key_bytes is None or self._ignore_keys):
                part = UNKNOWN_PARTITION
            else:
                part = self._partition(topic, partition, key, key_bytes, value, value_bytes)
            if hdrs:
                size = estimate_size_upper_bound(key_bytes, value_bytes, hdrs)
            else:
                size = _UPPER_BOUND_NO_HEADERS
                if key_bytes is not None:
                    size += len(key_bytes)
                if value_bytes is not None:
                    size += len(value_bytes)
            if size > self._max_record_size:
                self._ensure_valid_record_size(size)
            if timestamp is not None:
                ts = timestamp
            elif self._system_time:
                ts = _time_ns() // 1_000_000  # = SYSTEM_TIME.milliseconds(), without the method call
            else:
                ts = self._time.milliseconds()
            accumulator = self.accumulator
            if not no_room:
                fast = accumulator.try_append_fast(topic, part, ts, key_bytes, value_bytes, hdrs, on_delivery, metadata)
                if fast is not None:
                    if fast[1]:
                        self.sender.wakeup()
                    return fast[0]
            # (append tries the partition's last batch again under its lock before it makes a new one)
            result = accumulator.append(
                topic, part, ts, key_bytes, value_bytes, hdrs, on_delivery, remaining_ms, metadata
            )
            if tm is not None and self.transactional_id is not None:
                # After the append, when the partition is known; the Sender drains it only once added. The fast
                # path above appends only to a batch whose partition was added when the batch was created.
                tm.maybe_add_partition(TopicPartition(topic, result.partition))
        except (BrokerResponseError, KafkaTimeoutError) as e:
            if on_delivery is not None:
                on_delivery(None, e)
            return _failed_future(e)
        if result.batch_is_full or result.new_batch_created:
            self.sender.wakeup()
        return result.future

    def send_batch(
        self,
        topic: str,
        values: Sequence[Any] | Any,
        keys: Sequence[Any] | Any | None = None,
        *,
        partition: int | None = None,
        headers: Sequence[tuple[str, Any]] | Mapping[str, Any] | None = None,
        timestamps: Sequence[int | None] | Any | None = None,
        on_delivery: Callback | None = None,
    ) -> SendBatchFuture:
        """Send many records of one topic at once; returns one :class:`SendBatchFuture` for all of them (its result:
        a :class:`BatchMetadata` with each record's RecordMetadata, built when read).

        ``values`` (and ``keys``, ``timestamps``: None or as many) are sequences or pyarrow arrays (binary,
        string, large variants, nulls; chunked too). Arrow binary and string arrays are the records' bytes (UTF-8
        for strings); the items of sequences go through the configured serializers as in :meth:`send`.
        ``partition``: every record's partition; else the configured partitioner, or Java's default (murmur2 of
        the key, or the sticky partition for a null key). ``headers`` go on every record. A record without
        a timestamp gets the time of the call. ``on_delivery(metadata, exception)`` runs per record.

        Records land in the same batches with the same bytes as a loop of ``send`` calls would produce
        (the batches of different partitions may fill in another order), with ``batch.size``, ``buffer.memory``
        (blocking up to ``max.block.ms`` per new batch), idempotence and transactions as ``send``. Misuse
        raises before any record is appended, as ``send`` raises (closed producer, bad partition or timestamp,
        serialization failure, a record larger than ``max.request.size``); a record that cannot get buffer
        memory in time fails with the rest of the call's records not yet appended (their future's error); a topic
        or partition missing from the metadata after ``max.block.ms`` fails them all (KafkaTimeoutError)."""
        fatal = self._check_can_send(topic, partition)
        value_list = _as_column(values, "values")
        n = len(value_list)
        key_list = None if keys is None else _as_column(keys, "keys")
        ts_list = None if timestamps is None else _as_column(timestamps, "timestamps")
        for name, other in (("keys", key_list), ("timestamps", ts_list)):
            if other is not None and len(other) != n:
                raise IllegalArgumentError(f"send_batch(): {len(other)} {name} for {n} values: give one per value or None")
        hdrs = _normalize_headers(headers) if headers else _NO_HEADERS
        metadata = self.metadata
        count = metadata.add_and_count(topic, self._time.hi_res_clock_ms())
        if count is None or (partition is not None and partition >= count) or fatal is not None:
            try:
                self.wait_on_metadata(topic, partition, self._max_block_ms)
            except (BrokerResponseError, KafkaTimeoutError) as e:  # as send(): the records fail, nothing raises
                failed = SendBatchFuture(n, None)
                failed.fail_from(0, e)
                if on_delivery is not None:
                    for _ in range(n):
                        on_delivery(None, e)
                failed.seal()
                return failed
            if fatal is not None:
                raise fatal
            count = metadata.partition_count_for_topic(topic) or 1
        longest = batch_append.scan_records(key_list, value_list, ts_list)
        # the objects given, for a custom partitioner (as send() passes them beside the serialized bytes)
        key_objects, value_objects = key_list, value_list
        if longest == -1:
            # a key or value to serialize: serialize, then scan again (timestamps included: the first scan
            # stopped at the first object that is not bytes, before it checked them)
            if key_list is not None and not (self._key_passthrough and batch_append.scan_records(None, key_list, None) >= 0):
                key_list = [self._serialize(self._key_serializer, topic, k, hdrs, "key") for k in key_list]
            value_list = [self._serialize(self._value_serializer, topic, v, hdrs, "value") for v in value_list]
            longest = batch_append.scan_records(key_list, value_list, ts_list)
        if longest == -2:
            assert ts_list is not None
            bad = next(t for t in ts_list if t is not None and (t.__class__ is not int or not 0 <= t <= batch_append.MAX_TIMESTAMP))
            raise IllegalArgumentError(
                f"Invalid timestamp: {bad!r}. Timestamp should always be non-negative or None"
                f" (send_batch(): an int from 0 to {batch_append.MAX_TIMESTAMP})"
            )
        size = estimate_size_upper_bound(None, None, hdrs) + longest
        if size > self._max_record_size:
            self._ensure_valid_record_size(size)
        ts = _time_ns() // 1_000_000 if self._system_time else self._time.milliseconds()
        # the partition of each record, then runs of records for one partition (requested, or UNKNOWN: sticky)
        order: list[int] | None = None
        if partition is not None:
            runs = [(partition, 0, n)]
        elif self._partitioner is None and (key_list is None or self._ignore_keys):
            runs = [(UNKNOWN_PARTITION, 0, n)]
        else:
            if self._partitioner is None and key_list is not None:
                parts = batch_append.key_partitions(key_list, count)
            else:
                parts = [
                    self._partition(
                        topic, None,
                        None if key_objects is None else key_objects[i], None if key_list is None else key_list[i],
                        value_objects[i], value_list[i],
                    )
                    for i in range(n)
                ]
            if UNKNOWN_PARTITION not in parts:
                # partitions fill independently: group each partition's records, in their order
                order = sorted(range(n), key=parts.__getitem__)
                parts = [parts[i] for i in order]
                value_list = [value_list[i] for i in order]
                key_list = None if key_list is None else [key_list[i] for i in order]
                ts_list = None if ts_list is None else [ts_list[i] for i in order]
            runs = []
            start = 0
            for i in range(1, n + 1):
                if i == n or parts[i] != parts[start]:
                    runs.append((parts[start], start, i))
                    start = i
        future = SendBatchFuture(n, order)
        try:
            for part, start, stop in runs:
                self._append_run(topic, part, key_list, value_list, start, stop, ts_list, ts, hdrs, on_delivery, future)
        except _RecordsFailed as failed:
            future.fail_from(failed.position, failed.error)
            if on_delivery is not None:
                for _ in range(failed.position, n):
                    on_delivery(None, failed.error)
        future.seal()
        return future

    def _append_run(
        self,
        topic: str,
        part: int,
        keys: Sequence[Any] | None,
        values: Sequence[Any],
        start: int,
        stop: int,
        timestamps: Sequence[Any] | None,
        ts: int,
        hdrs: Sequence[Header],
        on_delivery: Callback | None,
        future: SendBatchFuture,
    ) -> None:
        """Append records ``start..stop`` (all for partition ``part``) as that many ``send`` calls would: into the
        open batch in bulk (``try_append_many``), through ``RecordAccumulator.append`` for a record that needs a
        new batch."""
        accumulator = self.accumulator
        metadata = self.metadata
        tm = self.transaction_manager if self.transactional_id is not None else None
        # a record that needs a new batch goes through send()'s compiled path when it applies (no headers: the one
        # it is bound with; None for a transactional producer): the new batch, the Sender's wake-up and the GIL
        # hand-off in one call, as for send(); NotImplemented leaves the record to append() below
        send_record = self._send_record if hdrs is _NO_HEADERS else None
        requested = None if part == UNKNOWN_PARTITION else part
        add_segment = future.segments.add  # future.add_segment without its frame
        i = start
        while i < stop:
            fast = accumulator.try_append_many(topic, part, keys, values, i, stop, timestamps, ts, hdrs, on_delivery, metadata)
            if fast is not None:
                nxt, outcome, index, wake, closed = fast
                add_segment(future, i, nxt - i, outcome, index)
                if wake:
                    self.sender.wakeup()
                i = nxt
                if not closed:
                    continue
                # record i had no room in the batch, now closed: append opens the next one without trying it again
            rts = ts if timestamps is None or timestamps[i] is None else timestamps[i]
            if send_record is not None:
                f = send_record(topic, requested, rts, None if keys is None else keys[i], values[i], on_delivery)
                if f is not NotImplemented:
                    outcome = f.outcome
                    outcome, index = (outcome, f.index) if outcome.moved_to is None else f.batch_position()
                    add_segment(future, i, 1, outcome, index)
                    i += 1
                    continue
            try:
                result = accumulator.append(
                    topic, part, rts, None if keys is None else keys[i], values[i], hdrs, on_delivery,
                    self._max_block_ms, metadata,
                )
            except (BrokerResponseError, KafkaTimeoutError) as e:
                raise _RecordsFailed(i, e) from e
            if tm is not None:
                tm.maybe_add_partition(TopicPartition(topic, result.partition))
            f = result.future
            outcome = f.outcome
            # batch_position() without its calls for the record's own batch (not split, the common case)
            outcome, index = (outcome, f.index) if outcome.moved_to is None else f.batch_position()
            add_segment(future, i, 1, outcome, index)
            i += 1
            if result.batch_is_full or result.new_batch_created:
                self.sender.wakeup()
                if result.new_batch_created and self._handoff_offer is not None:
                    # the partition the record went to: ``part`` is UNKNOWN_PARTITION for the sticky partitioner
                    self._handoff_offer(topic, result.partition)

    def _check_can_send(self, topic: str, partition: int | None) -> KafkaError | None:
        """What ``send`` raises at once for a closed producer, a transaction state, a bad topic or partition; and
        the fatal error of an idempotent producer, which the caller raises after the metadata wait (Java's
        ``doSend`` waits on the topic's metadata before the transaction manager fails it, so the topic's own
        error, such as TOPIC_AUTHORIZATION_FAILED, comes first)."""
        if self._closed:
            raise ProducerClosedError("Cannot perform operation after producer has been closed")
        tm = self.transaction_manager
        fatal = None
        if tm is not None:
            if self.transactional_id is not None:
                tm.fail_if_not_ready_for_send()
            elif tm.has_fatal_error():
                fatal = tm.fail_pending()
        if not isinstance(topic, str):
            raise TypeError(f"send() expects the topic name as a str, got {type(topic).__name__} {topic!r}")
        if not topic:
            raise IllegalArgumentError("Invalid topic '': a topic name must not be empty")
        if partition is not None and (not isinstance(partition, int) or isinstance(partition, bool)):
            raise TypeError(f"send() expects partition as an int or None, got {type(partition).__name__} {partition!r}")
        if partition is not None and partition < 0:
            raise IllegalArgumentError(f"Invalid partition given with record: {partition}")
        return fatal

    @staticmethod
    def _serialize(serializer: Serializer[Any], topic: str, data: Any, headers: Sequence[Header], what: str) -> bytes | None:
        try:
            out = serializer.serialize(topic, data, headers)
        except SerializationError:
            raise
        except Exception as e:  # a user serializer failing in its own way
            raise SerializationError(f"Can't serialize the key or value of a record for topic {topic}: {e!r}") from e
        if out is not None and not isinstance(out, bytes):
            raise SerializationError(f"{what} serializer returned {type(out).__name__}, not bytes")
        return out

    def wait_on_metadata(self, topic: str, partition: int | None, max_wait_ms: int) -> int:
        """Wait until ``topic`` (and ``partition``) is in the metadata; returns the ms left of ``max_wait_ms``.
        Blocks the calling thread (the async producer calls it on a worker thread). Raises KafkaTimeoutError
        when ``max_wait_ms`` passes first, the topic's error (TopicAuthorizationFailedError, InvalidTopicError)
        at once, ProducerClosedError when the producer closes meanwhile."""
        self._io_thread.ensure_started()
        now = self._time.hi_res_clock_ms()
        self.metadata.add(topic, now)
        count = self.metadata.partition_count_for_topic(topic)
        if count is not None and (partition is None or partition < count):
            return max_wait_ms
        deadline = now + max_wait_ms
        while True:
            if self._closed:
                raise ProducerClosedError("Producer closed while waiting for metadata")
            self.metadata.add(topic, self._time.hi_res_clock_ms())
            version = self.metadata.request_update_for_topic(topic)
            self.sender.wakeup()
            remaining = deadline - self._time.hi_res_clock_ms()
            if remaining > 0:
                self.metadata.await_update(version, min(remaining, 1000) / 1000.0)
            self._maybe_throw_for_topic(topic)
            count = self.metadata.partition_count_for_topic(topic)
            if count is not None and (partition is None or partition < count):
                return max(deadline - self._time.hi_res_clock_ms(), 0)
            if self._time.hi_res_clock_ms() >= deadline:
                if count is None:
                    raise KafkaTimeoutError(
                        topic_not_present_message(
                            topic, max_wait_ms, self.metadata, self.client, self.config["bootstrap.servers"]
                        )
                    )
                raise KafkaTimeoutError(
                    f"Partition {partition} of topic {topic} with partition count {count} is not present in "
                    f"metadata after {max_wait_ms} ms."
                )

    def _maybe_throw_for_topic(self, topic: str) -> None:
        """Errors of this topic only (Java ``maybeThrowExceptionForTopic``), plus fatal metadata errors."""
        self.metadata.maybe_throw_fatal_exception()
        cluster = self.metadata.fetch()
        if topic in cluster.unauthorized_topics:
            raise TopicAuthorizationFailedError(f"Not authorized to access topics: [{topic}]")
        if topic in cluster.invalid_topics:
            raise InvalidTopicError(f"Invalid topic: {topic}")

    def _partition(self, topic: str, partition: int | None, key: Any, key_bytes: bytes | None, value: Any, value_bytes: bytes | None) -> int:
        if partition is not None:
            return partition
        if self._partitioner is not None:
            p = self._partitioner.partition(topic, key, key_bytes, value, value_bytes, self.metadata)
            count = self.metadata.partition_count_for_topic(topic) or 0
            if not 0 <= p < count:
                raise IllegalArgumentError(f"partitioner returned partition {p} outside [0, {count}) for topic {topic}")
            return p
        if key_bytes is not None and not self._ignore_keys:
            return partition_for_key(key_bytes, self.metadata.partition_count_for_topic(topic) or 1)
        return UNKNOWN_PARTITION

    def _ensure_valid_record_size(self, size: int) -> None:
        if size > self._max_request_size:
            raise RecordTooLargeError(
                f"The message is {size} bytes when serialized which is larger than {self._max_request_size}, which is "
                "the value of the max.request.size configuration."
            )
        if size > self._total_memory:
            raise RecordTooLargeError(
                f"The message is {size} bytes when serialized which is larger than the total memory buffer you have "
                f"configured with the buffer.memory configuration ({self._total_memory})."
            )

    # --- flush, metadata, metrics --------------------------------------------------------------------

    def flush(self, timeout: float | None = None) -> None:
        """Send everything buffered now and wait until those records completed (successfully or not).

        Raises KafkaTimeoutError if ``timeout`` (seconds) passes first.
        """
        self._io_thread.ensure_started()
        if _is_current_thread(self._io_thread):
            raise IllegalArgumentError("flush() must not be called from a delivery callback")
        mark = self.accumulator.flush_mark()
        self.accumulator.begin_flush()
        try:
            self.sender.wakeup()
            if not self.accumulator.await_flush_completion(timeout, mark):
                raise KafkaTimeoutError(f"Failed to flush accumulated records within {timeout} s")
        finally:
            self.accumulator.end_flush()

    def partitions_for(self, topic: str) -> list[PartitionInfo]:
        """The topic's partitions, waiting up to ``max.block.ms`` for its metadata (as Java: an unknown
        topic raises KafkaTimeoutError after that wait; an invalid or unauthorized one raises at once)."""
        if self._closed:
            raise ProducerClosedError("Cannot perform operation after producer has been closed")
        self.wait_on_metadata(topic, None, self._max_block_ms)
        return self.metadata.partitions_for_topic(topic)

    def metrics(self) -> dict[str, float]:
        """A snapshot of producer counters (names follow Java's producer-metrics where one exists)."""
        m = self.sender.metrics
        queued = self.accumulator.queue_sizes()
        return {
            "request-total": m.requests_sent,
            "batch-total": m.batches_sent,
            "record-send-total": m.records_sent,
            "byte-total": m.bytes_sent,
            "record-retry-total": m.retries,
            "record-error-total": m.errors,
            "batch-split-total": m.splits,
            "record-expired-total": m.expired,
            "buffer-total-bytes": self.accumulator.free.total_memory,
            "buffer-available-bytes": self.accumulator.free.available_memory(),
            "waiting-threads": self.accumulator.free.queued(),
            "batches-queued": sum(queued.values()),
            "requests-in-flight": self.sender.in_flight_count(),
        }

    # --- transactions ---------------------------------------------------------------------------------

    def _transaction_manager(self) -> TransactionManager:
        tm = self.transaction_manager
        if tm is None or self.transactional_id is None:
            raise IllegalStateError(
                "Cannot use transactional methods without enabling transactions by setting the transactional.id "
                "configuration property"
            )
        if self._closed:
            raise ProducerClosedError("Cannot perform operation after producer has been closed")
        return tm

    def _await(self, result: TransactionalRequestResult, timeout: float | None) -> None:
        self._io_thread.ensure_started()
        self.sender.wakeup()
        result.await_(self._max_block_ms / 1000.0 if timeout is None else timeout)

    def init_transactions(self, timeout: float | None = None) -> None:
        """Get a producer id for ``transactional.id``, fencing any older producer with the same id and
        completing (or aborting) the transactions it left open. Call once, before any other transactional
        method. ``timeout`` (seconds; default ``max.block.ms``) passing raises KafkaTimeoutError: call again
        to keep waiting."""
        tm = self._transaction_manager()
        self._await(tm.initialize_transactions(), timeout)

    def begin_transaction(self) -> None:
        """Start a transaction: records sent from now on are committed or aborted together."""
        self._transaction_manager().begin_transaction()

    def resume_transaction(self, producer_id: int, epoch: int) -> None:
        """Take over the open transaction that another producer with this ``transactional.id`` began and
        left open (its ``producer_id`` and ``epoch``, from :meth:`producer_id_and_epoch`), then end it with
        ``commit_transaction()`` or ``abort_transaction()``. Call it on a fresh producer instead of
        ``init_transactions()`` (which would fence that transaction and abort it); send nothing with it.
        Not a Java API: two-phase commit coordinators use it (Flink's Kafka sink does the same by reflection;
        here the Spark connector's exactly-once sink). See ``TransactionManager.resume_transaction``."""
        self._transaction_manager().resume_transaction(producer_id, epoch)

    def producer_id_and_epoch(self) -> tuple[int, int]:
        """The producer id and epoch in use (-1, -1 before one was obtained), e.g. to hand an open
        transaction to :meth:`resume_transaction` of another producer."""
        tm = self.transaction_manager
        return tm.producer_id_and_epoch() if tm is not None else (-1, -1)

    def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
        group_metadata: GroupMetadata,
        timeout: float | None = None,
    ) -> None:
        """Commit a consumer group's ``offsets`` (the next offsets to read) as part of the transaction
        (consume-transform-produce). ``group_metadata`` is ``consumer.group_metadata()`` (KIP-447: a zombie
        of an older generation is fenced)."""
        if group_metadata is None:
            raise IllegalArgumentError("Consumer group metadata could not be None")
        if group_metadata.generation_id > 0 and group_metadata.member_id == "":
            raise IllegalArgumentError(
                f"Passed in group metadata {group_metadata} has generation_id > 0 but member_id is empty"
            )
        tm = self._transaction_manager()
        if not offsets:
            return
        normalized = {
            tp: om if isinstance(om, OffsetAndMetadata) else OffsetAndMetadata(om) for tp, om in offsets.items()
        }
        self._await(tm.send_offsets_to_transaction(normalized, group_metadata), timeout)

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush the transaction's records and commit it. An abortable error (a failed send, TRANSACTION_ABORTABLE)
        raises here: call ``abort_transaction()``. A fatal one (ProducerFencedError...) means close the producer.
        KafkaTimeoutError after ``timeout`` seconds (default ``max.block.ms``): call again for the same outcome."""
        tm = self._transaction_manager()
        self._await(tm.begin_commit(), timeout)

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Abort the transaction: records not sent yet fail with TransactionAbortedError, sent ones are never
        visible to read_committed consumers. After an abortable error this makes the producer usable again."""
        tm = self._transaction_manager()
        log.info("aborting the transaction of transactional.id %s", self.transactional_id)
        self._await(tm.begin_abort(), timeout)

    # --- closing -------------------------------------------------------------------------------------

    def close(self, timeout: float | None = None) -> None:
        """Stop accepting records, send what is buffered (up to ``timeout`` seconds; None = no limit),
        then fail whatever is left with ProducerClosedError. ``timeout=0`` fails buffered records at once."""
        self._close(timeout, at_exit=False)

    def _close(self, timeout: float | None, at_exit: bool) -> None:
        with self._close_lock:
            already = self._closed
            self._closed = True
            self._send_record = None
        atexit.unregister(self._exit_hook)
        if at_exit and not already:
            log.info("producer %s was not closed: closing it at interpreter exit (up to %s s)", self.client_id, timeout)
        if already and not self._io_thread.is_alive():
            return
        in_io_thread = _is_current_thread(self._io_thread)
        if in_io_thread and timeout != 0:
            log.warning("close() from a delivery callback: closing without waiting (timeout 0)")
            timeout = 0
        if timeout is None or timeout > 0:
            self.sender.initiate_close()
            if not in_io_thread:
                self._io_thread.join(timeout)
            if at_exit and self._io_thread.is_alive():
                pending = sum(b.record_count for b in self.accumulator.incomplete_batches())
                message = (
                    f"producer {self.client_id} was not closed before the interpreter exited and {pending} "
                    f"record(s) were still not delivered after {timeout} s; they are dropped. Call flush() or "
                    "close() before the program ends (or raise KafkaProducer.close_at_exit_timeout)."
                )
                log.warning(message)
                if not logging.getLogger().handlers:
                    # records are being lost and the program configured no logging (the library's own
                    # NullHandler would swallow the warning): say it on stderr all the same
                    print(f"WARNING pykafka_client: {message}", file=sys.stderr)
        if self._io_thread.is_alive() or timeout == 0:
            self.sender.force_close()
            if not in_io_thread:
                self._io_thread.join(30)
        self.metadata.close()

    def __enter__(self) -> KafkaProducer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"KafkaProducer(client_id={self.client_id!r}, closed={self._closed})"


_NO_HEADERS: tuple[Header, ...] = ()
#: ``estimate_size_upper_bound`` of a record without key, value or headers.
_UPPER_BOUND_NO_HEADERS = estimate_size_upper_bound(None, None, _NO_HEADERS)


class _RecordsFailed(Exception):
    """send_batch: record ``position`` (and so the records after it) could not be appended."""

    def __init__(self, position: int, error: BrokerResponseError | KafkaTimeoutError) -> None:
        super().__init__(position, error)
        self.position = position
        self.error = error


def _as_column(data: Any, what: str) -> Sequence[Any]:
    """A send_batch column as a list, or a column over an Arrow array's buffers: a list as is, another sequence
    copied, a pyarrow binary or string array (chunked too) as ``batch_append.arrow_column`` (its items made only
    when read: the kernel's steps read them in place; strings as their UTF-8 bytes), another pyarrow array's items by
    ``to_pylist``."""
    if data.__class__ is list:
        return data
    if type(data).__module__.startswith("pyarrow") and hasattr(data, "to_pylist"):
        items = batch_append.arrow_column(data)
        if items is not None:
            return items
        import pyarrow as pa

        if pa.types.is_string(data.type):
            data = data.cast(pa.binary())
        elif pa.types.is_large_string(data.type):
            data = data.cast(pa.large_binary())
        return data.to_pylist()  # type: ignore[no-any-return]
    if isinstance(data, (str, bytes, bytearray, memoryview)) or not isinstance(data, Sequence):
        raise TypeError(f"send_batch() expects {what} as a sequence or a pyarrow array, got {type(data).__name__}")
    return list(data)


def _normalize_headers(headers: Sequence[tuple[str, Any]] | Mapping[str, Any] | None) -> Sequence[Header]:
    if not headers:
        return _NO_HEADERS  # shared: no list per record
    items = list(headers.items()) if isinstance(headers, Mapping) else list(headers)
    out: list[Header] = []
    for item in items:
        if not isinstance(item, tuple) or len(item) != 2 or not isinstance(item[0], str):
            raise IllegalArgumentError(f"a header must be a (str, bytes | None) pair, got {item!r}")
        k, v = item
        if v is None or isinstance(v, bytes):
            out.append((k, v))
        elif isinstance(v, (bytearray, memoryview)):
            out.append((k, bytes(v)))
        elif isinstance(v, str):
            out.append((k, v.encode("utf-8")))
        else:
            raise IllegalArgumentError(f"header {k!r}: value must be bytes, str or None, got {type(v).__name__}")
    return out


def _install_send_method() -> None:
    """``KafkaProducer.send`` through the kernel's SendMethod: the same function on the class; on a producer a
    bound callable that runs send()'s kernel call without send()'s Python frame (nothing without the kernel)."""
    kernel = _native.kernel
    send_method = getattr(kernel, "SendMethod", None)
    if send_method is not None:
        KafkaProducer.send = send_method(KafkaProducer.__dict__["send"], KafkaProducer._send_declined)  # type: ignore[method-assign]


_install_send_method()

__all__ = ["BatchMetadata", "KafkaError", "KafkaProducer", "SendBatchFuture"]

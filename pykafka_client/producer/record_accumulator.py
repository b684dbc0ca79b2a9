"""Per-partition queues of batches between ``send()`` and the Sender (Java ``RecordAccumulator``).

Threads: any number of application threads call :meth:`append`; the Sender thread calls ``ready``,
``drain``, ``reenqueue``, ``expired_batches`` and friends. Each partition's deque has its own lock; no
callback and no network call ever runs under one. Memory is accounted in a :class:`BufferPool` and
held by a batch from creation to :meth:`deallocate`.

Readiness (``ready``): a partition whose leader is known and not muted is sendable when its first batch
is full or is not the only one, when ``linger.ms`` (or, for a retry, the retry backoff) has elapsed,
when memory is exhausted, when the accumulator is closing or flushing, or when a transaction is
completing. A retried batch waits out its exponential backoff (with jitter) unless the partition's
leader changed since the last attempt. ``next_ready_check_delay_ms`` is the least time left on any
partition that is not sendable yet.

Draining (``drain``): per node, one batch per partition, rotating the starting partition across calls
so no partition starves, up to ``max.request.size`` bytes but always at least one batch. Sequence
numbers of an idempotent producer are assigned here, at drain time, never at append time.
"""

from __future__ import annotations

import functools
import random
import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple, Protocol

from pykafka_client.errors import (
    IllegalStateError,
)
from pykafka_client.errors_base import KafkaError
from pykafka_client.network.exponential_backoff import ExponentialBackoff
from pykafka_client.producer.batch_opener import new_batch_opener
from pykafka_client.producer.buffer_pool import BufferPool, MemoryAccountApi
from pykafka_client.producer.compression_ratio_estimator import CompressionRatioEstimator
from pykafka_client.producer.future_record_metadata import BatchOutcome, FutureRecordMetadata
from pykafka_client.producer.incomplete_batches import IncompleteBatchesApi, await_completion, new_incomplete_batches
from pykafka_client.producer.many_appender import new_many_appender
from pykafka_client.producer.partitioner import BuiltInPartitioner, ClusterView, StickyInfo
from pykafka_client.producer.producer_batch import ProducerBatch, increment_sequence, is_compression
from pykafka_client.producer.producer_metadata import MetadataSnapshot
from pykafka_client.producer.record_size import Callback, Header, estimate_size_upper_bound
from pykafka_client.protocol.records import _native
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import Time

if TYPE_CHECKING:
    from pykafka_client.producer.transaction_manager import TransactionManager
    from pykafka_client.structs import Node

#: ``partition`` value asking the accumulator to pick one (built-in sticky partitioner).
UNKNOWN_PARTITION = -1
RETRY_BACKOFF_EXP_BASE = 2
RETRY_BACKOFF_JITTER = 0.2


class AccumulatorMetadata(ClusterView, Protocol):
    """What ``ready``/``drain`` need from metadata (implemented by ``ProducerMetadata``)."""

    def leader_and_epoch(self, tp: tuple[str, int]) -> tuple[Node | None, int | None]: ...

    def partitions_for_node(self, node_id: int) -> Sequence[TopicPartition]: ...


class RecordAppendResult(NamedTuple):
    """What :meth:`RecordAccumulator.append` did (a named tuple built with ``tuple.__new__``: no Python-level
    constructor on send()'s new-batch path)."""

    future: FutureRecordMetadata
    batch_is_full: bool
    new_batch_created: bool
    partition: int
    appended_bytes: int


class ReadyCheckResult(NamedTuple):
    """What :meth:`RecordAccumulator.ready` found (a named tuple: one per Sender iteration, built with
    ``tuple.__new__``, without a Python ``__init__``)."""

    ready_nodes: set[Node]
    next_ready_check_delay_ms: int
    unknown_leader_topics: set[str]


_new_tuple = tuple.__new__


class _PartitionQueue:
    # Final: the compiled send path keeps a queue's batches and lock once read (SendRecord's cache, send_cache in
    # records/kernel/producer_send_append.c.h)
    __slots__ = ("batches", "lock", "tp")

    def __init__(self, tp: TopicPartition) -> None:
        self.batches: Final[deque[ProducerBatch]] = deque()
        self.lock: Final = threading.Lock()
        #: the partition, shared by all its batches (``topic_partition``): a TopicPartition is a GC-tracked tuple,
        #: one per queued batch would count towards the cyclic collector's next full collection
        self.tp = tp


class _TopicInfo:
    __slots__ = ("queue_items", "queues", "partitioner")

    def __init__(self, partitioner: BuiltInPartitioner) -> None:
        self.queues: dict[int, _PartitionQueue] = {}
        #: ``queues``' items as of the last queue added (replaced whole under the accumulator's topics lock): what the
        #: Sender's per-iteration loops walk, without copying the dict each time
        self.queue_items: tuple[tuple[int, _PartitionQueue], ...] = ()
        #: Final: the compiled send path keeps a topic's partitioner once read
        self.partitioner: Final = partitioner


class RecordAccumulator:
    """Batches records per partition and hands full or lingered batches to the Sender."""

    #: ``closed`` in a slot: the kernel's send path reads it once per record, at a fixed offset; the others are what
    #: the kernel's round (sender_send_round) reads each round (the rest of the state is in the instance dict)
    __slots__ = (
        "__dict__", "__weakref__", "closed", "topic_items", "linger_ms", "adaptive_partitioning", "delivery_timeout_ms",
        "next_batch_expiry_ms",
    )

    def __init__(
        self,
        *,
        batch_size: int,
        linger_ms: int,
        retry_backoff_ms: int,
        retry_backoff_max_ms: int,
        delivery_timeout_ms: int,
        buffer_pool: BufferPool,
        time: Time,
        compression_type: Any = None,
        compression_level: int | None = None,
        transaction_manager: TransactionManager | None = None,
        adaptive_partitioning: bool = True,
        rng: random.Random | None = None,
    ) -> None:
        self.batch_size = batch_size
        self.linger_ms = linger_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.retry_backoff = ExponentialBackoff(retry_backoff_ms, RETRY_BACKOFF_EXP_BASE, retry_backoff_max_ms, RETRY_BACKOFF_JITTER, rng)
        self.delivery_timeout_ms = delivery_timeout_ms
        self.free = buffer_pool
        self.time = time
        self.compression_type = compression_type
        #: batches are compressed (their size limit uses the topic's estimated compression ratio)
        self._compressed = is_compression(compression_type)
        self.compression_level = compression_level
        self.transaction_manager = transaction_manager
        self.adaptive_partitioning = adaptive_partitioning
        self._rng = rng if rng is not None else random.Random()
        #: a topic's entry and a partition's queue, once made, are never replaced or removed (the kernel's
        #: SendRecord remembers the last ones it used)
        self._topics: dict[str, _TopicInfo] = {}
        #: ``_topics``' items as of the last topic added (replaced whole under ``_topics_lock``; each topic's queues
        #: likewise in its ``queue_items``): the Sender's ready and expiry loops walk them without a copy per iteration
        #: (public, read-only to others: the kernel's ``sender_send_round`` reads it each round)
        self.topic_items: tuple[tuple[str, _TopicInfo], ...] = ()
        self._topics_lock = threading.Lock()
        #: the kernel's IncompleteBatches with the kernel (one compiled call per added and completed batch), else the
        #: reference
        self._incomplete = new_incomplete_batches()
        self._muted: set[TopicPartition] = set()
        #: node id -> (the Node, a set of it alone): what ready adds a ready leader as (Sender thread only)
        self._ready_node_sets: dict[int, tuple[Node, frozenset[Node]]] = {}
        self._drain_index: dict[int, int] = {}
        self._flushes_in_progress = 0
        #: one entry per append in progress (abort_incomplete_batches repeats while any runs): list.append and
        #: list.pop are atomic, so an append counts itself without a lock round
        self._appending: list[None] = []
        self._counts_lock = threading.Lock()
        #: set by :meth:`close` (read under each queue's lock by the appends, also by the kernel's send_append)
        self.closed = False
        #: the earliest expiry of a queued or in-flight batch as of the last expiry walk (:meth:`next_expiry_time_ms`;
        #: set by :meth:`expired_batches`, and by the kernel's ``sender_send_round``, which does what it does)
        self.next_batch_expiry_ms = 2**63 - 1
        self._compression_ratios = CompressionRatioEstimator()
        #: the condition every batch's futures share (BatchOutcome.condition): one per accumulator, not one per
        #: batch (a Condition costs a few us of Python-level setup, on send()'s new-batch path). A waiter wakes on
        #: any batch's completion and waits again until its own future is done (FutureRecordMetadata._wait);
        #: completion notifies only when some future of the batch is watched.
        self._batch_condition = threading.Condition()
        kernel = _native.kernel
        #: ``send_append(clock, headers, cluster, max_payload, ignore_keys, wakeup, topic, partition, count,
        #: timestamp, key, value, callback)``: KafkaProducer.send's common case compiled (the kernel's
        #: ``send_append`` over this accumulator's queues): the partition, :meth:`try_append_fast` and the Sender's
        #: wake-up in one call. None without the kernel.
        self.send_append: Callable[..., Any] | None = (
            None if kernel is None else functools.partial(kernel.send_append, self._topics, self)
        )
        #: ``send_record(clock, headers, metadata, max_payload, ignore_keys, wakeup, mono_clock, fatal_check,
        #: cluster_at)``
        #: -> ``(topic, partition, timestamp, key, value, callback) -> future | NotImplemented``: ``send_append``
        #: with send()'s checks and the metadata lookup before it (the kernel's ``SendRecord`` over this
        #: accumulator's queues). None without the kernel.
        self.send_record: Callable[..., Callable[..., Any]] | None = (
            None if kernel is None else functools.partial(kernel.SendRecord, self._topics, self)
        )
        if not self._compressed:
            opener = new_batch_opener(
                self, type(self).open_batch, self._topics, batch_size, compression_type, compression_level,
                self._batch_condition, buffer_pool, self._incomplete, time, self._appending,
            )
            if opener is not None:
                # the kernel's send path calls open_batch by name: the instance's compiled one (same arguments and
                # result, the method below its reference)
                self.open_batch = opener  # type: ignore[method-assign]  # an instance attribute shadowing the reference method on purpose
        appender = new_many_appender(self, type(self).try_append_many, self._topics)
        if appender is not None:
            # send_batch's bulk append compiled (same arguments and result, the method below its reference)
            self.try_append_many = appender  # type: ignore[method-assign]  # an instance attribute shadowing the reference method on purpose

    # --- append (application threads) ----------------------------------------------------------------

    def _topic_info(self, topic: str) -> _TopicInfo:
        info = self._topics.get(topic)
        if info is None:
            with self._topics_lock:
                info = self._topics.get(topic)
                if info is None:
                    info = _TopicInfo(BuiltInPartitioner(topic, self.batch_size, self._rng))
                    self._topics[topic] = info
                    self.topic_items = tuple(self._topics.items())
        return info

    def _queue(self, info: _TopicInfo, partition: int) -> _PartitionQueue:
        q = info.queues.get(partition)
        if q is None:
            with self._topics_lock:
                q = info.queues.get(partition)
                if q is None:
                    q = _PartitionQueue(TopicPartition(info.partitioner.topic, partition))
                    info.queues[partition] = q
                    info.queue_items = tuple(info.queues.items())
        return q

    def append(
        self,
        topic: str,
        partition: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header],
        callback: Callback | None,
        max_time_to_block_ms: int,
        cluster: ClusterView,
    ) -> RecordAppendResult:
        """Append a record to ``partition`` (or, if UNKNOWN_PARTITION, to the topic's sticky partition).

        Under the partition's deque lock: into its last batch if that has room, else into a new batch when the
        buffer pool has its memory at once (``BufferPool.try_allocate``). Only when the pool would block does it
        wait, up to ``max_time_to_block_ms``, outside the deque lock (as Java), then take the lock again.
        """
        info = self._topics.get(topic)
        if info is None:
            info = self._topic_info(topic)
        partitioner = info.partitioner
        sticky_part = partition == UNKNOWN_PARTITION
        appending = self._appending
        appending.append(None)
        allocated = 0
        size = 0
        try:
            while True:
                if self.closed:
                    raise KafkaError("Producer closed while send in progress")
                if sticky_part:
                    sticky = partitioner.sticky
                    effective = sticky.partition if sticky is not None else partitioner.peek_partition(cluster)
                else:
                    effective = partition
                q = info.queues.get(effective)
                if q is None:
                    q = self._queue(info, effective)
                with q.lock:
                    if sticky_part:
                        sticky = partitioner.sticky
                        if sticky is None or sticky.partition != effective:
                            continue  # another thread switched the sticky partition
                    batches = q.batches
                    if batches:
                        last = batches[-1]
                        # a closed batch takes no record (append's later round finds the batch its first one closed)
                        if not last.closed:
                            uncompressed = last.compression_ratio == 1.0
                            before = last.size_bytes if uncompressed else last.estimated_size_in_bytes()
                            future = last.try_append(timestamp, key, value, headers, callback, 0)
                            if future is not None:
                                full = last.size_bytes >= last.size_limit
                                appended = (
                                    last.size_bytes if uncompressed else last.estimated_size_in_bytes()
                                ) - before
                                if sticky_part:
                                    self._account_sticky(partitioner, effective, appended, cluster, full)
                                return _new_tuple(
                                    RecordAppendResult, (future, len(batches) > 1 or full, False, effective, appended)
                                )
                            last.closed = True  # close_for_appends(): full
                    if not allocated:
                        size = max(self.batch_size, estimate_size_upper_bound(key, value, headers))
                        if self.free.try_allocate(size):  # never blocks: memory free now is taken under the lock
                            allocated = size
                    if allocated:
                        if self.closed:
                            raise KafkaError("Producer closed while send in progress")
                        batch = self._add_batch(batches, q.tp, allocated)
                        allocated = 0
                        future = batch.try_append(timestamp, key, value, headers, callback, batch.created_ms)
                        if future is None:  # cannot happen: the first record always fits
                            raise IllegalStateError("a record did not fit in a new batch")
                        full = batch.size_bytes >= batch.size_limit
                        appended = batch.size_bytes if batch.compression_ratio == 1.0 else batch.estimated_size_in_bytes()
                        if sticky_part:
                            self._account_sticky(partitioner, effective, appended, cluster, full)
                        return _new_tuple(RecordAppendResult, (future, len(batches) > 1 or full, True, effective, appended))
                # no memory at once: wait for it up to max.block.ms outside the deque lock, then append again
                self.free.allocate(size, max_time_to_block_ms)
                allocated = size
        finally:
            if allocated:
                self.free.deallocate(allocated)
            appending.pop()

    def _add_batch(self, batches: deque[ProducerBatch], tp: TopicPartition, allocated: int) -> ProducerBatch:
        """A new empty batch of partition ``tp`` (its queue's) holding ``allocated`` bytes of the buffer pool, appended
        to its deque ``batches`` (whose lock the caller holds) and counted incomplete."""
        batch = ProducerBatch(  # positional: a call with keywords costs a dict
            tp, allocated, self.time.hi_res_clock_ms(),
            self.compression_type, self.compression_level, False,
            self._compression_ratios.estimation(tp[0]) if self._compressed else 1.0, self._batch_condition,
        )
        batch.allocated_bytes = allocated
        batches.append(batch)
        self._incomplete.add(batch)
        return batch

    def open_batch(
        self, batches: deque[ProducerBatch], topic: str, partition: int, key: bytes | None, value: bytes | None,
        headers: Sequence[Header],
    ) -> ProducerBatch | None:
        """:meth:`append`'s new batch for a caller that holds ``partition``'s deque lock and found no open batch
        with room in its deque ``batches`` (having closed the full last batch): a new empty batch sized for the
        record (``key``, ``value``, ``headers``), appended to ``batches`` and counted incomplete, when the buffer
        pool has its memory at once (:meth:`BufferPool.try_allocate`) and the accumulator is open; None, having
        changed nothing, when it would have to wait for the memory or the accumulator is closed (:meth:`append`
        then waits, or raises). The caller appends the record into the batch before it releases the lock. The
        kernel's send path calls it: a new batch without :meth:`append`'s second round of lookups. With the kernel,
        an uncompressed accumulator's instance attribute ``open_batch`` is the compiled one (``batch_opener``), this
        method its reference."""
        appending = self._appending
        appending.append(None)  # counted from before the closed check until the batch is incomplete (abort)
        try:
            if self.closed:
                return None
            size = max(self.batch_size, estimate_size_upper_bound(key, value, headers))
            if not self.free.try_allocate(size):
                return None
            return self._add_batch(batches, self._topics[topic].queues[partition].tp, size)
        finally:
            appending.pop()

    @staticmethod
    def _account_sticky(
        partitioner: BuiltInPartitioner, partition: int, appended: int, cluster: ClusterView, enable_switch: bool
    ) -> None:
        """``partitioner.update_partition_info(partition, appended, cluster, enable_switch)`` under ``partition``'s
        deque lock, the partitioner's lock taken only for a switch: the sticky partition's produced bytes change
        only under its deque lock (as in :meth:`try_append_fast`)."""
        sticky = partitioner.sticky
        if sticky is None or sticky.partition != partition:
            return
        produced = sticky.produced_bytes = sticky.produced_bytes + appended
        if produced >= partitioner.switch_bytes or (enable_switch and produced >= partitioner.sticky_batch_size):
            partitioner.update_partition_info(partition, 0, cluster, enable_switch)

    def try_append_fast(
        self,
        topic: str,
        partition: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header],
        callback: Callback | None,
        cluster: ClusterView,
    ) -> tuple[FutureRecordMetadata, bool] | None:
        """The common case of :meth:`append` in one deque-lock round: the partition (or the topic's current
        sticky partition) already has an open last batch with room. Returns ``(future, batch_is_full)``, or
        None, having changed nothing, when :meth:`append` must do it (no batch or no room, new topic or
        partition, no sticky partition yet, closing).

        No ``appends in progress`` count is needed here: the record goes into a batch that is already
        incomplete, under its deque lock, and an abort closes a batch under that same lock before failing it.
        """
        # _open_queue inlined: this runs once per send
        info = self._topics.get(topic)
        if info is None:
            return None
        partitioner = info.partitioner
        if partition == UNKNOWN_PARTITION:
            sticky = partitioner.sticky
            if sticky is None:
                return None
            effective = sticky.partition
        else:
            sticky = None
            effective = partition
        q = info.queues.get(effective)
        if q is None:
            return None
        with q.lock:
            batches = q.batches
            if not batches or self.closed:
                return None
            if sticky is not None and partitioner.sticky is not sticky:
                return None  # another thread switched the sticky partition
            last = batches[-1]
            uncompressed = last.compression_ratio == 1.0
            before = last.size_bytes if uncompressed else last.estimated_size_in_bytes()
            kernel = _native.kernel  # ProducerBatch.try_append without its Python frame
            future = (
                kernel.batch_try_append(last, timestamp, key, value, headers, callback, 0) if kernel is not None
                else NotImplemented
            )
            if future is NotImplemented:
                future = last.try_append_reference(timestamp, key, value, headers, callback, 0)
            if future is None:
                return None
            last_full = last.size_bytes >= last.size_limit
            if sticky is not None:
                # Accounted under this deque lock, as every append to the sticky partition is; only a switch
                # takes the partitioner's lock (BuiltInPartitioner.update_partition_info does the same).
                produced = sticky.produced_bytes = sticky.produced_bytes + (
                    last.size_bytes - before if uncompressed else last.estimated_size_in_bytes() - before
                )
                if produced >= partitioner.switch_bytes or (last_full and produced >= partitioner.sticky_batch_size):
                    partitioner.update_partition_info(effective, 0, cluster, last_full)
        return future, last_full or len(batches) > 1

    def _open_queue(self, topic: str, partition: int) -> tuple[BuiltInPartitioner, StickyInfo | None, int, _PartitionQueue] | None:
        """The topic's partitioner, its sticky state (None for a requested partition), the partition and its
        queue, when they all exist already; read without locks, checked again under the queue's lock."""
        info = self._topics.get(topic)
        if info is None:
            return None
        partitioner = info.partitioner
        if partition == UNKNOWN_PARTITION:
            sticky = partitioner.sticky
            if sticky is None:
                return None
            effective = sticky.partition
        else:
            sticky = None
            effective = partition
        q = info.queues.get(effective)
        if q is None:
            return None
        return partitioner, sticky, effective, q

    def try_append_many(
        self,
        topic: str,
        partition: int,
        keys: Sequence[Any] | None,
        values: Sequence[Any],
        start: int,
        stop: int,
        timestamps: Sequence[Any] | None,
        timestamp: int,
        headers: Sequence[Header],
        callback: Callback | None,
        cluster: ClusterView,
    ) -> tuple[int, BatchOutcome, int, bool, bool] | None:
        """:meth:`try_append_fast` for records ``start..stop`` of the lists (``KafkaProducer.send_batch``): as many
        of them as the open last batch of ``partition`` (or of the topic's sticky partition) takes, in one
        deque-lock round, stopping where the sticky partition switches. Returns (next index, the batch's outcome,
        the index of the first appended record in it, wake the Sender, closed), or None where :meth:`append` must
        take record ``start``. A record the batch has no room for closes it, as :meth:`append` would (its try
        fails on the same record under the same lock): ``closed`` is then True, and append opens the next batch
        for record ``next index`` without trying this one again. With the kernel, an accumulator's instance attribute
        ``try_append_many`` is the compiled one (``many_appender``), this method its reference."""
        found = self._open_queue(topic, partition)
        if found is None:
            return None
        partitioner, sticky, effective, q = found
        with q.lock:
            batches = q.batches
            if not batches or self.closed:
                return None
            if sticky is not None and partitioner.sticky is not sticky:
                return None  # another thread switched the sticky partition
            last = batches[-1]
            first = len(last.pending)  # record_count without the property's frame
            if sticky is None:
                nxt, _, due = last.append_many(keys, values, start, stop, timestamps, timestamp, headers, callback)
            else:
                nxt, sticky.produced_bytes, due = last.append_many(
                    keys, values, start, stop, timestamps, timestamp, headers, callback,
                    (sticky.produced_bytes, partitioner.switch_bytes, partitioner.sticky_batch_size),
                )
                while due:
                    partitioner.update_partition_info(effective, 0, cluster, last.size_bytes >= last.size_limit)
                    switched = partitioner.sticky
                    if nxt == stop or switched is None or switched.partition != effective:
                        break
                    # the switch picked this partition again (e.g. the only one available): the records go on into
                    # the same batch in this lock round, as the next call would put them
                    sticky = switched
                    nxt, sticky.produced_bytes, due = last.append_many(
                        keys, values, nxt, stop, timestamps, timestamp, headers, callback,
                        (sticky.produced_bytes, partitioner.switch_bytes, partitioner.sticky_batch_size),
                    )
            closed = False
            if nxt < stop and not due:
                # stopped at record nxt: when the batch has no room for it, closed now, as append's try of the same
                # record under this lock would (Java closes a batch at its first record that does not fit)
                # (most batches are told without the record's size: a lower bound of it, one byte per field and the
                # key and value, one more for each of the offset delta, key length, value length and size varints
                # over 63: their zigzag takes two bytes)
                key, value = None if keys is None else keys[nxt], values[nxt]
                kn, vn = 0 if key is None else len(key), 0 if value is None else len(value)
                body = 6 + kn + vn + (kn > 63) + (vn > 63) + (len(last.pending) > 63)
                if last.size_bytes + body + 1 + (body > 63) > last.size_limit or not last.has_room_for(
                    timestamp if timestamps is None or timestamps[nxt] is None else timestamps[nxt], key, value, headers
                ):
                    last.closed = True  # close_for_appends(), as append() closes a full batch
                    closed = True
            if nxt == start:
                return None
            return nxt, last.outcome, first, last.size_bytes >= last.size_limit or len(batches) > 1, closed

    # --- readiness (Sender thread) -------------------------------------------------------------------

    def _retry_wait_ms(self, batch: ProducerBatch) -> int:
        return self.retry_backoff.backoff(max(batch.attempts - 1, 0))

    def _should_backoff(self, batch: ProducerBatch, waited_ms: int, leader_changed: bool) -> tuple[bool, int]:
        if batch.attempts <= 0:
            return False, 0
        wait = self._retry_wait_ms(batch)
        return (waited_ms < wait and not leader_changed), wait

    def _sendable_regardless(self) -> bool:
        """Whether a first batch neither full nor past its linger is sendable all the same: memory exhausted (an
        allocation waits), the accumulator closing or flushing, or a transaction completing (``ready`` asks once per
        call, and only for such a batch)."""
        tm = self.transaction_manager
        return self.free.queued() > 0 or self.closed or self.flush_in_progress() or (tm is not None and tm.is_completing())

    def round_state(self) -> tuple[
        dict[str, _TopicInfo], set[TopicPartition], dict[int, tuple[Node, frozenset[Node]]], dict[int, int],
        Callable[[], bool], Callable[[ProducerBatch, int, bool], tuple[bool, int]],
    ]:
        """What :meth:`ready` and :meth:`drain` hand the kernel, all of it kept for the accumulator's life: the topics,
        the muted partitions, the per-node one-node sets, the drain index, and the two questions ``ready`` asks (the
        Sender's compiled round, the kernel's ``sender_send_round``, is given these once)."""
        return (
            self._topics, self._muted, self._ready_node_sets, self._drain_index, self._sendable_regardless,
            self._should_backoff,
        )

    def ready(self, metadata: AccumulatorMetadata, now_ms: int) -> ReadyCheckResult:
        """The nodes with a sendable partition, the least time until another may be, and the topics whose leader is
        unknown (:meth:`ready_reference`; with the kernel and a :class:`MetadataSnapshot`, its compiled
        ``accumulator_ready``: the per-partition round without a Python frame)."""
        kernel = _native.kernel
        if kernel is None or type(metadata) is not MetadataSnapshot:
            return self.ready_reference(metadata, now_ms)
        return _new_tuple(ReadyCheckResult, kernel.accumulator_ready(
            self.topic_items, metadata, self._muted, self._ready_node_sets, self.linger_ms, self.adaptive_partitioning,
            now_ms, self._sendable_regardless, self._should_backoff,
        ))

    def ready_reference(self, metadata: AccumulatorMetadata, now_ms: int) -> ReadyCheckResult:
        """:meth:`ready` in Python (the kernel's ``accumulator_ready`` is this)."""
        ready_nodes: set[Node] = set()
        ready_ids: set[int] = set()  # the ready nodes' ids: an int hash per partition, not Node's Python __hash__
        node_sets = self._ready_node_sets
        muted = self._muted
        next_delay = 2**63 - 1
        unknown: set[str] = set()
        # buffer exhausted, closed, flushing or a transaction completing: asked once, and only for a batch that is
        # neither full nor past its linger (a full batch is sendable without them: no call)
        others: bool | None = None
        for topic, info in self.topic_items:
            queue_sizes: list[int] = []
            partition_ids: list[int] = []
            largest_queue = 0  # max(queue_sizes), kept as they are listed
            smallest_queue = 2**63 - 1  # min(queue_sizes), the same
            for partition, q in info.queue_items:
                # a plain tuple: equal to (and hashed as) the TopicPartition that _muted holds, built without a call
                tp = (topic, partition)
                leader, epoch = metadata.leader_and_epoch(tp)
                with q.lock:
                    n = len(q.batches)
                    if leader is not None and self.adaptive_partitioning:
                        queue_sizes.append(n)
                        partition_ids.append(partition)
                        if n > largest_queue:
                            largest_queue = n
                        if n < smallest_queue:
                            smallest_queue = n
                    if n == 0:
                        continue
                    batch = q.batches[0]
                    # since the batch's creation or last attempt, the later (a comparison: no max() call per partition)
                    created, attempted = batch.created_ms, batch.last_attempt_ms
                    waited = now_ms - (created if created > attempted else attempted)
                    # maybe_update_leader_epoch without its call for a batch never attempted (it returns False then)
                    if batch.attempts:
                        leader_changed = batch.maybe_update_leader_epoch(epoch)
                    else:
                        leader_changed = False
                        current = batch.current_leader_epoch
                        if epoch is not None and (current is None or current < epoch):
                            batch.attempts_when_leader_last_changed = 0  # (its attempts)
                            batch.current_leader_epoch = epoch
                    # a batch never attempted does not back off: no call for the common case
                    backing_off, retry_wait = (
                        self._should_backoff(batch, waited, leader_changed) if batch.attempts > 0 else (False, 0)
                    )
                    full = n > 1 or batch.closed or batch.size_bytes >= batch.size_limit  # batch.is_full(), inlined
                if leader is None:
                    unknown.add(topic)
                    continue
                if leader.id in ready_ids or (muted and tp in muted):  # (no tuple hash while none is muted)
                    continue
                time_to_wait = retry_wait if backing_off else self.linger_ms
                expired = waited >= time_to_wait
                sendable = full or expired
                if not sendable:
                    if others is None:
                        others = self._sendable_regardless()
                    sendable = others
                if sendable and not backing_off:
                    # added as a one-node set kept per node (a set's merge reuses its stored hash): no call of the
                    # Node dataclass's Python __hash__ per Sender iteration
                    one = node_sets.get(leader.id)
                    if one is None or one[0] is not leader:
                        one = node_sets[leader.id] = (leader, frozenset((leader,)))
                    ready_nodes |= one[1]
                    ready_ids.add(leader.id)
                else:
                    next_delay = min(next_delay, max(time_to_wait - waited, 0))
            if self.adaptive_partitioning and queue_sizes:
                if smallest_queue == largest_queue:
                    # every queue the same length (one partition, or all drained): the statistics are dropped
                    # whichever partitions are available, so they are not asked for (nor dropped again while there
                    # are none: no call per Sender iteration)
                    if info.partitioner.load_stats is not None:
                        info.partitioner.update_partition_load_stats((), (), 0)
                    continue
                available = metadata.available_partitions_for_topic(topic)
                if len(queue_sizes) == len(available):
                    info.partitioner.update_partition_load_stats(queue_sizes, partition_ids, largest_queue)
                else:
                    info.partitioner.update_partition_load_stats((), (), 0)
        return _new_tuple(ReadyCheckResult, (ready_nodes, next_delay, unknown))

    def request_full(self, metadata: AccumulatorMetadata, topic: str, partition: int) -> bool:
        """Whether the request the Sender would build now for ``partition``'s leader is as large as it can be: every
        partition of ``topic`` with a queue, led by that node, has a full batch ready (``ready``'s rule: more than one
        batch, or a full first one). The producer's send path hands the GIL to the I/O thread at a batch boundary
        when this holds (or the broker is idle), so that a hand-off never makes requests smaller. Read under the
        GIL only, without the queues' locks (a racy read only moves a hand-off by a batch)."""
        info = self._topics.get(topic)
        if info is None:
            return False
        leader: Node | None = None
        for p, q in list(info.queues.items()):
            batches = q.batches
            n = len(batches)
            if n > 1 or (n == 1 and batches[0].is_full()):
                continue
            if p != partition:  # not full: it counts if the same node leads it
                if leader is None and (leader := metadata.leader_and_epoch((topic, partition))[0]) is None:
                    return False
                other = metadata.leader_and_epoch((topic, p))[0]
                if other is None or other.id != leader.id:
                    continue
            return False
        return True

    def has_undrained(self) -> bool:
        for info in list(self._topics.values()):
            for q in list(info.queues.values()):
                with q.lock:
                    if q.batches:
                        return True
        return False

    # --- drain (Sender thread) -----------------------------------------------------------------------

    def drain(
        self, metadata: AccumulatorMetadata, nodes: Iterable[Node], max_size: int, now_ms: int
    ) -> dict[int, list[ProducerBatch]]:
        """Per node, the batches of its partitions to send now (:meth:`drain_reference`; with the kernel and a
        :class:`MetadataSnapshot`, its compiled ``accumulator_drain``)."""
        kernel = _native.kernel
        if kernel is None or type(metadata) is not MetadataSnapshot:
            return self.drain_reference(metadata, nodes, max_size, now_ms)
        tm = self.transaction_manager
        drained: dict[int, list[ProducerBatch]] = kernel.accumulator_drain(
            self._topics, metadata, nodes, max_size, now_ms, self._drain_index, self._muted,
            None if tm is None else tm.prepare_for_drain, self._should_backoff,
        )
        return drained

    def drain_reference(
        self, metadata: AccumulatorMetadata, nodes: Iterable[Node], max_size: int, now_ms: int
    ) -> dict[int, list[ProducerBatch]]:
        """:meth:`drain` in Python (the kernel's ``accumulator_drain`` is this)."""
        out: dict[int, list[ProducerBatch]] = {}
        tm = self.transaction_manager
        muted = self._muted
        for node in nodes:  # the drain of one node inlined: a call less per node and Sender iteration
            size = 0
            ready: list[ProducerBatch] = []
            out[node.id] = ready
            parts = metadata.partitions_for_node(node.id)
            if not parts:
                continue
            n = len(parts)
            start = self._drain_index.get(node.id, 0) % n
            i = start
            while True:
                tp = parts[i]
                i = (i + 1) % n
                self._drain_index[node.id] = i
                info = self._topics.get(tp.topic)
                q = info.queues.get(tp.partition) if info is not None else None
                if q is not None and not (muted and tp in muted):  # (no tuple hash while none is muted)
                    with q.lock:
                        first = q.batches[0] if q.batches else None
                        if first is not None:
                            _, epoch = metadata.leader_and_epoch(tp)
                            # a batch never attempted whose leader epoch is the one it saw (the common case): no
                            # call, maybe_update_leader_epoch would change nothing and return False
                            current = first.current_leader_epoch
                            if first.attempts or (epoch is not None and (current is None or current < epoch)):
                                leader_changed = first.maybe_update_leader_epoch(epoch)
                            else:
                                leader_changed = False
                            created, attempted = first.created_ms, first.last_attempt_ms
                            waited = now_ms - (created if created > attempted else attempted)
                            backing_off = first.attempts > 0 and self._should_backoff(first, waited, leader_changed)[0]
                            if not backing_off:
                                # unchanged until it is taken (lock held); an uncompressed batch's is its size_bytes,
                                # its encoded size exactly (estimated_size_in_bytes without the call)
                                estimated = first.estimated_size_in_bytes() if first.is_compressed else first.size_bytes
                                if size + estimated > max_size and ready:
                                    break  # the request is full; at least one batch was taken
                                # the idempotence checks, and a new batch's sequence assigned, in one call
                                if tm is not None and not tm.prepare_for_drain(first, tp):
                                    break  # as Java: a partition that must wait ends this node's drain
                                batch = q.batches.popleft()
                                batch.closed = True  # close_for_appends(), inlined
                                size += estimated
                                ready.append(batch)
                                if batch.drained_ms < now_ms:  # drained(now_ms), inlined
                                    batch.drained_ms = now_ms
                if i == start:
                    break
        return out

    # --- retries, splits, expiry ---------------------------------------------------------------------

    def reenqueue(self, batch: ProducerBatch, now_ms: int) -> None:
        """Put a batch back at the front of its partition for a retry (in sequence order when it has one)."""
        batch.reenqueued(now_ms)
        q = self._queue(self._topic_info(batch.topic_partition.topic), batch.topic_partition.partition)
        with q.lock:
            if self.transaction_manager is not None and batch.has_sequence():
                self._insert_in_sequence_order(q.batches, batch)
            else:
                q.batches.appendleft(batch)

    @staticmethod
    def _insert_in_sequence_order(dq: deque[ProducerBatch], batch: ProducerBatch) -> None:
        if not batch.has_sequence():
            raise IllegalStateError(f"reenqueuing a batch without a sequence in sequence order: {batch}")
        ahead: list[ProducerBatch] = []
        while dq and dq[0].has_sequence() and dq[0].base_sequence < batch.base_sequence:
            ahead.append(dq.popleft())
        dq.appendleft(batch)
        for b in reversed(ahead):
            dq.appendleft(b)

    def split_and_reenqueue(self, big: ProducerBatch, now_ms: int) -> int:
        """Split a batch the broker found too large into pieces of at most half its size (and at most
        ``batch.size``) and put them back in front; returns the number of new batches. Sequences are kept
        within the big batch's range."""
        base_seq = big.base_sequence
        pid, epoch, txn = big.producer_id, big.producer_epoch, big.is_transactional
        # Java splits into batch.size pieces, which cannot help when the broker's limit is below batch.size.
        # Halving the uncompressed records always makes progress. As Java, a batch found too large resets the
        # topic's compression estimate to at least 1.0.
        split_size = max(big.uncompressed_size_in_bytes() // 2, 1)
        self._compression_ratios.set_estimation(big.topic_partition.topic, max(1.0, big.actual_compression_ratio))
        pieces = big.split_into(split_size, now_ms)
        if base_seq != -1:
            seq = base_seq
            for b in pieces:
                b.set_producer_state(pid, epoch, seq, txn)
                seq = increment_sequence(seq, b.record_count)
        q = self._queue(self._topic_info(big.topic_partition.topic), big.topic_partition.partition)
        tm = self.transaction_manager
        self._incomplete.add_pieces(big, pieces)
        for b in reversed(pieces):
            b.attempts = big.attempts
            b.last_attempt_ms = big.last_attempt_ms
            with q.lock:
                if tm is not None and b.has_sequence():
                    tm.add_in_flight_batch(b)
                    self._insert_in_sequence_order(q.batches, b)
                else:
                    q.batches.appendleft(b)
        return len(pieces)

    def expired_batches(self, now_ms: int, next_expiry_ms: int | None = None) -> list[ProducerBatch]:
        """Remove and return queued batches past ``delivery.timeout.ms`` (oldest first per partition). The next
        batch expiry time (:meth:`next_expiry_time_ms`) becomes the earliest of ``next_expiry_ms`` (when given: it
        is reset to that first; Java's Sender resets it and updates it per in-flight batch) and the queued
        batches' left."""
        if next_expiry_ms is not None:
            self.next_batch_expiry_ms = next_expiry_ms
        kernel = _native.kernel
        if kernel is None:
            return self.expired_batches_reference(now_ms)
        expired: list[ProducerBatch]
        expired, self.next_batch_expiry_ms = kernel.accumulator_expired(
            self.topic_items, self.delivery_timeout_ms, now_ms, self.next_batch_expiry_ms
        )
        return expired

    def expired_batches_reference(self, now_ms: int) -> list[ProducerBatch]:
        """:meth:`expired_batches`' walk of the queues in Python (the kernel's ``accumulator_expired`` is this)."""
        expired: list[ProducerBatch] = []
        timeout = self.delivery_timeout_ms
        for _, info in self.topic_items:
            for _, q in info.queue_items:
                with q.lock:
                    while q.batches:
                        b = q.batches[0]
                        # has_reached_delivery_timeout, and the next expiry's update, inline: per partition on
                        # every Sender iteration
                        if timeout <= now_ms - b.created_ms:
                            q.batches.popleft()
                            b.close_for_appends()
                            expired.append(b)
                        else:
                            if b.created_ms + timeout < self.next_batch_expiry_ms:
                                self.next_batch_expiry_ms = b.created_ms + timeout
                            break
        return expired

    def update_compression_ratio(self, batch: ProducerBatch) -> None:
        """After a batch was encoded: move the topic's compression estimate towards the observed ratio."""
        self._compression_ratios.update_estimation(batch)

    def compression_ratio_estimate(self, topic: str) -> float:
        return self._compression_ratios.estimation(topic)

    def next_expiry_time_ms(self) -> int:
        return self.next_batch_expiry_ms

    # --- completion ----------------------------------------------------------------------------------

    def deallocate(self, batch: ProducerBatch) -> None:
        """Forget a completed batch and return its memory. (The kernel's produce completion does this itself, without
        this method's and the pool's frames, when :meth:`release_parts` lent it the set and the account.)"""
        self._incomplete.remove(batch)
        if batch.allocated_bytes:
            self.free.deallocate(batch.allocated_bytes)
            batch.allocated_bytes = 0

    def release_parts(self) -> tuple[IncompleteBatchesApi, MemoryAccountApi] | None:
        """What :meth:`deallocate` changes, the incomplete batches and the pool's account, while it and the pool's
        ``deallocate`` are the reference methods (else None: a subclass's override or a replacement on the instance or
        the class is called). Read once, when the Sender is built: the kernel's completion (``SenderCompletion``) then
        releases a completed batch itself when they are the kernel's types."""
        if (
            getattr(self.deallocate, "__func__", None) is not _REFERENCE_DEALLOCATE
            or getattr(self.free.deallocate, "__func__", None) is not _POOL_DEALLOCATE
        ):
            return None
        return self._incomplete, self.free.account

    def has_incomplete(self) -> bool:
        return not self._incomplete.is_empty()

    def incomplete_batches(self) -> list[ProducerBatch]:
        return self._incomplete.copy_all()

    # --- flush and close -----------------------------------------------------------------------------

    def begin_flush(self) -> None:
        with self._counts_lock:
            self._flushes_in_progress += 1

    def end_flush(self) -> None:
        with self._counts_lock:
            self._flushes_in_progress -= 1

    def flush_in_progress(self) -> bool:
        return self._flushes_in_progress > 0

    def flush_mark(self) -> int:
        """Where a flush begins: :meth:`await_flush_completion` of it waits for the batches incomplete now. A number,
        not the batches, so that a flush keeps no completed batch (nor its records) alive."""
        return self._incomplete.mark()

    def await_flush_completion(self, timeout_s: float | None, mark: int | None = None) -> bool:
        """Wait (real time) until the batches incomplete at ``mark`` (:meth:`flush_mark`; default: now) are done.
        True if they all are."""
        return await_completion(self._incomplete, self.flush_mark() if mark is None else mark, timeout_s, self.time)

    def appends_in_progress(self) -> bool:
        return bool(self._appending)

    def close(self) -> None:
        """No more appends; queued batches become sendable at once."""
        self.closed = True
        self.free.close()

    def abort_incomplete_batches(self, exception: BaseException, on_done: Callable[[ProducerBatch], None] | None = None) -> None:
        """Fail every batch not yet completed (force close, fatal error). Repeats while appends are running."""
        while True:
            self._abort_batches(exception, on_done)
            if not self.appends_in_progress():
                break
        self._abort_batches(exception, on_done)

    def _abort_batches(self, exception: BaseException, on_done: Callable[[ProducerBatch], None] | None) -> None:
        for batch in self.incomplete_batches():
            q = self._queue(self._topic_info(batch.topic_partition.topic), batch.topic_partition.partition)
            with q.lock:
                try:
                    q.batches.remove(batch)
                except ValueError:
                    pass
                batch.close_for_appends()
            batch.abort(exception)
            self.deallocate(batch)
            if on_done is not None:
                on_done(batch)

    def abort_undrained_batches(
        self, exception: BaseException, on_abort: Callable[[ProducerBatch], None] | None = None
    ) -> None:
        """Fail the batches still queued (not in flight); ``on_abort`` sees each before it is failed."""
        for info in list(self._topics.values()):
            for q in list(info.queues.values()):
                with q.lock:
                    batches = list(q.batches)
                    q.batches.clear()
                for b in batches:
                    b.close_for_appends()
                    if on_abort is not None:
                        on_abort(b)
                    b.abort(exception)
                    self.deallocate(b)

    # --- muting (max.in.flight = 1) ------------------------------------------------------------------

    def mute_partition(self, tp: TopicPartition) -> None:
        self._muted.add(tp)

    def unmute_partition(self, tp: TopicPartition) -> None:
        self._muted.discard(tp)

    def is_muted(self, tp: TopicPartition) -> bool:
        return tp in self._muted

    def queue_sizes(self) -> dict[TopicPartition, int]:
        """Batches queued per partition (metrics, tests)."""
        out: dict[TopicPartition, int] = {}
        for topic, info in list(self._topics.items()):
            for partition, q in list(info.queues.items()):
                out[TopicPartition(topic, partition)] = len(q.batches)
        return out

    def batches_for(self, tp: TopicPartition) -> list[ProducerBatch]:
        info = self._topics.get(tp.topic)
        q = info.queues.get(tp.partition) if info is not None else None
        if q is None:
            return []
        with q.lock:
            return list(q.batches)


#: the reference methods :meth:`RecordAccumulator.release_parts` compares with (as defined: one replaced on the class
#: later is not these)
_REFERENCE_DEALLOCATE = RecordAccumulator.deallocate
_POOL_DEALLOCATE = BufferPool.deallocate

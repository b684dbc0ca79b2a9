"""Which implementation of the record fast path is active: the compiled ``_kernel`` or the pure-Python reference.

The kernel is an optional extension (see docs/ARCHITECTURE.md "Record fast path"). It is loaded once at import
unless ``PYKAFKA_NO_NATIVE=1`` is set; when it cannot be loaded the package runs on the pure-Python code and says
so once in a debug log line. Call sites read :data:`kernel` at call time, so :func:`use_native` switches every
one of them in-process (tests and benchmarks run both implementations that way).
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

if TYPE_CHECKING:
    from pykafka_client.protocol.records.record import Record
    from pykafka_client.protocol.types import Chunk

log = logging.getLogger(__name__)

Buffer = bytes | bytearray | memoryview
_R = TypeVar("_R")
_M = TypeVar("_M")


class PendingRecordsApi(Protocol):
    """What the producer reads of a kernel ``PendingRecords`` beyond its sequence of record tuples
    (``producer.batch_append.PendingList``)."""

    def records_bytes(self) -> bytes | None:
        """The records section as encoded at append (base offset 0); None once it holds tuples (list mode)."""

    def is_encoded(self) -> bool:
        """The records are kept as bytes (not tuples)."""

    def callbacks(self) -> list[Any]:
        """Each record's delivery callback, or None."""

    def encode_compressed(
        self, payload: bytes, codec: int, producer_id: int, producer_epoch: int, base_sequence: int,
        is_transactional: bool, crc32c: Callable[[Buffer], int], /,
    ) -> bytes | None:
        """The whole batch around ``payload`` (``records_bytes()`` compressed with ``codec``), or None: build it in
        Python."""


class GilHandoffApi(Protocol):
    """A kernel ``GilHandoff`` (Linux only: read with ``getattr(kernel, "GilHandoff", None)``): the wait of a
    selector's polling thread, which publishes when that thread wants the GIL back, and the rule the producer's
    send path applies at a batch boundary to hand the GIL over to it (``Selector.enable_gil_handoff``)."""

    #: the polling thread's state: 0 running, 1 waiting in select, 2 select returned and it waits for the GIL
    state: int
    #: the broker had nothing in flight when the last blocking select returned
    idle: bool
    #: blocking waits entered (a hand-off lasts until the next one, or ``max_wait_us``)
    generation: int
    #: hand-offs made at send()'s batch boundaries
    yields: int
    max_wait_us: int

    def select(
        self, epoll_fd: int, fd_to_key: dict[int, Any], timeout_ms: int, wakeup_fd: int, in_flight: int, /
    ) -> list[tuple[Any, int]]:
        """Reference: ``selectors.EpollSelector.select`` (timeout in ms; 0 keeps the GIL)."""

    def decide(self, request_full: Callable[[str, int], bool], topic: str, partition: int, /) -> bool:
        """The hand-off rule of a batch boundary (no hand-off made)."""

    def offer(self, request_full: Callable[[str, int], bool], topic: str, partition: int, /) -> bool:
        """:meth:`decide`, and the hand-off when it holds (send_batch's new batch): whether it handed over."""

    def wake(self, sock: Any, /) -> None:
        """Reference: ``Selector.wakeup``'s write of one byte to its wake-up socket, without releasing the GIL."""

    def _set_state(self, state: int, idle: bool, /) -> None:
        """Tests: publish a state as the wait does."""


class Kernel(Protocol):
    """The compiled module ``_kernel.c`` (its parts in ``records/kernel/``). Each function returns exactly what its pure-Python reference returns,
    or None (False for ``validate_records``) when the reference must decide, e.g. on bad input."""

    def setup(
        self, record_type: type, create_time: object, log_append_time: object, read_varint: Callable[..., object], /
    ) -> None: ...

    def decode_records(
        self, data: Buffer, count: int, base_offset: int, base_timestamp: int, log_append_time: int | None, /
    ) -> list[Record] | None:
        """Reference: ``default_record_batch.decode_records_reference``."""

    def decode_consumer_records(
        self,
        data: Buffer,
        count: int,
        base_offset: int,
        base_timestamp: int,
        log_append_time: int | None,
        position: int,
        record_type: type[_R],
        topic: str,
        partition: int,
        timestamp_type: object,
        leader_epoch: int | None,
        /,
    ) -> list[_R] | None:
        """Reference: ``consumer.completed_fetch.consumer_records_reference`` (on the decoded records); builds
        instances of ``record_type`` (the consumer's ``ConsumerRecord``) through its ``__slots__`` without
        calling ``__init__``."""

    def decode_columns(
        self, data: Buffer, count: int, base_offset: int, base_timestamp: int, log_append_time: int | None, /
    ) -> tuple[int, bytes, bytes, bytes, bytes, bytes, bytes, bytes, bytes, bytes, bytes, bytes, bytes, bytes, bytes] | None:
        """Reference: ``columns.decode_columns_reference`` (the fields of ``RecordColumns`` but the last)."""

    def validate_records(
        self,
        data: Buffer,
        count: int,
        base_offset: int,
        base_timestamp: int,
        check_timestamps: bool,
        now: int,
        before_max_ms: int,
        after_max_ms: int,
        require_keys: bool,
        /,
    ) -> bool:
        """Reference: ``batch_ops.check_records``."""

    def check_batch(
        self,
        buf: Buffer,
        pos: int,
        from_client: bool,
        deep: bool,
        now: int,
        before_max_ms: int,
        after_max_ms: int,
        require_keys: bool,
        crc32c: Callable[[Buffer], int],
        /,
    ) -> int | None:
        """Reference: ``batch_ops.check_batch`` (returns the batch's size where the reference returns the batch)."""

    def client_batch_header(
        self, buf: Buffer, now: int, before_max_ms: int, after_max_ms: int, require_keys: bool, max_message_bytes: int,
        crc32c: Callable[[Buffer], int], /,
    ) -> tuple[int, int, int, int, int, int, int, int] | None:
        """Reference: ``mini_broker.log.log_validator.analyze_and_validate`` from a client on one batch (its
        (size, producer id, epoch, base sequence, last offset delta, max timestamp, attributes, records count))."""

    def encode_batch(
        self, records: Any, producer_id: int, producer_epoch: int, base_sequence: int, is_transactional: bool,
        crc32c: Callable[[Buffer], int], /,
    ) -> bytes | None:
        """Reference: ``producer.batch_encoder.encode_batch_reference`` (uncompressed batches only); ``records``: a
        list of record tuples or a ``PendingRecords``."""

    PendingRecords: Any
    """The type of ``ProducerBatch.pending`` with the kernel (``producer.batch_append.PendingList``): its records
    encoded at append, rebuilt as tuples when read."""

    def append_records(
        self,
        buf: bytearray,
        records: list[object],
        count: int,
        base_offset: int,
        base_timestamp: int,
        max_timestamp: int,
        offset_of_max: int,
        /,
    ) -> tuple[int, int, int, int] | None:
        """Reference: ``MemoryRecordsBuilder.append_all``; returns (count, base ts, max ts, offset of max)."""

    def read_varint(self, buf: Buffer, pos: int, max_bytes: int = 10, /) -> tuple[int, int]:
        """Reference: ``varint.read_varint`` (which it calls for every error)."""

    def producer_setup(self, future_type: type, /) -> None: ...

    def pending_columns(
        self, pending: Any, with_timestamps: bool, /
    ) -> tuple[list[int] | int | None, list[int] | int, list[int] | int] | None:
        """Reference: ``producer_batch.pending_columns_reference`` (a column of one value is that int)."""

    def batch_try_append(
        self, batch: object, timestamp: int, key: object, value: object, headers: object, callback: object, now_ms: int, /
    ) -> Any:
        """Reference: ``ProducerBatch.try_append`` (a future, None, or NotImplemented: run the reference)."""

    def send_append(
        self, topics: dict[str, Any], accumulator: object, clock: Any, headers: object, cluster: object,
        max_payload: int, ignore_keys: bool, wakeup: Any, topic: str, partition: int | None, count: int,
        timestamp: int | None, key: object, value: object, callback: object, /,
    ) -> Any:
        """Reference: ``KafkaProducer.send``'s partition choice and ``RecordAccumulator.try_append_fast`` (a
        future; None or NotImplemented, nothing changed: run the reference)."""

    def sticky_setup(self, partitioner_type: type, info_type: type, /) -> None:
        """The partitioner type ``sticky_switch`` stands in for (``BuiltInPartitioner``) and its sticky state's."""

    def sticky_switch(self, partitioner: object, partition: int, appended_bytes: int, cluster: object,
                      enable_switch: bool, /) -> Any:
        """Reference: ``BuiltInPartitioner.update_partition_info`` (None when done; NotImplemented, nothing changed,
        when it declines: the method then)."""

    def SendRecord(
        self, topics: dict[str, Any], accumulator: object, clock: Any, headers: object, metadata: object,
        max_payload: int, ignore_keys: bool, wakeup: Any, mono_clock: Any, fatal_check: Any, cluster_at: Any, /,
    ) -> Callable[[object, object, object, object, object, object], Any]:
        """Reference: ``KafkaProducer.send``'s checks, ``ProducerMetadata.add_and_count``, then ``send_append``;
        its call ``(topic, partition, timestamp, key, value, callback)`` gives a future, or NotImplemented
        (nothing appended: run the reference)."""

    def encode_produce_response(self, body: object, version: int, correlation_id: int, leader_class: type, /
                                ) -> bytes | None:
        """Reference: ``mini_broker.server.apis.produce_wire``'s Python encoder, for the responses whose partitions
        have no record errors, no message and the default current leader (None: run the reference)."""

    def slots_constructor(self, cls: type, names: tuple[str, ...], /) -> Callable[..., Any]:
        """Reference: ``cls(*values)`` of a slotted dataclass whose fields are ``names`` (see
        ``network.transport.positional_new``): a callable building ``cls`` from one positional value per name,
        without its __init__."""

    def tuple_constructor(self, cls: type, n: int, /) -> Callable[..., Any]:
        """Reference: ``tuple.__new__(cls, values)`` of a tuple subclass (see ``mini_broker.utils.positional_tuple``):
        a callable building ``cls`` from exactly ``n`` positional values, without its __new__."""

    def encode_produce_request(
        self, body: object, version: int, correlation_id: int, client_id: str | None, /
    ) -> list[Chunk] | None:
        """Reference: ``protocol.headers.encode_request`` of a ``ProduceRequest`` (None: run the reference)."""

    def decode_produce_response(self, payload: Buffer, version: int, correlation_id: int, cls: type[_M], /) -> _M | None:
        """Reference: ``protocol.headers.decode_response`` of a Produce response (None: run the reference)."""
    def produce_results_frame(self, order: list[Any], results: dict[Any, Any], version: int, correlation_id: int,
                              hint_codes: frozenset[int], /) -> bytes | None:
        """Reference: ``mini_broker.server.apis.produce``'s body built from the partitions' results, then its
        ``encode_produce_response`` (None: run the reference; see the kernel's doc for what it declines)."""

    def any_transactional(self, entries: list[Any], /) -> bool | None:
        """Reference: ``mini_broker.server.apis.produce._any_transactional`` (None: run the reference)."""

    def read_produce_request(self, payload: memoryview, version: int, cls: type[_M], /) -> tuple[str | None, _M] | None:
        """Reference: ``mini_broker.server.apis.produce_wire._read`` of a Produce request frame (None: run the
        reference; also for a payload that is not a C-contiguous memoryview of bytes)."""

    def frame_buffer(self, size: int, /) -> bytearray:
        """Reference: ``bytearray(size)`` with its bytes not zeroed (a buffer filled whole before it is read)."""

    def observe_request_times(
        self, lock: Any, requests: Any, histograms: tuple[Any, ...], now: int, start: int, dequeued: int,
        local_end: int, remote_end: int, completed: int, response_dequeued: int, sent: int, /,
    ) -> bool:
        """Reference: ``mini_broker.metrics.observe_request_times_reference`` (False, nothing changed: run it)."""

    def sender_setup(self, request_type: type, outcome_type: type, finished: str, /) -> None: ...
    def drained_request(
        self, batches: list[Any], crc32c: Callable[[Buffer], int], transactional_id: str | None, acks: int,
        timeout_ms: int, /,
    ) -> tuple[Any, dict[Any, Any], int, int] | None:
        """Reference: ``producer.sender.Sender._drained_request`` for uncompressed batches (None: run the reference)."""
    def produce_results_setup(self, response_type: type, /) -> None: ...
    # slot_access.c.h
    def read_slot(self, obj: object, name: str, /) -> tuple[Any, bool]:
        """Reference: ``getattr(obj, name)``; the bool says whether it was read at the slot's offset."""
    # network.c.h
    def idempotence_settled(self, manager: Any, parts: Any, /) -> bool:
        """Reference: ``producer.idempotence_manager.IdempotenceManager.is_settled`` (``parts``: its SETTLED_PARTS)."""

    def read_frames(
        self, reader: Any, recv_into: Callable[[memoryview], int], max_receives: int, max_bytes: int,
        new_receive: Callable[..., Any], check_receive_size: Callable[[int, int], None], empty: memoryview, /,
    ) -> tuple[list[Any], int, bool]:
        """Reference: ``network.transport.network_receive.BufferedFrameReader.read_frames`` with ``recv_into``."""
    # producer_incomplete.c.h
    #: ``IncompleteBatches(condition)``: a type owning the producer's incomplete batches (reference:
    #: ``producer.incomplete_batches.IncompleteBatches``; its instances are ``IncompleteBatchesApi``)
    IncompleteBatches: Callable[[Any], Any]
    #: ``MemoryAccount(total, lock, waiters)``: a type owning a buffer pool's free bytes (reference:
    #: ``producer.buffer_pool.MemoryAccount``; its instances are ``MemoryAccountApi``)
    MemoryAccount: Callable[[int, Any, Any], Any]
    # client_in_flight.c.h
    #: ``InFlightRequests(max_in_flight_requests_per_connection, illegal_state_error)``: a type owning a client's
    #: in-flight requests (reference: ``network.in_flight_requests.InFlightRequests``; its instances are
    #: ``InFlightRequestsApi``)
    InFlightRequests: Callable[[int, Any], Any]
    # client_channel_send.c.h
    #: ``ChannelSend(selector, channels, metrics, ready_state, max_iov, blocking_errors)``: a client's send of a request
    #: on its channel; its ``send(in_flight_requests, request, network_send)`` is ``in_flight_requests.add(request)``
    #: then ``selector.send(network_send)`` (reference: ``network.transport.selector.Selector.compiled_send``)
    ChannelSend: Callable[..., Any]
    #: ``SendReadiness(node_states, connection_ready, channels, channel_ready)``: its ``can_send(in_flight_requests,
    #: node_id, now_ms)`` is ``NetworkClient.can_send_request`` in one call
    SendReadiness: Callable[[Any, Any, Any, Any], Any]
    # client_send_path.c.h
    #: ``ClientSendPath(client, ready_reference, send_reference, can_send, channel_send, encoders, general_encoder,
    #: reference_encoder, new_network_send, new_in_flight_request, header_type, new_request_reference, correlation_ids,
    #: new_client_request)``: a NetworkClient's send-side state (reference: ``network.client_send_state.ClientSendState``)
    #: whose ``ready``, ``new_client_request`` and ``send`` are the client's (``NetworkClient._new_send_state``)
    ClientSendPath: Callable[..., Any]
    # sender_send_round.c.h
    #: ``SenderIteration(sender, setup, reference, unsettled, wakeup_attribute, system_time, monotonic_ns,
    #: settled_parts)``: a Sender's ``run_once`` in one call (reference: ``producer.sender.Sender.run_once``), its bound
    #: ``run_once`` the Sender's
    SenderIteration: Callable[..., Any]
    #: ``DrainStamp(manager, reference, parts)``: (batch, tp) -> ``IdempotenceManager.prepare_for_drain``, its common case
    #: in one call (``parts``: the manager's ``drain_parts()``)
    DrainStamp: Callable[..., Any]
    # client_poll.c.h
    #: ``ClientPollPath(client, poll_reference, complete_reference, receives_reference, clock_ns, decoders, ...)``: a
    #: NetworkClient's poll state (reference: ``network.client_poll_state.ClientPollState``) whose ``poll`` is the
    #: client's (``NetworkClient._new_poll_state``)
    ClientPollPath: Callable[..., Any]
    #: ``SelectorPoll(selector, poll_reference, channels, keys, ...)``: a client Selector's common poll in one call
    #: (``network.transport.selector.Selector.compiled_poll``)
    SelectorPoll: Callable[..., Any]
    # server_channel_path.c.h
    #: ``ServerChannelPath(selector, channels, buffered, interest_stale, activity_order, metrics, clock_ns, ...)``: a
    #: broker Processor's per-request channel steps (``network.transport.selector.Selector.compiled_server_path``; its
    #: instances are ``network.transport.server_channel_path.ServerChannelPathApi``)
    ServerChannelPath: Callable[..., Any]
    # broker_response_path.c.h
    #: ``ProcessorResponsePath(processor, parser, responses, conns, inflight, ready, open_channels, steps, clock_ns,
    #: send_response_type, request_log, instruments)``: a broker Processor's common SendResponse sent and completed
    #: (``mini_broker.network.processor.Processor._compiled_response_path``; reference: its _process_new_responses and
    #: _response_sent)
    ProcessorResponsePath: Callable[..., Any]
    def index_columns(self, first_width: int, second_width: int, /) -> Any:
        """Reference: ``mini_broker.log.index_columns.IndexColumns(first_width, second_width)``."""

    # broker_log_append.c.h
    def segment_tail(self, fd: int, base_offset: int, offset_index: object, offset_columns: object, time_index: object,
                     time_columns: object, /) -> Any:
        """Reference: ``mini_broker.log.segment_tail.SegmentTail(base_offset)`` (its instances are ``SegmentTailApi``;
        the compiled one's ``append_one`` is ``LogSegment``'s common append of one batch)."""
    def producer_next_entry(self, producers: dict[int, Any], producer_id: int, epoch: int, first_seq: int, delta: int,
                            is_transactional: bool, is_control: bool, /) -> Any:
        """Reference: ``mini_broker.producer_state.producer_state_manager.ProducerStateManager.next_append_entry``
        over ``producers``."""
    def producer_add_next(self, producers: dict[int, Any], entry: object, first_seq: int, delta: int,
                          max_timestamp: int, last_offset: int, make_batch: Callable[..., Any], /) -> None:
        """Reference: ``ProducerStateManager.complete_next_append``'s update of ``entry`` and ``producers`` (under the
        manager's lock; the map end offset is the caller's)."""
    # broker_log_end.c.h
    def log_end(self, make_metadata: Callable[..., Any], make_info: Callable[..., Any], make_batch: Callable[..., Any],
                crc32c: Callable[..., int], /) -> Any:
        """Reference: ``mini_broker.log.log_end.LogEnd()`` (its instances are ``LogEndApi``; the compiled one's
        ``append_client`` is ``Log.append``'s common append of a client's one batch)."""
    # broker_produce_append.c.h
    def produce_appender(self, topics: object, logs: object, client_topics: object, fetch_purgatory: object,
                         produce_purgatory: object, make_tp: Callable[..., Any], make_key: Callable[..., Any],
                         make_response: Callable[..., Any], origin: object, leader_epoch: int,
                         no_batches_error: Callable[[str], Exception], no_batches_message: str, single_broker: type,
                         /) -> Any:
        """Reference: ``mini_broker.server.apis.produce.handle`` down to ``ReplicaManager._append_to_local_log`` on a
        single broker (its instances are ``mini_broker.server.produce_append.ProduceAppender``)."""

    def release_once(self, pool: object, size: int, /) -> Callable[[], None]:
        """Reference: ``pykafka_client.network.transport.memory_pool._Release(pool, size)``."""
    def memory_counter(self, capacity: int, small_frame_reserve: int, /) -> Any:
        """Reference: ``pykafka_client.network.transport.memory_pool.SimpleMemoryPool(capacity)`` (its
        instances are ``CountingMemoryPool``)."""
    def decode_produce_results(self, cls: type[_M], payload: Buffer, version: int, correlation_id: int, /) -> _M | None:
        """Reference: ``protocol.headers.decode_response`` of a Produce response whose partitions all succeeded, as
        ``cls`` (``producer.sender.DecodedProduceResponse``) holding its results (None: run the reference)."""
    def produce_request_data(
        self, transactional_id: str | None, acks: int, timeout_ms: int, parts: list[tuple[Any, bytes]], version: int, /
    ) -> bytes | None:
        """Reference: ``ProduceRequest.encode`` of the parts grouped by topic (``producer.sender.DrainedProduceRequest``)."""
    def complete_produce_response(self, sender: object, batches: dict[Any, Any], body: object, succeeded: object, /) -> bool:
        """Reference: ``producer.sender.Sender._handle_produce_response_reference`` of a decoded ProduceResponse whose
        partitions all succeeded, no batch with delivery callbacks (False, nothing done: run the reference)."""
    def handle_produce_response(
        self, reference: Callable[[Any, dict[Any, Any], Any], None], succeeded: object, sender: object,
        batches: dict[Any, Any], response: object, /,
    ) -> bool:
        """Reference: ``producer.sender.Sender._handle_produce_response`` (a produce request's completion callback):
        ``complete_produce_response`` for a ProduceResponse not disconnected nor version-mismatched, ``reference(sender,
        batches, response)`` whenever that declines (True: the kernel completed it)."""

    # sender_round.c.h: the Sender's round over the accumulator
    def accumulator_ready(
        self, topic_items: tuple[tuple[str, Any], ...], snapshot: object, muted: set[Any], node_sets: dict[int, Any],
        linger_ms: int, adaptive: bool, now_ms: int, others: Callable[[], bool],
        should_backoff: Callable[[Any, int, bool], tuple[bool, int]], /,
    ) -> tuple[set[Any], int, set[str]]:
        """Reference: ``producer.record_accumulator.RecordAccumulator.ready_reference`` (with a MetadataSnapshot)."""
    def accumulator_drain(
        self, topics: dict[str, Any], snapshot: object, nodes: Iterable[Any], max_size: int, now_ms: int,
        drain_index: dict[int, int], muted: set[Any], prepare: Callable[[Any, Any], bool] | None,
        should_backoff: Callable[[Any, int, bool], tuple[bool, int]], /,
    ) -> dict[int, list[Any]]:
        """Reference: ``producer.record_accumulator.RecordAccumulator.drain_reference`` (with a MetadataSnapshot)."""
    def accumulator_expired(
        self, topic_items: tuple[tuple[str, Any], ...], delivery_timeout_ms: int, now_ms: int, next_expiry_ms: int, /
    ) -> tuple[list[Any], int]:
        """Reference: ``producer.record_accumulator.RecordAccumulator.expired_batches_reference``."""
    def sender_track_in_flight(
        self, drained: dict[int, list[Any]], in_flight: dict[Any, list[Any]], mute: Callable[[Any], None] | None,
        delivery_timeout_ms: int, now_ms: int, /,
    ) -> int | None:
        """Reference: ``producer.sender.Sender.track_in_flight_reference``."""
    # sender_send_round.c.h: the Sender's whole round of produce data
    def sender_send_round(self, sender: Any, setup: Any, now_ms: int, /) -> int:
        """Reference: ``producer.sender.Sender.send_producer_data`` (its metadata step, then
        ``send_producer_data_reference``); ``setup`` is the Sender's fixed part of the round."""

    def scan_records(self, keys: Sequence[Any] | None, values: Sequence[Any], timestamps: Sequence[Any] | None, /) -> int:
        """Reference: ``producer.batch_append.scan_records_reference``."""

    def murmur2(self, data: object, /) -> int | None:
        """Reference: ``producer.partitioner.murmur2`` (None unless ``data`` is bytes)."""

    def key_partitions(self, keys: Sequence[Any], num_partitions: int, /) -> list[int] | None:
        """Reference: ``producer.batch_append.key_partitions_reference``."""

    def append_pending(
        self,
        pending: Any,
        keys: Sequence[Any] | None,
        values: Sequence[Any],
        start: int,
        stop: int,
        timestamps: Sequence[Any] | None,
        timestamp: int,
        headers: Sequence[Any],
        callback: object,
        size: int,
        limit: int,
        base_ts: int,
        max_ts: int,
        max_rec: int,
        ratio: float,
        produced: int,
        switch_bytes: int,
        sticky_bytes: int,
        /,
    ) -> tuple[int, int, int, int, int, int, bool] | None:
        """Reference: ``producer.batch_append.append_pending_reference``."""

    # producer_binary_column.c.h
    def binary_column(
        self, validity: object, offsets: object, data: object, offset: int, length: int, large: bool, /
    ) -> Sequence[bytes | None] | None:
        """Reference: ``producer.batch_append.BinaryColumnReference`` (None where it raises)."""

    # producer_batch_open.c.h
    #: ``BatchOpener(topics, prototype, pool, incomplete, clock, appending, owner, reference, small)``: a type whose
    #: instances are ``RecordAccumulator.open_batch`` compiled (reference: that method, ``reference``, which it calls
    #: for what it declines; see ``producer.record_accumulator.new_batch_opener``)
    BatchOpener: Callable[..., Callable[..., Any]]

    # producer_append_run.c.h
    #: ``CallSegments(starts, outcomes, indexes, waiting, segment_type, new_segment, finished)``: a send_batch call's
    #: segments (reference: ``producer.call_segments.CallSegments``, see ``new_call_segments``)
    CallSegments: Callable[..., Any]
    #: ``ManyAppender(topics, owner, reference)``: a type whose instances are ``RecordAccumulator.try_append_many``
    #: compiled (reference: that method, ``reference``, which it calls for what it declines; see
    #: ``producer.many_appender.new_many_appender``)
    ManyAppender: Callable[..., Callable[..., Any]]

    # producer_batch_release.c.h
    #: ``SenderCompletion(in_flight_batches, guarantee_message_order, has_manager, release_parts, sequence_parts)``: a
    #: Sender's produce completion state, made once with it (``Sender.completion``): the kernel's
    #: ``handle_produce_response`` releases batches (``RecordAccumulator.deallocate``, with what its ``release_parts``
    #: lent) and acknowledges sequences (``IdempotenceManager.handle_completed_batch``, with what its
    #: ``sequence_parts`` lent) with it, without their frames
    SenderCompletion: Callable[[dict[Any, Any], bool, bool, Any, Any], object]


#: The compiled module when active, else None (read it at call time: ``_native.kernel``).
kernel: Kernel | None = None
_loaded: Kernel | None = None
_why_not = ""


def _load() -> None:
    global _loaded, _why_not
    if os.environ.get("PYKAFKA_NO_NATIVE", "") not in ("", "0"):
        _why_not = "PYKAFKA_NO_NATIVE is set"
    else:
        try:
            _kernel = cast(Kernel, importlib.import_module("pykafka_client.protocol.records._kernel"))
        except ImportError as e:
            _why_not = f"the compiled kernel is not built ({e})"
        else:
            from pykafka_client.protocol.records.record import Record
            from pykafka_client.protocol.records.record_batch import TimestampType
            from pykafka_client.protocol.records.varint import read_varint

            _kernel.setup(Record, TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME, read_varint)
            _loaded = _kernel
    if _loaded is None:
        log.debug("record fast path: running on the pure-Python record code, %s", _why_not)
    use_native(_loaded is not None)


def loaded_kernel() -> Kernel | None:
    """The compiled module if it was loaded (whether or not it is switched on), for one-time setup calls."""
    return _loaded


def native_available() -> bool:
    """True when the compiled kernel was loaded (whether or not it is switched on)."""
    return _loaded is not None


def native_enabled() -> bool:
    """True when record encoding, decoding and validation run on the compiled kernel."""
    return kernel is not None


def use_native(enabled: bool) -> bool:
    """Switch the kernel on or off for the whole process; returns the previous state. Switching on without a
    loaded kernel raises RuntimeError with the reason."""
    global kernel
    previous = kernel is not None
    if enabled and _loaded is None:
        raise RuntimeError(f"the compiled record kernel is not available: {_why_not}")
    kernel = _loaded if enabled else None
    return previous


_load()

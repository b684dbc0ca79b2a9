"""The producer's I/O loop (Java ``Sender``): drains the accumulator into produce requests and handles responses.

:meth:`Sender.run_once` is one iteration and the unit-test seam (driven with a MockClient and MockTime);
:meth:`Sender.run` loops it on the background thread until close. Everything here runs on that one
thread; completion callbacks run here too, never under an accumulator lock.

One iteration:

1. idempotence: resolve expired sequences, apply a pending epoch bump, obtain a producer id
   (InitProducerId to the least loaded node, retried after ``retry.backoff.ms``); a fatal error fails
   every incomplete batch;
2. ``ready`` -> nodes with sendable data (unknown leaders trigger a metadata update), keep those the client
   can send to now, ``drain`` them up to ``max.request.size``;
3. expire batches past ``delivery.timeout.ms``, queued or in flight (never retried afterwards);
4. send one ProduceRequest per node and ``poll`` the client with the computed timeout.

Response handling per partition: success completes the batch; MESSAGE_TOO_LARGE splits a multi-record batch
(no retry consumed); a retriable error re-enqueues (with KIP-951 leader hints applied to metadata at once);
DUPLICATE_SEQUENCE_NUMBER counts as success; anything else fails the batch, per record for KIP-467 errors.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures._base import FINISHED
from dataclasses import dataclass, field, fields
from functools import partial
from typing import Protocol

from pykafka_client.config import LONG_MAX
from pykafka_client.errors import (
    InvalidRecordError,
    KafkaTimeoutError,
    ProducerClosedError,
    TransactionAbortedError,
    UnknownServerError,
    for_code,
)
from pykafka_client.errors_base import BrokerResponseError, KafkaError
from pykafka_client.network.client_response import ClientResponse
from pykafka_client.network.kafka_client import KafkaClient
from pykafka_client.network.network_client import NetworkClient
from pykafka_client.network.request_encoding import register_compiled_codecs
from pykafka_client.network.transport.selector import Selector
from pykafka_client.producer.future_record_metadata import BatchOutcome
from pykafka_client.producer.idempotence_manager import SETTLED_PARTS, IdempotenceManager
from pykafka_client.producer.producer_batch import FinalState, ProducerBatch
from pykafka_client.producer.producer_metadata import (
    CLUSTER_ATTRIBUTE,
    RETAIN_AT_ATTRIBUTE,
    MetadataSnapshot,
    ProducerMetadata,
)
from pykafka_client.producer.record_accumulator import AccumulatorMetadata, RecordAccumulator
from pykafka_client.producer.transaction_manager import TransactionManager
from pykafka_client.protocol.messages import (
    InitProducerIdRequest,
    InitProducerIdResponse,
    ProduceRequest,
    ProduceResponse,
)
from pykafka_client.protocol.records import _native
from pykafka_client.protocol.records._native import Kernel
from pykafka_client.protocol.records.crc import crc32c
from pykafka_client.structs import Node, TopicPartition
from pykafka_client.utils.time import SystemTime, Time

log = logging.getLogger(__name__)

NONE = 0
NETWORK_EXCEPTION = 13
UNSUPPORTED_VERSION = 35
MESSAGE_TOO_LARGE = 10
DUPLICATE_SEQUENCE_NUMBER = 46
NOT_LEADER_OR_FOLLOWER = 6
FENCED_LEADER_EPOCH = 74
INVALID_RECORD = 87
CLUSTER_AUTHORIZATION_FAILED = 31
TOPIC_AUTHORIZATION_FAILED = 29

_SUCCEEDED = FinalState.SUCCEEDED
_UNCAUGHT = "uncaught error in the producer I/O thread"
#: The attribute that holds :attr:`Sender.wakeup_pending` (set by :meth:`Sender.wakeup`, cleared at the top of
#: each :meth:`Sender.run_once`): the kernel's send path reads it there, without the property's Python frame, to
#: skip calling ``wakeup`` per record while it is True (``KafkaProducer``'s ``wake_sender``).
WAKEUP_PENDING_ATTRIBUTE = "_wakeup_pending"


class IoRunner(Protocol):
    """What runs a Sender's :meth:`Sender.run` loop: its I/O thread (a ``threading.Thread``), or the async
    producer's event-loop driver (:mod:`pykafka_client.aio._sender_driver`)."""

    def is_alive(self) -> bool: ...

    def join(self, timeout: float | None = None) -> None: ...

    def ensure_started(self) -> None:
        """Make sure something runs the Sender before the producer blocks waiting for it (a thread runs from
        its creation; the event-loop driver starts on a thread when no loop runs it yet)."""
        ...


#: Starts what runs a Sender: ``factory(sender, client_id)`` (``KafkaProducer(io_runner=...)``).
IoRunnerFactory = Callable[["Sender", str], IoRunner]


@dataclass(slots=True)
class PartitionResult:
    """One partition's outcome of a produce request (Java ``ProduceResponse.PartitionResponse``)."""

    error_code: int
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    record_errors: list[tuple[int, str | None]] = field(default_factory=list)
    error_message: str | None = None


_TOPIC_DATA = ProduceRequest.__dict__["topic_data"]  # the slot of the dataclass field


class DrainedProduceRequest(ProduceRequest):
    """The ProduceRequest of :meth:`Sender.send_produce_request`: the drained ``parts`` ([(partition, records)])
    with ``topic_data`` (the parts grouped by topic, in first-seen order) built the first time it is read. While
    nothing has read it, the kernel's ``encode_produce_request`` writes the request body from the parts
    (``_kernel.produce_request_data``), byte for byte what ``ProduceRequest.encode`` writes of ``topic_data``."""

    __slots__ = ("parts",)

    parts: list[tuple[TopicPartition, bytes]] | None

    @classmethod
    def of(
        cls, transactional_id: str | None, acks: int, timeout_ms: int, parts: list[tuple[TopicPartition, bytes]]
    ) -> DrainedProduceRequest:
        self = _object_new(cls)  # no dataclass __init__: topic_data stays unbuilt
        self.transactional_id = transactional_id
        self.acks = acks
        self.timeout_ms = timeout_ms
        self.unknown_tagged_fields = None
        self.parts = parts
        return self

    @property
    def topic_data(self) -> list[ProduceRequest.TopicProduceData]:
        parts = self.parts
        if parts is not None:
            topics: dict[str, list[ProduceRequest.PartitionProduceData]] = {}
            for tp, data in parts:
                topics.setdefault(tp.topic, []).append(ProduceRequest.PartitionProduceData(index=tp.partition, records=data))
            _TOPIC_DATA.__set__(self, [ProduceRequest.TopicProduceData(name=t, partition_data=p) for t, p in topics.items()])
            self.parts = None  # from now on the fields are the request (the caller may change them)
        value: list[ProduceRequest.TopicProduceData] = _TOPIC_DATA.__get__(self)
        return value

    @topic_data.setter
    def topic_data(self, value: list[ProduceRequest.TopicProduceData]) -> None:
        _TOPIC_DATA.__set__(self, value)
        self.parts = None


_RESPONSES = ProduceResponse.__dict__["responses"]  # the slot of the dataclass field
_COMPARED = tuple(f.name for f in fields(ProduceResponse) if f.compare)


class DecodedProduceResponse(ProduceResponse):
    """The response to a :class:`DrainedProduceRequest` whose partitions all succeeded, as the kernel's
    ``decode_produce_results`` makes it: ``results`` ([(topic, [(index, base_offset, log_append_time_ms,
    log_start_offset)])] in response order) with ``responses`` (the dataclasses the reference decoder makes of the
    same bytes) built the first time it is read; ``_kernel.complete_produce_response`` reads ``results`` while
    nothing has. Equal to the ProduceResponse the reference decodes."""

    __slots__ = ("results",)

    results: list[tuple[str, list[tuple[int, int, int, int]]]] | None

    @property
    def responses(self) -> list[ProduceResponse.TopicProduceResponse]:
        results = self.results
        if results is not None:
            part, leader = ProduceResponse.PartitionProduceResponse, ProduceResponse.LeaderIdAndEpoch
            _RESPONSES.__set__(self, [
                ProduceResponse.TopicProduceResponse(
                    name, [part(index, 0, base, lat, lso, [], None, leader(), None) for index, base, lat, lso in parts], None
                )
                for name, parts in results
            ])
            self.results = None  # from now on the fields are the response (the caller may change them)
        value: list[ProduceResponse.TopicProduceResponse] = _RESPONSES.__get__(self)
        return value

    @responses.setter
    def responses(self, value: list[ProduceResponse.TopicProduceResponse]) -> None:
        _RESPONSES.__set__(self, value)
        self.results = None

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ProduceResponse):  # (ProduceResponse's own __eq__ gives way to a subclass)
            return all(getattr(self, n) == getattr(other, n) for n in _COMPARED)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


_object_new = object.__new__
_loaded_kernel = _native.loaded_kernel()
if _loaded_kernel is not None:
    _loaded_kernel.sender_setup(DrainedProduceRequest, BatchOutcome, FINISHED)
    _loaded_kernel.produce_results_setup(DecodedProduceResponse)
    register_compiled_codecs(
        DrainedProduceRequest,
        _loaded_kernel.encode_produce_request,
        partial(_loaded_kernel.decode_produce_results, DecodedProduceResponse),
    )


@dataclass(slots=True)
class SenderMetrics:
    """Counters the producer reports in ``metrics()``."""

    requests_sent: int = 0
    batches_sent: int = 0
    records_sent: int = 0
    bytes_sent: int = 0
    retries: int = 0
    errors: int = 0
    splits: int = 0
    expired: int = 0


class Sender:
    """Moves batches from the accumulator to the brokers on the producer's I/O thread."""

    #: the wake-up flag in a slot: the kernel's send path reads it at a fixed offset (not through the instance
    #: dict) on each record appended while a wake-up is due; the rest of the slots are what the kernel's round
    #: (sender_send_round) reads each round, at their offsets (everything else in the instance dict)
    __slots__ = (
        "__dict__", "__weakref__", "_wakeup_pending", "completion", "client", "metadata", "accumulator",
        "guarantee_message_order", "max_request_size", "acks", "request_timeout_ms", "transaction_manager",
        "in_flight_batches", "metrics",
    )

    def __init__(
        self,
        client: KafkaClient,
        metadata: ProducerMetadata,
        accumulator: RecordAccumulator,
        *,
        guarantee_message_order: bool,
        max_request_size: int,
        acks: int,
        retries: int,
        request_timeout_ms: int,
        retry_backoff_ms: int,
        time: Time,
        transaction_manager: TransactionManager | None = None,
    ) -> None:
        self.client = client
        self.metadata = metadata
        self.accumulator = accumulator
        self.guarantee_message_order = guarantee_message_order
        self.max_request_size = max_request_size
        self.acks = acks
        self.retries = retries
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.time = time
        self.transaction_manager = transaction_manager
        self.in_flight_batches: dict[TopicPartition, list[ProducerBatch]] = {}
        self.metrics = SenderMetrics()
        self._running = True
        self._force_close = False
        self._init_pid_not_before_ms = 0
        self._wakeup_pending = False
        loaded = _native.loaded_kernel()
        #: what the kernel's ``sender_send_round`` is given each round besides the Sender and the time (all kept for
        #: the Sender's life): the accumulator's round state, the snapshot type it runs on (any other metadata's
        #: snapshot goes to :meth:`send_producer_data_reference`), the checksum, and what the completion callback is
        #: made of: ``partial(_native.kernel.handle_produce_response, reference, SUCCEEDED, self, batches)``, the
        #: kernel as of the send, as :meth:`send_produce_request` makes it; and what the metadata step reads when the
        #: metadata's ``retain_topics_and_fetch_snapshot`` is ProducerMetadata's (its work is then done in the round)
        self._round_setup = None if loaded is None else (
            accumulator.round_state(), MetadataSnapshot, crc32c, (_native, partial, _handle_produce_response_reference,
                                                                  _SUCCEEDED),
            (ProducerMetadata.retain_topics_and_fetch_snapshot, CLUSTER_ATTRIBUTE, RETAIN_AT_ATTRIBUTE),
            self._drain_stamp(loaded, transaction_manager),
        )
        #: the kernel's ``SenderCompletion`` (with the kernel, else None): the state the kernel's completion of a produce
        #: response works with, decided here once: this Sender's in-flight batches, whether order is guaranteed, and what
        #: the accumulator and the transaction manager lend while their ``deallocate`` and ``handle_completed_batch``
        #: are the reference methods (their work is then done without their frames; a method replaced later is not
        #: called by it). It refers to nothing that refers to the Sender (in a slot: the kernel reads it at its offset)
        self.completion: object | None = None if loaded is None else loaded.SenderCompletion(
            self.in_flight_batches, guarantee_message_order, transaction_manager is not None,
            accumulator.release_parts(), None if transaction_manager is None else transaction_manager.sequence_parts(),
        )
        # with the kernel, run_once is the kernel's SenderIteration's (an instance attribute; it holds this Sender weakly:
        # no cycle): the class's run_once, its reference, without the frame, for a Sender that does not override it
        if loaded is not None and self._round_setup is not None and type(self).run_once is Sender.run_once:
            self.run_once = loaded.SenderIteration(  # type: ignore[method-assign]
                self, self._round_setup, Sender.run_once, Sender.run_unsettled, WAKEUP_PENDING_ATTRIBUTE, SystemTime,
                SystemTime.MONOTONIC_NS, SETTLED_PARTS,
            ).run_once

    @staticmethod
    def _drain_stamp(loaded: Kernel, tm: TransactionManager | None) -> object | None:
        """The kernel's ``DrainStamp`` of the transaction manager (its ``prepare_for_drain``'s common case without its
        frames, the round's ``prepare`` while the instance does not replace that method), or None: no manager, or one
        whose ``prepare_for_drain`` is not the reference."""
        parts = None if tm is None else tm.drain_parts()
        if parts is None:
            return None
        stamp: object = loaded.DrainStamp(tm, IdempotenceManager.prepare_for_drain, parts)
        return stamp

    # --- thread loop ---------------------------------------------------------------------------------

    def run(self) -> None:
        """Loop until ``initiate_close``; then finish queued and in-flight work unless forced, aborting an
        open transaction (contract statement 85). The loop is :meth:`run_step` until it returns False, so a
        driver other than a thread (the async producer's event-loop driver) runs exactly the same steps."""
        self.start_run()
        try:
            while self._running:  # run_step's running phase, without run_step's phase checks each iteration
                try:  # _run_once_safely inlined: once per iteration
                    self.run_once()
                except Exception:
                    log.exception(_UNCAUGHT)
            while self.run_step():
                pass
        finally:
            self.finish_run()

    def start_run(self) -> None:
        """Before the first :meth:`run_step`."""
        tm = self.transaction_manager
        if tm is not None:
            tm.set_poison_state_on_invalid_transition(True)

    def run_step(self) -> bool:
        """One iteration of :meth:`run`; False once the loop is over (then call :meth:`finish_run`).

        Phases: running (one :meth:`run_once` per step); after ``initiate_close``, unless forced, finishing
        the queued, in-flight and transactional work, then aborting an open transaction; when forced, the
        transaction manager is closed and the incomplete batches failed."""
        if self._running:
            try:  # _run_once_safely inlined: once per iteration
                self.run_once()
            except Exception:
                log.exception(_UNCAUGHT)
            return True
        tm = self.transaction_manager
        if not self._force_close and (
            self.accumulator.has_undrained() or self.client.has_in_flight_requests() or self._has_pending_init()
            or self._has_pending_transactional_requests()
        ):
            self._run_once_safely()
            return True
        if not self._force_close and tm is not None and tm.is_transactional() and tm.has_ongoing_transaction():
            if not tm.is_completing():
                log.info("aborting the open transaction of transactional.id %s: the producer is closing", tm.transactional_id)
                try:
                    tm.begin_abort()
                except Exception:
                    log.exception("could not abort the open transaction while closing; closing forcefully")
                    self._force_close = True
            if not self._force_close:
                self._run_once_safely()
                return True
        if self._force_close:
            if tm is not None and tm.is_transactional():
                tm.close()
            self.accumulator.abort_incomplete_batches(ProducerClosedError("Producer is closed forcefully."), self._forget)
        return False

    def finish_run(self) -> None:
        """After the last :meth:`run_step` (also when a step raised): close the network client and fail
        whatever is still incomplete, which can never complete now."""
        try:
            self.client.close()
        except Exception:  # pragma: no cover - best effort
            log.exception("error closing the network client")
        self.accumulator.abort_incomplete_batches(ProducerClosedError("Producer is closed."), self._forget)

    def _has_pending_transactional_requests(self) -> bool:
        tm = self.transaction_manager
        return tm is not None and tm.has_pending_requests() and tm.has_ongoing_transaction()

    def _has_pending_init(self) -> bool:
        tm = self.transaction_manager
        return tm is not None and tm.init_producer_id_in_flight

    def _run_once_safely(self) -> None:
        try:
            self.run_once()
        except Exception:
            log.exception(_UNCAUGHT)

    def initiate_close(self) -> None:
        self.accumulator.close()
        self._running = False
        self.wakeup()

    def force_close(self) -> None:
        self._force_close = True
        self.initiate_close()

    def is_running(self) -> bool:
        return self._running

    @property
    def pollable_selector(self) -> Selector | None:
        """The selector the client polls, when the client is a :class:`NetworkClient` over a real
        :class:`Selector` with a descriptor to wait on (the async producer's driver waits on it between
        steps); None for any other client (tests' mock clients)."""
        client = self.client
        if isinstance(client, NetworkClient):
            selector = client.selector
            if isinstance(selector, Selector) and selector.fileno() is not None:
                return selector
        return None

    def wakeup(self) -> None:
        """Interrupt the I/O thread's poll (thread-safe). Repeated calls before the next iteration cost no
        syscall: the flag is cleared at the top of :meth:`run_once`, before it polls."""
        if not self._wakeup_pending:
            self._wakeup_pending = True
            self.client.wakeup()

    @property
    def wakeup_pending(self) -> bool:
        """True if :meth:`wakeup` was called since the current or last :meth:`run_once` began: a driver that waits
        on the selector between steps steps again at once then (the step's poll may have drained that wake-up)."""
        return self._wakeup_pending

    # --- one iteration -------------------------------------------------------------------------------

    def run_once(self) -> None:
        """One iteration of the I/O loop. With the kernel it is the kernel's ``SenderIteration.run_once`` (an instance
        attribute set by ``__init__``), which does what this does without the frame."""
        self._wakeup_pending = False
        tm = self.transaction_manager
        # an idempotent producer with its producer id and nothing to repair (the common case): one call
        if tm is not None and not tm.is_settled() and self.run_unsettled(tm):
            return
        now = self.time.hi_res_clock_ms()
        kernel = _native.kernel  # send_producer_data, without its frame
        self.client.poll(
            self.send_producer_data_reference(self.metadata.retain_topics_and_fetch_snapshot(now), now) if kernel is None
            else kernel.sender_send_round(self, self._round_setup, now),
            now,
        )

    def run_unsettled(self, tm: TransactionManager) -> bool:
        """:meth:`run_once`'s step for a transaction manager that is not settled (its ``is_settled()`` False): the
        sequences resolved, a fatal error's failing of what is pending, the transactional request or the
        InitProducerId to send. True if that spent the iteration (nothing else to do in it)."""
        tm.maybe_resolve_sequences()
        if tm.has_fatal_error():
            err = tm.fail_pending()
            if self.accumulator.has_incomplete():
                self.accumulator.abort_incomplete_batches(err, self._forget)
            self.client.poll(self.retry_backoff_ms, self.time.hi_res_clock_ms())
            return True
        if tm.is_transactional():
            return self._maybe_send_and_poll_transactional_request(tm)
        tm.bump_idempotent_epoch_and_reset_id_if_needed()
        return self._maybe_send_and_poll_init_producer_id()

    # --- transactional requests ----------------------------------------------------------------------

    def _maybe_send_and_poll_transactional_request(self, tm: TransactionManager) -> bool:
        """Send the next queued transactional request; True if this iteration was spent on one (no produce
        data goes out while one is in flight, as in Java)."""
        if tm.has_in_flight_request():
            self.client.poll(self.retry_backoff_ms, self.time.hi_res_clock_ms())
            return True
        if (tm.has_abortable_error() or tm.is_aborting()) and self.accumulator.has_incomplete():
            err = tm.last_error
            self.accumulator.abort_undrained_batches(
                TransactionAbortedError(
                    "Failing batch since transaction was aborted" + (f" ({err!r})" if err is not None else "")
                ),
                tm.forget_aborted_batch,
            )
        handler = tm.next_request(self.accumulator.has_incomplete())
        if handler is None:
            return False
        now = self.time.hi_res_clock_ms()
        if handler.is_retry and now < handler.retry_at_ms:
            tm.retry(handler)
            self.client.poll(handler.retry_at_ms - now, now)
            return True
        if handler.coordinator_type is not None:
            node = tm.coordinator(handler.coordinator_type)
            if node is None:
                tm.lookup_coordinator(handler.coordinator_type, handler.coordinator_key())
                tm.retry(handler)
                return True
        else:
            node = self.client.least_loaded_node(now).node
            if node is None:
                tm.retry(handler)
                self.metadata.request_update()
                self.client.poll(self.retry_backoff_ms, now)
                return True
        if not self.client.ready(node, now):
            if self.client.connection_failed(node) and handler.coordinator_type is not None:
                tm.lookup_coordinator(handler.coordinator_type, handler.coordinator_key())
            tm.retry(handler)
            self.client.poll(max(min(self.client.poll_delay_ms(node, now), self.retry_backoff_ms), 0), now)
            return True
        body, oldest, latest = handler.build()
        request = self.client.new_client_request(
            node.id_string, body, now, True, self.request_timeout_ms, handler.on_complete,
            oldest_allowed_version=oldest, latest_allowed_version=latest,
        )
        tm.in_flight_handler = handler
        log.debug("sending %s to node %s: %s", handler.operation, node.id, body)
        try:
            self.client.send(request, now)
        except Exception as e:  # the connection went away between ready() and send(): as a disconnect
            log.warning("could not send %s to node %s (%r); retrying", handler.operation, node.id, e)
            tm.in_flight_handler = None
            if handler.coordinator_type is not None:
                tm.lookup_coordinator(handler.coordinator_type, handler.coordinator_key())
            tm.retry(handler)
        self.client.poll(self.retry_backoff_ms, self.time.hi_res_clock_ms())
        return True

    # --- InitProducerId ------------------------------------------------------------------------------

    def _maybe_send_and_poll_init_producer_id(self) -> bool:
        """True if this iteration was spent on obtaining a producer id."""
        tm = self.transaction_manager
        assert tm is not None
        if tm.init_producer_id_in_flight:
            self.client.poll(self.retry_backoff_ms, self.time.hi_res_clock_ms())
            return True
        if not tm.needs_producer_id():
            return False
        now = self.time.hi_res_clock_ms()
        if now < self._init_pid_not_before_ms:
            self.client.poll(self._init_pid_not_before_ms - now, now)
            return True
        node = self.client.least_loaded_node(now).node
        if node is None:
            self.metadata.request_update()
            self.client.poll(self.retry_backoff_ms, now)
            return True
        if not self.client.ready(node, now):
            self.client.poll(max(min(self.client.poll_delay_ms(node, now), self.retry_backoff_ms), 0), now)
            return True
        body = InitProducerIdRequest(
            transactional_id=None, transaction_timeout_ms=tm.transaction_timeout_ms, producer_id=-1, producer_epoch=-1
        )
        request = self.client.new_client_request(
            node.id_string, body, now, True, self.request_timeout_ms, self._handle_init_producer_id_response
        )
        tm.init_producer_id_in_flight = True
        self.client.send(request, now)
        self.client.poll(self.retry_backoff_ms, self.time.hi_res_clock_ms())
        return True

    def _handle_init_producer_id_response(self, response: ClientResponse) -> None:
        tm = self.transaction_manager
        assert tm is not None
        tm.init_producer_id_in_flight = False
        now = self.time.hi_res_clock_ms()
        body = response.response_body
        if response.was_disconnected or response.version_mismatch is not None or not isinstance(body, InitProducerIdResponse):
            if response.version_mismatch is not None:
                tm.transition_to_fatal_error(response.version_mismatch)
                return
            self._init_pid_not_before_ms = now + self.retry_backoff_ms
            return
        if body.error_code == NONE:
            tm.set_producer_id_and_epoch(body.producer_id, body.producer_epoch)
            return
        exc_cls = for_code(body.error_code)
        if exc_cls.retriable:
            self._init_pid_not_before_ms = now + self.retry_backoff_ms
            return
        tm.transition_to_fatal_error(exc_cls(None))

    # --- produce -------------------------------------------------------------------------------------

    def send_producer_data(self, now: int) -> int:
        """One round of produce data: ready, the client's readiness, drain, the in-flight tracking, expiry, the
        requests sent; the poll timeout. With the kernel its ``sender_send_round`` (which runs
        :meth:`send_producer_data_reference` for a metadata snapshot other than a :class:`MetadataSnapshot`)."""
        kernel = _native.kernel
        if kernel is not None:
            timeout: int = kernel.sender_send_round(self, self._round_setup, now)
            return timeout
        # forget topics idle for metadata.max.idle.ms; then one view of the cluster for ready and drain (Java's
        # metadata snapshot): the lookups without a call each to find the current one
        return self.send_producer_data_reference(self.metadata.retain_topics_and_fetch_snapshot(now), now)

    def send_producer_data_reference(self, snapshot: AccumulatorMetadata, now: int) -> int:
        """:meth:`send_producer_data` in Python after the metadata step (the kernel's ``sender_send_round`` is this)."""
        result = self.accumulator.ready(snapshot, now)
        if result.unknown_leader_topics:
            for topic in result.unknown_leader_topics:
                self.metadata.add(topic, now)
                self.metadata.request_update_for_topic(topic)
        not_ready_timeout = 2**63 - 1
        ready_nodes: list[Node] = []
        for node in result.ready_nodes:
            if self.client.ready(node, now):
                ready_nodes.append(node)
            else:
                not_ready_timeout = min(not_ready_timeout, self.client.poll_delay_ms(node, now))
        batches = self.accumulator.drain(snapshot, ready_nodes, self.max_request_size, now)
        # the next expiry: the earliest of the in-flight batches' and (set by expired_batches, from that) the queued
        # ones' (Java resets it and updates it per in-flight batch; here passed to expired_batches once)
        kernel = _native.kernel
        next_expiry = (
            self.track_in_flight_reference(batches, now) if kernel is None else kernel.sender_track_in_flight(
                batches, self.in_flight_batches,
                self.accumulator.mute_partition if self.guarantee_message_order else None,
                self.accumulator.delivery_timeout_ms, now,
            )
        )
        if next_expiry is None:
            expired, next_expiry = self.expired_in_flight_batches(now)
            expired = self.accumulator.expired_batches(now, next_expiry) + expired
        else:
            expired = self.accumulator.expired_batches(now, next_expiry)
        if expired:
            self.fail_expired_batches(expired, now)
        if ready_nodes:
            # Only nodes the client can send to now (Java removes the others from readyNodes first): a ready
            # batch for a throttled or in-flight-limited node waits for network events, not in a 0 ms loop.
            poll_timeout = 0
        else:
            # the earliest of the next ready check, a not-ready node's delay and the next batch expiry, at least 0
            # (comparisons, not min()/max(): a builtin's call costs more than the comparison, every iteration)
            poll_timeout = result.next_ready_check_delay_ms
            if not_ready_timeout < poll_timeout:
                poll_timeout = not_ready_timeout
            expiry_timeout = self.accumulator.next_expiry_time_ms() - now
            if expiry_timeout < poll_timeout:
                poll_timeout = expiry_timeout
            if poll_timeout < 0:
                poll_timeout = 0
        for node_id, node_batches in batches.items():  # one produce request per node with drained batches
            if node_batches:
                self.send_produce_request(node_id, node_batches, now)
        return poll_timeout

    def fail_expired_batches(self, expired: list[ProducerBatch], now: int) -> None:
        """The batches past ``delivery.timeout.ms`` (queued, then in flight) failed with a timeout."""
        for b in expired:
            self.metrics.expired += 1
            msg = (
                f"Expiring {b.record_count} record(s) for {b.topic_partition}:{now - b.created_ms} ms has passed "
                "since batch creation"
            )
            was_sent = b.has_sequence()
            self._fail_batch(b, KafkaTimeoutError(msg), None, adjust_sequence_numbers=False)
            if self.transaction_manager is not None and was_sent:
                # The broker may or may not have it: hold new batches until the in-flight ones resolve it.
                self.transaction_manager.mark_sequence_unresolved(b)

    def track_in_flight_reference(self, batches: dict[int, list[ProducerBatch]], now: int) -> int | None:
        """The drained ``batches`` recorded in flight (and their partitions muted under max.in.flight=1); then the
        earliest expiry of the in-flight batches, or None when one is due (or a partition's list is empty):
        :meth:`expired_in_flight_batches` must take them out (the kernel's ``sender_track_in_flight`` is this).
        (The in-flight batches are first looked at here: while none has expired, the common case, without the call
        of expired_in_flight_batches and its copy of the partitions.)"""
        for node_batches in batches.values():
            for b in node_batches:
                in_flight = self.in_flight_batches.get(b.topic_partition)
                if in_flight is None:  # (not setdefault: no list made per batch to be dropped)
                    self.in_flight_batches[b.topic_partition] = [b]
                else:
                    in_flight.append(b)
                if self.guarantee_message_order:
                    self.accumulator.mute_partition(b.topic_partition)
        timeout = self.accumulator.delivery_timeout_ms
        next_expiry = LONG_MAX
        for in_flight in self.in_flight_batches.values():
            if not in_flight or in_flight[0].created_ms + timeout <= now:
                return None
            if in_flight[0].created_ms + timeout < next_expiry:
                next_expiry = in_flight[0].created_ms + timeout
        return next_expiry

    def expired_in_flight_batches(self, now: int) -> tuple[list[ProducerBatch], int]:
        """The in-flight batches past ``delivery.timeout.ms`` (forgotten here), and the earliest expiry time of those
        left (``2**63 - 1`` when none is)."""
        expired: list[ProducerBatch] = []
        timeout = self.accumulator.delivery_timeout_ms
        next_expiry = LONG_MAX
        for tp in list(self.in_flight_batches):
            lst = self.in_flight_batches[tp]
            while lst:
                b = lst[0]
                if timeout <= now - b.created_ms:  # b.has_reached_delivery_timeout(timeout, now), inlined
                    lst.pop(0)
                    if not b.is_done():
                        expired.append(b)
                else:
                    if b.created_ms + timeout < next_expiry:
                        next_expiry = b.created_ms + timeout
                    break
            if not lst:
                del self.in_flight_batches[tp]
        return expired, next_expiry

    def send_produce_request(self, node_id: int, batches: list[ProducerBatch], now: int) -> None:
        """The produce request of one node's drained ``batches`` built and handed to the client (the kernel's
        ``sender_send_round`` does this for uncompressed batches, and calls this for any other)."""
        tm = self.transaction_manager
        tid = tm.transactional_id if tm is not None else None
        kernel = _native.kernel
        # the loop of _drained_request for uncompressed batches in one compiled call (None: the reference does it)
        drained = (
            None if kernel is None else kernel.drained_request(batches, crc32c, tid, self.acks, self.request_timeout_ms)
        )
        body, by_tp, records, size = drained if drained is not None else self._drained_request(batches, tid)
        request = self.client.new_client_request(
            # a partial (C) rather than a closure; with the kernel, of its handle_produce_response (the common response
            # completed without a Python frame, the reference called for anything else): one frame less per response
            str(node_id), body, now, self.acks != 0, self.request_timeout_ms,
            partial(self._handle_produce_response, by_tp) if kernel is None
            else partial(kernel.handle_produce_response, _handle_produce_response_reference, _SUCCEEDED, self, by_tp),
            # the transactional id is a field from v3 (the first version of magic v2 batches)
            oldest_allowed_version=3 if body.transactional_id is not None else None,
        )
        self.metrics.requests_sent += 1
        self.metrics.batches_sent += len(batches)
        self.metrics.records_sent += records
        self.metrics.bytes_sent += size
        self.client.send(request, now)

    def _drained_request(
        self, batches: list[ProducerBatch], transactional_id: str | None
    ) -> tuple[DrainedProduceRequest, dict[TopicPartition, ProducerBatch], int, int]:
        """The produce request of the drained ``batches`` (each encoded and marked sent), the batches by partition,
        and their record count and bytes (``_kernel.drained_request``'s reference)."""
        by_tp: dict[TopicPartition, ProducerBatch] = {}
        parts: list[tuple[TopicPartition, bytes]] = []
        records = 0
        size = 0
        for b in batches:
            tp = b.topic_partition
            data = b.records()
            b.mark_sent()
            if b.is_compressed:  # the estimate moves only for compressed batches
                self.accumulator.update_compression_ratio(b)
            size += len(data)
            records += b.record_count
            by_tp[tp] = b
            parts.append((tp, data))
        # The request's topic_data (grouped by topic) is built only if something reads it: the kernel writes the
        # request from the parts when it frames it.
        return DrainedProduceRequest.of(transactional_id, self.acks, self.request_timeout_ms, parts), by_tp, records, size

    def _handle_produce_response(self, batches: dict[TopicPartition, ProducerBatch], response: ClientResponse) -> None:
        """A produce request's completion callback (``_kernel.handle_produce_response`` is this, with the kernel)."""
        body = response.response_body
        body_type = type(body)
        if (
            (body_type is DecodedProduceResponse or body_type is ProduceResponse)
            and not response.was_disconnected and response.version_mismatch is None
        ):
            # The common response (every partition succeeded, no delivery callbacks) completes in one compiled call;
            # it declines, having done nothing, for anything else.
            kernel = _native.kernel
            if kernel is not None and kernel.complete_produce_response(self, batches, body, _SUCCEEDED):
                return
        self._handle_produce_response_reference(batches, response)

    def _handle_produce_response_reference(
        self, batches: dict[TopicPartition, ProducerBatch], response: ClientResponse
    ) -> None:
        """:meth:`_handle_produce_response` in Python (``_kernel.complete_produce_response`` does its common case)."""
        now = self.time.hi_res_clock_ms()
        if response.was_disconnected:
            msg = f"Disconnected from node {response.destination}" + (" due to timeout" if response.was_timed_out else "")
            for b in batches.values():
                self._complete_batch(b, PartitionResult(NETWORK_EXCEPTION, error_message=msg), now)
            return
        if response.version_mismatch is not None:
            for b in batches.values():
                self._complete_batch(b, PartitionResult(UNSUPPORTED_VERSION, error_message=str(response.version_mismatch)), now)
            return
        body = response.response_body
        if not isinstance(body, ProduceResponse):
            # acks=0: no response is expected; the batches count as sent.
            for b in batches.values():
                self._complete_batch(b, PartitionResult(NONE), now)
            return
        leader_hints: dict[tuple[str, int], tuple[int, int]] = {}
        seen: set[TopicPartition] = set()
        for topic in body.responses:
            name = topic.name
            for p in topic.partition_responses:
                # a plain tuple looks up (and is equal to) the TopicPartition key: no namedtuple built per partition
                found = batches.get((name, p.index))  # type: ignore[call-overload]
                if found is None:
                    continue
                tp = found.topic_partition
                if tp in seen:
                    continue
                seen.add(tp)
                if p.error_code == NONE and not p.record_errors:
                    # the common case, as _complete_batch does it for a success, without a PartitionResult
                    self._succeed_batch(found, p.base_offset, p.log_append_time_ms)
                    if self.guarantee_message_order:
                        self.accumulator.unmute_partition(tp)
                    continue
                if p.error_code in (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH):
                    cl = p.current_leader
                    if cl is not None and cl.leader_id >= 0 and cl.leader_epoch >= 0:
                        leader_hints[(tp.topic, tp.partition)] = (cl.leader_id, cl.leader_epoch)
                result = PartitionResult(
                    p.error_code, p.base_offset, p.log_append_time_ms, p.log_start_offset,
                    [(e.batch_index, e.batch_index_error_message) for e in p.record_errors], p.error_message,
                )
                self._complete_batch(found, result, now)
        if leader_hints:
            nodes = [Node(e.node_id, e.host, e.port, e.rack) for e in body.node_endpoints]
            self.metadata.update_partition_leadership(leader_hints, nodes)
        for tp, b in batches.items():
            if tp not in seen:
                self._complete_batch(
                    b, PartitionResult(NETWORK_EXCEPTION, error_message="partition missing from the produce response"), now
                )

    # --- batch outcomes --------------------------------------------------------------------------------

    def _can_retry(self, batch: ProducerBatch, result: PartitionResult, exc: BrokerResponseError, now: int) -> bool:
        if batch.has_reached_delivery_timeout(self.accumulator.delivery_timeout_ms, now):
            return False
        if batch.attempts >= self.retries or batch.is_done():
            return False
        if self.transaction_manager is None:
            return exc.retriable
        return self.transaction_manager.can_retry(result.error_code, result.log_start_offset, batch, exc.retriable)

    def _complete_batch(self, batch: ProducerBatch, result: PartitionResult, now: int) -> None:
        code = result.error_code
        if code == MESSAGE_TOO_LARGE and batch.record_count > 1 and not batch.is_done() and not batch.has_reached_delivery_timeout(
            self.accumulator.delivery_timeout_ms, now
        ):
            if self.transaction_manager is not None:
                self.transaction_manager.remove_in_flight_batch(batch)
            self._forget(batch)
            self.accumulator.split_and_reenqueue(batch, now)
            self.accumulator.deallocate(batch)
            self.metrics.splits += 1
        elif code != NONE:
            exc = self._exception_for(batch, result)
            if self._can_retry(batch, result, exc, now):
                log.warning(
                    "retrying batch of %d record(s) for %s (attempt %d, sequence %d): %s",
                    batch.record_count, batch.topic_partition, batch.attempts + 1, batch.base_sequence, exc,
                )
                self.metrics.retries += 1
                self.accumulator.reenqueue(batch, now)
                self._remove_from_in_flight(batch)
            elif code == DUPLICATE_SEQUENCE_NUMBER:
                self._succeed_batch(batch, -1, result.log_append_time)
            else:
                self.metrics.errors += 1
                self._fail_batch(batch, exc, result, adjust_sequence_numbers=batch.attempts < self.retries)
            if exc.invalid_metadata:
                self.metadata.request_update()
        else:
            self._succeed_batch(batch, result.base_offset, result.log_append_time)
        if self.guarantee_message_order:
            self.accumulator.unmute_partition(batch.topic_partition)

    def _exception_for(self, batch: ProducerBatch, result: PartitionResult) -> BrokerResponseError:
        cls = for_code(result.error_code)
        if result.error_code == TOPIC_AUTHORIZATION_FAILED:
            return cls(f"not authorized to write to topic {batch.topic_partition.topic}")
        if result.error_code == CLUSTER_AUTHORIZATION_FAILED:
            return cls("the producer is not authorized to do idempotent sends")
        if cls is UnknownServerError and result.error_code != -1:
            return cls(f"unknown error code {result.error_code}" + (f": {result.error_message}" if result.error_message else ""))
        return cls(result.error_message)

    def _succeed_batch(self, batch: ProducerBatch, base_offset: int, log_append_time: int) -> None:
        if self.transaction_manager is not None:
            self.transaction_manager.handle_completed_batch(batch, base_offset)
        if batch.done(base_offset, log_append_time, None):
            self._remove_from_in_flight(batch)  # _forget, one call less per batch
            self.accumulator.deallocate(batch)

    def _fail_batch(
        self, batch: ProducerBatch, exc: BaseException, result: PartitionResult | None, adjust_sequence_numbers: bool
    ) -> None:
        if batch.is_done():
            return  # already failed (expired) or aborted: its outcome was accounted for then
        if self.transaction_manager is not None:
            self.transaction_manager.handle_failed_batch(batch, exc, adjust_sequence_numbers)
        record_exceptions = None
        if result is not None and result.record_errors:
            errors = dict(result.record_errors)
            top_msg = str(exc)

            def record_exceptions(i: int) -> BaseException:
                if i in errors:
                    return InvalidRecordError(errors[i] or top_msg)
                return KafkaError(
                    "Failed to append record because it was part of a batch which had one or more invalid records"
                )

        if batch.done(-1, -1, exc, record_exceptions):
            self._forget(batch)
            self.accumulator.deallocate(batch)

    def _remove_from_in_flight(self, batch: ProducerBatch) -> None:
        lst = self.in_flight_batches.get(batch.topic_partition)
        if lst is not None:
            try:
                lst.remove(batch)
            except ValueError:
                pass
            if not lst:
                del self.in_flight_batches[batch.topic_partition]

    def _forget(self, batch: ProducerBatch) -> None:
        self._remove_from_in_flight(batch)

    def in_flight_count(self) -> int:
        return sum(len(v) for v in self.in_flight_batches.values())

    def __repr__(self) -> str:
        return f"Sender(running={self._running}, in_flight={self.in_flight_count()})"


#: what ``_kernel.handle_produce_response`` calls for any response it does not complete itself
_handle_produce_response_reference = Sender._handle_produce_response_reference

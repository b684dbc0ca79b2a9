"""The public consumer (Java: KafkaConsumer, classic protocol).

    from pykafka_client import KafkaConsumer

    with KafkaConsumer({"bootstrap.servers": "localhost:9092", "group.id": "g",
                        "value.deserializer": "str"}) as consumer:
        consumer.subscribe(["orders"])
        while True:
            for record in consumer.poll(1.0):
                print(record.partition, record.offset, record.value)

* Configuration uses Kafka's dotted names and defaults (:mod:`pykafka_client.consumer.config`).
  Public timeouts are float seconds; configuration keeps ``*.ms`` integers.
* Not thread-safe, like Java's: every method except :meth:`wakeup` must be called from one thread
  at a time; concurrent use raises :class:`~pykafka_client.errors.ConcurrentModificationError`.
  :meth:`wakeup` may be called from any thread: the blocked (or next) call raises WakeupException.
* All I/O happens in the calling thread inside ``poll()`` and the blocking calls, except heartbeats,
  which a background thread sends while the consumer is in a group.
* Deliberate deviation from Java: committing offsets for partitions not currently assigned raises
  IllegalStateError (Java allows it; it silently overwrites another member's progress).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Collection, Iterator, Mapping
from types import TracebackType
from typing import Any, Generic, TypeVar

from pykafka_client.client_utils import create_network_client
from pykafka_client.consumer.abstract_coordinator import GroupRebalanceConfig
from pykafka_client.consumer.assignors import get_assignor_instances
from pykafka_client.consumer.client_adapter import ConsumerClient
from pykafka_client.consumer.config import ConsumerConfig
from pykafka_client.consumer.consumer_coordinator import ConsumerCoordinator, OffsetCommitCallback
from pykafka_client.consumer.consumer_metadata import ConsumerMetadata
from pykafka_client.consumer.consumer_record import ConsumerRecords
from pykafka_client.consumer.fetcher import READ_COMMITTED, READ_UNCOMMITTED, FetchConfig, Fetcher
from pykafka_client.consumer.offset_fetcher import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, OffsetFetcher
from pykafka_client.consumer.rebalance_listener import ConsumerRebalanceListener
from pykafka_client.consumer.structs import ConsumerGroupMetadata
from pykafka_client.consumer.subscription_state import OffsetResetStrategy, SubscriptionState
from pykafka_client.errors import (
    ConcurrentModificationError,
    IllegalArgumentError,
    IllegalStateError,
    InvalidGroupIdError,
    KafkaTimeoutError,
    for_code,
)
from pykafka_client.network.cluster import PartitionInfo
from pykafka_client.network.consumer_network_client import ConsumerNetworkClient
from pykafka_client.network.metadata import Metadata
from pykafka_client.network.network_client import NetworkClient
from pykafka_client.protocol.messages.metadata_request import MetadataRequest
from pykafka_client.protocol.messages.metadata_response import MetadataResponse
from pykafka_client.serialization import ByteArrayDeserializer, resolve_deserializer
from pykafka_client.structs import Node, OffsetAndMetadata, OffsetAndTimestamp, TopicPartition
from pykafka_client.utils.arguments import list_argument
from pykafka_client.utils.time import SYSTEM_TIME, Time, Timer

log = logging.getLogger(__name__)

K = TypeVar("K")
V = TypeVar("V")

_NO_CURRENT_THREAD = -1
_DEFAULT_CLOSE_TIMEOUT_S = 30.0


def _to_ms(timeout: float | None, default_ms: int) -> int:
    if timeout is None:
        return default_ms
    if timeout < 0:
        raise IllegalArgumentError(f"timeout must not be negative: {timeout}")
    return int(timeout * 1000)


class _NotAvailable:
    """PollCondition: block only while no fetched data is waiting."""

    def __init__(self, fetcher: Fetcher) -> None:
        self.fetcher = fetcher

    def should_block(self) -> bool:
        return not self.fetcher.has_available_fetches()


class KafkaConsumer(Generic[K, V]):
    """See module docstring."""

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        *,
        key_deserializer: Any = None,
        value_deserializer: Any = None,
        time: Time = SYSTEM_TIME,
        client: ConsumerClient | None = None,
        metadata: Metadata | None = None,
        **overrides: Any,
    ) -> None:
        """``config`` maps Kafka's dotted names to values; keyword arguments name the same keys with
        ``_`` for ``.`` (``KafkaConsumer(bootstrap_servers="host:9092", group_id="g")``) and win over
        ``config``. ``client``/``metadata`` replace the network layer (tests); otherwise both are built
        from ``bootstrap.servers`` and the security settings."""
        if key_deserializer is not None:
            overrides["key_deserializer"] = key_deserializer
        if value_deserializer is not None:
            overrides["value_deserializer"] = value_deserializer
        self.config = cfg = ConsumerConfig(config, **overrides)
        self._time = time
        self._closed = False
        # True while close() runs: the consumer stays open for the rebalance callbacks close() triggers
        # (a commit_sync in on_partitions_revoked), as in Java; a nested close() is a no-op.
        self._closing = False
        self._current_thread = _NO_CURRENT_THREAD
        self._refcount = 0
        self._thread_lock = threading.Lock()
        self.group_id: str | None = cfg["group.id"]
        self.client_id = cfg["client.id"] or f"consumer-{self.group_id or ''}-{id(self) & 0xFFFF}"
        self._request_timeout_ms: int = cfg["request.timeout.ms"]
        self._default_api_timeout_ms: int = cfg["default.api.timeout.ms"]
        self._retry_backoff_ms: int = cfg["retry.backoff.ms"]
        self._isolation_level = READ_COMMITTED if cfg["isolation.level"] == "read_committed" else READ_UNCOMMITTED

        kd = resolve_deserializer("key.deserializer", cfg["key.deserializer"] or "bytes")
        vd = resolve_deserializer("value.deserializer", cfg["value.deserializer"] or "bytes")
        self._key_deserializer = kd
        self._value_deserializer = vd

        self.subscriptions = SubscriptionState(OffsetResetStrategy(cfg["auto.offset.reset"]))
        self._network_client: NetworkClient | None = None
        if client is None:
            cm = ConsumerMetadata(
                self.subscriptions,
                cfg["retry.backoff.ms"],
                cfg["retry.backoff.max.ms"],
                cfg["metadata.max.age.ms"],
                allow_auto_topic_creation=cfg["allow.auto.create.topics"],
                include_internal_topics=not cfg["exclude.internal.topics"],
            )
            self.metadata: Metadata = cm
            self._network_client = create_network_client(
                cfg, cm, client_id=self.client_id, max_in_flight_requests_per_connection=100, time=time
            )
            self._client: ConsumerClient = ConsumerNetworkClient(
                self._network_client, cm, time, self._retry_backoff_ms, self._request_timeout_ms
            )
        else:
            if metadata is None:
                raise IllegalArgumentError("a custom client needs its metadata")
            self._client = client
            self.metadata = metadata

        self.fetcher = Fetcher(
            self._client,
            self.metadata,
            self.subscriptions,
            FetchConfig(
                min_bytes=cfg["fetch.min.bytes"],
                max_bytes=cfg["fetch.max.bytes"],
                max_wait_ms=cfg["fetch.max.wait.ms"],
                fetch_size=cfg["max.partition.fetch.bytes"],
                max_poll_records=cfg["max.poll.records"],
                check_crcs=cfg["check.crcs"],
                isolation_level=self._isolation_level,
                client_rack=cfg["client.rack"],
                request_timeout_ms=self._request_timeout_ms,
                key_deserializer=None if type(kd) is ByteArrayDeserializer else kd.deserialize,
                value_deserializer=None if type(vd) is ByteArrayDeserializer else vd.deserialize,
            ),
            time,
        )
        self.offset_fetcher = OffsetFetcher(
            self._client,
            self.metadata,
            self.subscriptions,
            time,
            self._retry_backoff_ms,
            self._request_timeout_ms,
            self._isolation_level,
        )
        self.coordinator: ConsumerCoordinator | None = None
        if self.group_id is not None:
            self.coordinator = ConsumerCoordinator(
                GroupRebalanceConfig(
                    group_id=self.group_id,
                    group_instance_id=cfg["group.instance.id"],
                    session_timeout_ms=cfg["session.timeout.ms"],
                    rebalance_timeout_ms=cfg["rebalance.timeout.ms"],
                    heartbeat_interval_ms=cfg["heartbeat.interval.ms"],
                    retry_backoff_ms=cfg["retry.backoff.ms"],
                    retry_backoff_max_ms=cfg["retry.backoff.max.ms"],
                    request_timeout_ms=self._request_timeout_ms,
                    leave_group_on_close=cfg["internal.leave.group.on.close"],
                ),
                self._client,
                time,
                self.subscriptions,
                self.metadata,
                get_assignor_instances(cfg["partition.assignment.strategy"]),
                auto_commit_enabled=cfg["enable.auto.commit"],
                auto_commit_interval_ms=cfg["auto.commit.interval.ms"],
                client_rack=cfg["client.rack"] or None,
            )
            self.coordinator.include_internal_topics = not cfg["exclude.internal.topics"]

    # -- single-thread guard (Java acquire/release) ---------------------------------------------

    def _acquire(self) -> None:
        tid = threading.get_ident()
        with self._thread_lock:
            if self._current_thread not in (_NO_CURRENT_THREAD, tid):
                raise ConcurrentModificationError(
                    "KafkaConsumer is not safe for multi-threaded access: it is in use by another thread"
                )
            self._current_thread = tid
            self._refcount += 1

    def _release(self) -> None:
        with self._thread_lock:
            self._refcount -= 1
            if self._refcount == 0:
                self._current_thread = _NO_CURRENT_THREAD

    def _acquire_and_ensure_open(self) -> None:
        self._acquire()
        if self._closed:
            self._release()
            raise IllegalStateError("This consumer has already been closed.")

    def _guarded(self, fn: Callable[[], Any]) -> Any:
        self._acquire_and_ensure_open()
        try:
            return fn()
        finally:
            self._release()

    def _require_group(self, what: str) -> ConsumerCoordinator:
        if self.coordinator is None:
            raise InvalidGroupIdError(f"to use {what} you must provide a valid group.id in the consumer configuration")
        return self.coordinator

    def _timer(self, timeout: float | None) -> Timer:
        return self._time.timer(_to_ms(timeout, self._default_api_timeout_ms))

    # -- subscription --------------------------------------------------------------------------

    def subscribe(
        self,
        topics: Collection[str] | re.Pattern[str] | None = None,
        listener: ConsumerRebalanceListener | None = None,
        *,
        pattern: str | re.Pattern[str] | None = None,
    ) -> None:
        """Subscribe to topics (a collection of names) or to every topic matching a regex
        (``pattern=``, or a compiled pattern as ``topics``). Replaces any previous subscription;
        an empty collection unsubscribes. Mixing with :meth:`assign` raises IllegalStateError."""
        self._acquire_and_ensure_open()
        try:
            coordinator = self._require_group("subscribe")
            if listener is not None and not isinstance(listener, ConsumerRebalanceListener):
                if not all(hasattr(listener, m) for m in ("on_partitions_revoked", "on_partitions_assigned")):
                    raise IllegalArgumentError("listener must implement ConsumerRebalanceListener")
            if isinstance(topics, re.Pattern) or pattern is not None:
                if isinstance(topics, re.Pattern):
                    compiled = topics
                else:
                    if topics is not None:
                        raise IllegalArgumentError("give either topics or pattern, not both")
                    if isinstance(pattern, re.Pattern):
                        compiled = pattern
                    else:
                        if not pattern or not isinstance(pattern, str):
                            raise IllegalArgumentError("topic pattern to subscribe to cannot be empty")
                        try:
                            compiled = re.compile(pattern)
                        except re.error as e:
                            raise IllegalArgumentError(f"invalid topic pattern {pattern!r}: {e}") from e
                self.fetcher.clear_buffered_data_for_unassigned_partitions()
                self.subscriptions.subscribe_pattern(compiled, listener)
                coordinator.maybe_update_pattern_subscription()  # forget the previous pattern's match
                coordinator.request_rejoin("subscribed to a new pattern")
                self.metadata.request_update()
                return
            topic_list = list_argument(
                "subscribe", "topics", topics, str,
                "a list of topic names, e.g. ['orders'] (a bare str is not taken as one topic; use pattern= for a regex)",
            )
            if not topic_list:
                self._unsubscribe()
                return
            for t in topic_list:
                if not t.strip():
                    raise IllegalArgumentError(
                        f"topic collection to subscribe to cannot contain null or empty topic: {t!r}"
                    )
            self.fetcher.clear_buffered_data_for_unassigned_partitions()
            if self.subscriptions.subscribe(topic_list, listener):
                self.metadata.request_update_for_new_topics()
                coordinator.request_rejoin("subscription changed")
        finally:
            self._release()

    def assign(self, partitions: Collection[TopicPartition]) -> None:
        """Manually assign partitions (no group management). Empty = unassign."""
        self._acquire_and_ensure_open()
        try:
            given = list_argument(
                "assign", "partitions", partitions, tuple, "a list of TopicPartition, e.g. [TopicPartition('orders', 0)]"
            )
            if any(len(tp) != 2 for tp in given):
                raise TypeError(f"assign() expects partitions as a list of TopicPartition(topic, partition), got {given!r}")
            tps = [TopicPartition(tp[0], tp[1]) for tp in given]
            if not tps:
                self._unsubscribe()
                return
            for tp in tps:
                if not isinstance(tp.topic, str) or not tp.topic.strip():
                    raise IllegalArgumentError(f"topic partitions to assign cannot have null or empty topic: {tp}")
                if not isinstance(tp.partition, int) or tp.partition < 0:
                    raise IllegalArgumentError(f"invalid partition number in {tp}")
            if self.coordinator is not None:
                self.coordinator.maybe_auto_commit_offsets_async(self._time.hi_res_clock_ms())
            if self.subscriptions.assign_from_user(tps):
                self.fetcher.clear_buffered_data_for_unassigned_partitions()
                self.metadata.request_update_for_new_topics()
        finally:
            self._release()

    def unsubscribe(self) -> None:
        """Drop the subscription/assignment; leaves the group (revoking partitions)."""
        self._guarded(self._unsubscribe)

    def _unsubscribe(self) -> None:
        self.fetcher.fetch_buffer.clear()
        if self.coordinator is not None and self.subscriptions.has_auto_assigned_partitions():
            self.coordinator.on_leave_prepare()
            self.coordinator.maybe_leave_group("the consumer unsubscribed from all topics")
        self.subscriptions.unsubscribe()

    def subscription(self) -> set[str]:
        return set(self._guarded(self.subscriptions.subscription))

    def assignment(self) -> set[TopicPartition]:
        result: set[TopicPartition] = self._guarded(self.subscriptions.assigned_partitions)
        return result

    # -- polling ---------------------------------------------------------------------------------

    def poll(self, timeout: float = 0.0) -> ConsumerRecords[K, V]:
        """Records fetched for the assigned partitions, grouped by partition; waits up to
        ``timeout`` seconds for some. Drives the group (join, heartbeat bookkeeping, auto-commit)."""
        self._acquire_and_ensure_open()
        try:
            timer = self._time.timer(_to_ms(timeout, 0))
            if self.subscriptions.has_no_subscription_or_user_assignment():
                raise IllegalStateError("Consumer is not subscribed to any topics or assigned any partitions")
            trigger_wakeup = getattr(self._client, "maybe_trigger_wakeup", None)
            while True:
                if trigger_wakeup is not None:
                    trigger_wakeup()
                self._update_assignment_metadata_if_needed(timer, wait_for_join_group=False)
                records = self._poll_for_fetches(timer)
                if records:
                    # pipeline the next fetches before handing records to the application
                    if self.fetcher.send_fetches() > 0 or self._client.has_pending_requests():
                        self._client.poll_no_wakeup()
                    next_offsets = {}
                    for tp in records:
                        pos = self.subscriptions.position_or_none(tp)
                        if pos is not None:
                            next_offsets[tp] = OffsetAndMetadata(pos.offset, "", pos.offset_epoch)
                    return ConsumerRecords(records, next_offsets)
                timer.update()
                if timer.is_expired():
                    return ConsumerRecords({})
        finally:
            self._release()

    def _update_assignment_metadata_if_needed(self, timer: Timer, wait_for_join_group: bool = True) -> bool:
        if self.coordinator is not None and not self.coordinator.poll(timer, wait_for_join_group):
            return False
        return self._update_fetch_positions(timer)

    def _update_fetch_positions(self, timer: Timer) -> bool:
        if self.subscriptions.has_all_fetch_positions():
            return True
        if self.coordinator is not None and self.subscriptions.initializing_partitions():
            if not self.coordinator.refresh_committed_offsets_if_needed(timer):
                return False
        self.subscriptions.reset_initializing_positions()
        self.offset_fetcher.reset_positions_if_needed()
        return True

    def _poll_for_fetches(self, timer: Timer) -> dict[TopicPartition, list[Any]]:
        remaining = timer.remaining_ms()
        if self.coordinator is not None:
            remaining = min(remaining, self.coordinator.time_to_next_poll(timer.current_time_ms()))
        records = self.fetcher.collect_fetch()
        if records:
            return records
        self.fetcher.send_fetches()
        if not self.subscriptions.has_all_fetch_positions() and remaining > self._retry_backoff_ms:
            remaining = self._retry_backoff_ms
        poll_timer = self._time.timer(remaining)
        self._client.poll(poll_timer, _NotAvailable(self.fetcher))
        timer.update(poll_timer.current_time_ms())
        return self.fetcher.collect_fetch()

    def __iter__(self) -> Iterator[Any]:
        """Yield records forever (until close or an error), polling as needed."""
        while not self._closed:
            yield from self.poll(1.0)

    # -- positions -------------------------------------------------------------------------------

    def seek(self, partition: TopicPartition, offset: int | OffsetAndMetadata) -> None:
        """Fetch ``partition`` from ``offset`` at the next poll (negative -> IllegalArgumentError,
        unassigned -> IllegalStateError)."""
        self._acquire_and_ensure_open()
        try:
            off = offset.offset if isinstance(offset, OffsetAndMetadata) else offset
            if not isinstance(off, int) or isinstance(off, bool) or off < 0:
                raise IllegalArgumentError(f"seek offset must not be a negative number: {off!r}")
            tp = TopicPartition(partition[0], partition[1])
            log.info("seeking to offset %d for partition %s", off, tp)
            self.subscriptions.seek(tp, off)
        finally:
            self._release()

    def _seek_to(self, partitions: Collection[TopicPartition] | None, strategy: OffsetResetStrategy) -> None:
        self._acquire_and_ensure_open()
        try:
            tps = (
                self.subscriptions.assigned_partitions()
                if partitions is None
                else [TopicPartition(*tp) for tp in partitions]
            )
            for tp in tps:
                if not self.subscriptions.is_assigned(tp):
                    raise IllegalStateError(f"No current assignment for partition {tp}")
            for tp in tps:
                self.subscriptions.request_offset_reset(tp, strategy)
        finally:
            self._release()

    def seek_to_beginning(self, partitions: Collection[TopicPartition] | None = None) -> None:
        self._seek_to(partitions, OffsetResetStrategy.EARLIEST)

    def seek_to_end(self, partitions: Collection[TopicPartition] | None = None) -> None:
        self._seek_to(partitions, OffsetResetStrategy.LATEST)

    def position(self, partition: TopicPartition, timeout: float | None = None) -> int:
        """The offset of the next record to fetch; resolves it (committed offset or reset) if needed."""
        self._acquire_and_ensure_open()
        try:
            tp = TopicPartition(partition[0], partition[1])
            if not self.subscriptions.is_assigned(tp):
                raise IllegalStateError(
                    f"You can only check the position for partitions assigned to this consumer: {tp}"
                )
            timer = self._timer(timeout)
            while True:
                pos = self.subscriptions.position(tp)
                if pos is not None and self.subscriptions.has_valid_position(tp):
                    return pos.offset
                self._update_fetch_positions(timer)
                self._client.poll(timer)
                timer.update()
                if timer.is_expired():
                    raise KafkaTimeoutError(
                        f"timeout of {timer.timeout_ms()}ms expired before the position for {tp} could be determined"
                    )
        finally:
            self._release()

    # -- commits ---------------------------------------------------------------------------------

    def _normalize_offsets(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        if offsets is None:
            return self.subscriptions.all_consumed()
        out: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp, om in offsets.items():
            tp2 = TopicPartition(tp[0], tp[1])
            if isinstance(om, OffsetAndMetadata):
                out[tp2] = om
            elif isinstance(om, int) and not isinstance(om, bool) and om >= 0:
                out[tp2] = OffsetAndMetadata(om)
            else:
                raise IllegalArgumentError(f"invalid offset {om!r} for {tp2}")
            if not self.subscriptions.is_assigned(tp2):
                raise IllegalStateError(
                    f"cannot commit offsets for partition {tp2}: it is not assigned to this consumer"
                )
        return out

    def commit_sync(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None, timeout: float | None = None
    ) -> None:
        """Commit ``offsets`` (default: the current positions) and wait. Raises CommitFailedError,
        RebalanceInProgressClientError, KafkaTimeoutError, ..."""
        self._acquire_and_ensure_open()
        try:
            coordinator = self._require_group("commit_sync")
            normalized = self._normalize_offsets(offsets)
            timer = self._timer(timeout)
            if not coordinator.commit_offsets_sync(normalized, timer):
                raise KafkaTimeoutError(
                    f"timeout of {timer.timeout_ms()}ms expired before successfully committing offsets"
                )
        finally:
            self._release()

    def commit_async(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
        callback: OffsetCommitCallback | None = None,
    ) -> None:
        """Commit without waiting; ``callback(offsets, exception_or_None)`` runs in a later poll()."""
        self._acquire_and_ensure_open()
        try:
            coordinator = self._require_group("commit_async")
            coordinator.commit_offsets_async(self._normalize_offsets(offsets), callback)
        finally:
            self._release()

    def committed(
        self, partitions: Collection[TopicPartition], timeout: float | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        self._acquire_and_ensure_open()
        try:
            coordinator = self._require_group("committed")
            tps = {TopicPartition(tp[0], tp[1]) for tp in partitions}
            timer = self._timer(timeout)
            result = coordinator.fetch_committed_offsets(tps, timer)
            if result is None:
                raise KafkaTimeoutError(f"timeout of {timer.timeout_ms()}ms expired before fetching committed offsets")
            return {tp: result.get(tp) for tp in tps}
        finally:
            self._release()

    # -- pause / resume ------------------------------------------------------------------------

    def pause(self, partitions: Collection[TopicPartition]) -> None:
        def run() -> None:
            for tp in partitions:
                self.subscriptions.pause(TopicPartition(tp[0], tp[1]))

        self._guarded(run)

    def resume(self, partitions: Collection[TopicPartition]) -> None:
        def run() -> None:
            for tp in partitions:
                self.subscriptions.resume(TopicPartition(tp[0], tp[1]))

        self._guarded(run)

    def paused(self) -> set[TopicPartition]:
        result: set[TopicPartition] = self._guarded(self.subscriptions.paused_partitions)
        return result

    # -- offsets look-ups ------------------------------------------------------------------------

    def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int], timeout: float | None = None
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        self._acquire_and_ensure_open()
        try:
            query: dict[TopicPartition, int] = {}
            for tp, ts in timestamps.items():
                if not isinstance(ts, int) or ts < 0:
                    raise IllegalArgumentError(f"the target time for partition {tp} is {ts}: it should be non-negative")
                query[TopicPartition(tp[0], tp[1])] = ts
            data = self.offset_fetcher.fetch_offsets_by_times(query, self._timer(timeout))
            return {
                tp: None
                if d.offset is None
                else OffsetAndTimestamp(d.offset, d.timestamp if d.timestamp is not None else -1, d.leader_epoch)
                for tp, d in ((tp, data[tp]) for tp in query)
            }
        finally:
            self._release()

    def beginning_offsets(
        self, partitions: Collection[TopicPartition], timeout: float | None = None
    ) -> dict[TopicPartition, int]:
        return self._guarded(  # type: ignore[no-any-return]
            lambda: self.offset_fetcher.beginning_or_end_offsets(
                [TopicPartition(tp[0], tp[1]) for tp in partitions], EARLIEST_TIMESTAMP, self._timer(timeout)
            )
        )

    def end_offsets(
        self, partitions: Collection[TopicPartition], timeout: float | None = None
    ) -> dict[TopicPartition, int]:
        """The offset after the last record (the LSO with read_committed)."""
        return self._guarded(  # type: ignore[no-any-return]
            lambda: self.offset_fetcher.beginning_or_end_offsets(
                [TopicPartition(tp[0], tp[1]) for tp in partitions], LATEST_TIMESTAMP, self._timer(timeout)
            )
        )

    # -- metadata ----------------------------------------------------------------------------------

    def _fetch_topic_metadata(self, topics: list[str] | None, timer: Timer) -> dict[str, list[PartitionInfo]]:
        while True:
            node = self._client.least_loaded_node()
            if node is None:
                self._client.await_metadata_update(timer)
            else:
                request = MetadataRequest(
                    topics=None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
                    allow_auto_topic_creation=False,
                )
                future = self._client.send(node, request)
                if self._client.poll_future(future, timer) and future.succeeded():
                    body = future.value().response_body
                    if isinstance(body, MetadataResponse):
                        return self._parse_topic_metadata(body)
                elif future.is_done() and not getattr(future.exception(), "retriable", False):
                    raise future.exception()
            timer.update()
            if timer.is_expired():
                raise KafkaTimeoutError(f"timeout of {timer.timeout_ms()}ms expired while fetching topic metadata")
            timer.sleep(self._retry_backoff_ms)

    def _parse_topic_metadata(self, body: MetadataResponse) -> dict[str, list[PartitionInfo]]:
        brokers = {b.node_id: Node(b.node_id, b.host, b.port, b.rack) for b in body.brokers}
        out: dict[str, list[PartitionInfo]] = {}
        for t in body.topics:
            if t.name is None:
                continue
            if t.error_code not in (0, 5):  # LEADER_NOT_AVAILABLE still lists partitions
                if t.error_code == 3:  # UNKNOWN_TOPIC_OR_PARTITION
                    continue
                raise for_code(t.error_code)(f"metadata for topic {t.name}")
            if self.config["exclude.internal.topics"] and t.is_internal:
                continue
            out[t.name] = [
                PartitionInfo(
                    t.name,
                    p.partition_index,
                    brokers.get(p.leader_id),
                    p.leader_epoch if p.leader_epoch >= 0 else None,
                    tuple(p.replica_nodes),
                    tuple(p.isr_nodes),
                    tuple(p.offline_replicas),
                    p.error_code,
                )
                for p in sorted(t.partitions, key=lambda p: p.partition_index)
            ]
        return out

    def list_topics(self, timeout: float | None = None) -> dict[str, list[PartitionInfo]]:
        """Every topic the user may describe, with its partitions."""
        return self._guarded(lambda: self._fetch_topic_metadata(None, self._timer(timeout)))  # type: ignore[no-any-return]

    def partitions_for(self, topic: str, timeout: float | None = None) -> list[PartitionInfo]:
        """Partitions of ``topic`` (empty when it does not exist)."""

        def run() -> list[PartitionInfo]:
            if not isinstance(topic, str) or not topic:
                raise IllegalArgumentError("topic cannot be empty")
            known = self.metadata.fetch().partitions_for_topic(topic)
            if known:
                return sorted(known, key=lambda p: p.partition)
            return self._fetch_topic_metadata([topic], self._timer(timeout)).get(topic, [])

        return self._guarded(run)  # type: ignore[no-any-return]

    # -- group ---------------------------------------------------------------------------------

    def group_metadata(self) -> ConsumerGroupMetadata:
        """What a transactional producer needs (send_offsets_to_transaction)."""

        def run() -> ConsumerGroupMetadata:
            coordinator = self._require_group("group_metadata")
            gen = coordinator.generation_snapshot()
            return ConsumerGroupMetadata(
                self.group_id or "", gen.generation_id, gen.member_id, self.config["group.instance.id"]
            )

        return self._guarded(run)  # type: ignore[no-any-return]

    def enforce_rebalance(self, reason: str | None = None) -> None:
        """Ask for a rebalance at the next poll (no-op if one is already in progress)."""

        def run() -> None:
            if self.coordinator is None:
                raise IllegalStateError("Tried to force a rebalance but consumer does not have a group.")
            self.coordinator.request_rejoin(reason or "rebalance enforced by user")

        self._guarded(run)

    def current_lag(self, partition: TopicPartition) -> int | None:
        """Lag from the last fetch response (None if unknown), without I/O."""
        tp = TopicPartition(partition[0], partition[1])
        return self._guarded(lambda: self.subscriptions.partition_lag(tp, self._isolation_level == READ_COMMITTED))  # type: ignore[no-any-return]

    # -- lifecycle -------------------------------------------------------------------------------

    def wakeup(self) -> None:
        """Interrupt a blocking call from any thread: it (or the next one) raises WakeupException."""
        self._client.wakeup()

    def close(self, timeout: float | None = _DEFAULT_CLOSE_TIMEOUT_S) -> None:
        """Commit (if auto-commit), leave the group and close connections, within ``timeout``."""
        self._acquire()
        try:
            if self._closed or self._closing:
                return
            self._closing = True
            timer = self._time.timer(_to_ms(timeout, int(_DEFAULT_CLOSE_TIMEOUT_S * 1000)))
            try:
                if self.coordinator is not None:
                    # still open here: the revoke callback may commit (Java closes with the flag still unset)
                    self.coordinator.close(timer)
            except Exception as e:
                log.warning("error while closing the group coordinator: %s", e)
            finally:
                self._closed = True
                self.fetcher.close()
                if self._network_client is not None:
                    closer = getattr(self._client, "close", None)
                    if closer is not None:
                        closer()
                    else:
                        self._network_client.close()
                self.metadata.close()
        finally:
            self._release()

    def __enter__(self) -> KafkaConsumer[K, V]:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

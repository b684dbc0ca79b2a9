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
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Generic, TypeVar, overload

from pykafka_client.consumer import api_arguments as args
from pykafka_client.consumer.abstract_coordinator import GroupRebalanceConfig
from pykafka_client.consumer.assignors import get_assignor_instances
from pykafka_client.consumer.client_adapter import ConsumerClient, timeout_error
from pykafka_client.consumer.config import ConsumerConfig
from pykafka_client.consumer.consumer_coordinator import ConsumerCoordinator, OffsetCommitCallback
from pykafka_client.consumer.consumer_group_coordinator import ConsumerGroupCoordinator
from pykafka_client.consumer.consumer_metadata import ConsumerMetadata
from pykafka_client.consumer.consumer_record import ConsumerRecord, ConsumerRecords
from pykafka_client.consumer.consumer_utils import create_consumer_network_client
from pykafka_client.consumer.fetcher import READ_COMMITTED, READ_UNCOMMITTED, FetchConfig, Fetcher
from pykafka_client.consumer.offset_fetcher import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, OffsetFetcher
from pykafka_client.consumer.position_validator import PositionValidator
from pykafka_client.consumer.rebalance_listener import ConsumerRebalanceListener
from pykafka_client.consumer.single_thread_guard import SingleThreadGuard
from pykafka_client.consumer.structs import ConsumerGroupMetadata
from pykafka_client.consumer.subscription_state import FetchPosition, OffsetResetStrategy, SubscriptionState
from pykafka_client.consumer.topic_metadata_fetcher import TopicMetadataFetcher
from pykafka_client.errors import (
    IllegalArgumentError,
    IllegalStateError,
    InvalidGroupIdError,
    WakeupException,
)
from pykafka_client.network.cluster import PartitionInfo
from pykafka_client.network.network_client import NetworkClient
from pykafka_client.serialization import Deserializer, resolve_deserializer
from pykafka_client.structs import OffsetAndMetadata, OffsetAndTimestamp, TopicPartition
from pykafka_client.utils.time import SYSTEM_TIME, Time, Timer

log = logging.getLogger(__name__)

K = TypeVar("K")
V = TypeVar("V")
_T = TypeVar("_T")

_DEFAULT_CLOSE_TIMEOUT_S = 30.0


class _NotAvailable:
    """PollCondition: block only while no fetched data is waiting."""

    def __init__(self, fetcher: Fetcher) -> None:
        self.fetcher = fetcher

    def should_block(self) -> bool:
        return not self.fetcher.has_available_fetches()


class KafkaConsumer(Generic[K, V]):
    """See module docstring. ``K`` and ``V`` are the types of record keys and values, inferred from the
    ``key_deserializer`` / ``value_deserializer`` objects. Without such an object a side is ``bytes | None``
    when no config mapping is given, and ``Any`` when one is: the mapping may name a deserializer
    ("value.deserializer": "str") that a type checker cannot see. Pass the object instead
    (``value_deserializer=StringDeserializer()``) or state the types on the variable
    (``consumer: KafkaConsumer[str | None, str | None] = KafkaConsumer(config)``)."""

    # Test seams (time, client, metadata) are keyword arguments of the implementation only.
    # Without a config mapping, a side without a deserializer object is bytes; with one, the mapping may
    # name a deserializer ("value.deserializer": "str") that a type checker cannot see, so that side is
    # Any (never a type that contradicts the records at run time) and an annotation states it.
    @overload
    def __init__(
        self: KafkaConsumer[bytes | None, bytes | None],
        config: None = None,
        *,
        key_deserializer: None = None,
        value_deserializer: None = None,
        **overrides: Any,
    ) -> None: ...

    @overload
    def __init__(
        self: KafkaConsumer[K, bytes | None],
        config: None = None,
        *,
        key_deserializer: Deserializer[K],
        value_deserializer: None = None,
        **overrides: Any,
    ) -> None: ...

    @overload
    def __init__(
        self: KafkaConsumer[bytes | None, V],
        config: None = None,
        *,
        key_deserializer: None = None,
        value_deserializer: Deserializer[V],
        **overrides: Any,
    ) -> None: ...

    @overload
    def __init__(
        self: KafkaConsumer[K, V],
        config: Mapping[str, Any] | None = None,
        *,
        key_deserializer: Deserializer[K],
        value_deserializer: Deserializer[V],
        **overrides: Any,
    ) -> None: ...

    @overload
    def __init__(
        self: KafkaConsumer[K, Any],
        config: Mapping[str, Any],
        *,
        key_deserializer: Deserializer[K],
        value_deserializer: None = None,
        **overrides: Any,
    ) -> None: ...

    @overload
    def __init__(
        self: KafkaConsumer[Any, V],
        config: Mapping[str, Any],
        *,
        key_deserializer: None = None,
        value_deserializer: Deserializer[V],
        **overrides: Any,
    ) -> None: ...

    @overload
    def __init__(  # a config mapping, or a deserializer name ("str"), class or function: typed Any
        self: KafkaConsumer[Any, Any],
        config: Mapping[str, Any] | None = None,
        *,
        key_deserializer: str | type | Callable[[bytes], Any] | Deserializer[Any] | None = None,
        value_deserializer: str | type | Callable[[bytes], Any] | Deserializer[Any] | None = None,
        **overrides: Any,
    ) -> None: ...

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        *,
        key_deserializer: Any = None,
        value_deserializer: Any = None,
        time: Time = SYSTEM_TIME,
        client: ConsumerClient | None = None,
        metadata: ConsumerMetadata | None = None,
        **overrides: Any,
    ) -> None:
        """``config`` maps Kafka's dotted names to values; keyword arguments name the same keys with
        ``_`` for ``.`` (``KafkaConsumer(bootstrap_servers="host:9092", group_id="g")``) and win over
        ``config``. ``client``/``metadata`` replace the network layer (tests; the consumer adopts the
        metadata, which then serves this consumer's subscriptions); otherwise both are built from
        ``bootstrap.servers`` and the security settings."""
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
        self._guard = SingleThreadGuard()
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
            self.metadata: ConsumerMetadata
            self._client: ConsumerClient
            self.metadata, self._network_client, self._client = create_consumer_network_client(
                cfg, self.subscriptions, self.client_id, time
            )
        else:
            if metadata is None:
                raise IllegalArgumentError("a custom client needs its metadata")
            self._client = client
            metadata.subscriptions = self.subscriptions
            self.metadata = metadata

        self.fetcher = Fetcher(
            self._client,
            self.metadata,
            self.subscriptions,
            FetchConfig.from_consumer_config(cfg, kd, vd),
            time,
        )
        self.topic_metadata_fetcher = TopicMetadataFetcher(
            self._client, self._retry_backoff_ms, exclude_internal_topics=cfg["exclude.internal.topics"]
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
        self.position_validator = PositionValidator(
            self._client, self.metadata, self.subscriptions, time, self._retry_backoff_ms, self._request_timeout_ms
        )
        self.coordinator: ConsumerCoordinator | None = None
        if self.group_id is not None:
            coordinator_args: tuple[Any, ...] = (
                GroupRebalanceConfig.from_consumer_config(cfg, self.group_id),
                self._client,
                time,
                self.subscriptions,
                self.metadata,
                get_assignor_instances(cfg["partition.assignment.strategy"]),
            )
            coordinator_kwargs: dict[str, Any] = {
                "auto_commit_enabled": cfg["enable.auto.commit"],
                "auto_commit_interval_ms": cfg["auto.commit.interval.ms"],
                "client_rack": cfg["client.rack"] or None,
            }
            if cfg["group.protocol"] == "consumer":
                self.coordinator = ConsumerGroupCoordinator(
                    *coordinator_args, server_assignor=cfg["group.remote.assignor"], **coordinator_kwargs
                )
            else:
                self.coordinator = ConsumerCoordinator(*coordinator_args, **coordinator_kwargs)
            self.coordinator.include_internal_topics = not cfg["exclude.internal.topics"]

    # -- single-thread guard (Java acquire/release) ---------------------------------------------

    @contextmanager
    def _open_in_this_thread(self) -> Iterator[None]:
        """Java acquireAndEnsureOpen ... release around every public method but wakeup()."""
        self._guard.acquire()
        try:
            if self._closed:
                raise IllegalStateError("This consumer has already been closed.")
            yield
        finally:
            self._guard.release()

    def _require_group(self, what: str) -> ConsumerCoordinator:
        if self.coordinator is None:
            raise InvalidGroupIdError(f"to use {what} you must provide a valid group.id in the consumer configuration")
        return self.coordinator

    def _timer(self, timeout: float | None) -> Timer:
        return self._time.timer(args.to_ms(timeout, self._default_api_timeout_ms))

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
        with self._open_in_this_thread():
            coordinator = self._require_group("subscribe")
            args.check_listener(listener)
            compiled = args.subscription_pattern(topics, pattern)
            if compiled is not None:
                self.fetcher.clear_buffered_data_for_unassigned_partitions()
                self.subscriptions.subscribe_pattern(compiled, listener)
                coordinator.maybe_update_pattern_subscription()  # forget the previous pattern's match
                coordinator.request_rejoin("subscribed to a new pattern")
                self.metadata.request_update()
                return
            topic_list = args.topic_names(topics if not isinstance(topics, re.Pattern) else None)
            if not topic_list:
                self._unsubscribe()
                return
            self.fetcher.clear_buffered_data_for_unassigned_partitions()
            if self.subscriptions.subscribe(topic_list, listener):
                self.metadata.request_update_for_new_topics()
                coordinator.request_rejoin("subscription changed")

    def assign(self, partitions: Collection[TopicPartition]) -> None:
        """Manually assign partitions (no group management). Empty = unassign."""
        with self._open_in_this_thread():
            tps = args.partitions_to_assign(partitions)
            if not tps:
                self._unsubscribe()
                return
            if self.coordinator is not None:
                self.coordinator.maybe_auto_commit_offsets_async(self._time.hi_res_clock_ms())
            if self.subscriptions.assign_from_user(tps):
                self.fetcher.clear_buffered_data_for_unassigned_partitions()
                self.metadata.request_update_for_new_topics()

    def unsubscribe(self) -> None:
        """Drop the subscription/assignment; leaves the group (revoking partitions)."""
        with self._open_in_this_thread():
            self._unsubscribe()

    def _unsubscribe(self) -> None:
        self.fetcher.fetch_buffer.clear()
        if self.coordinator is not None and self.subscriptions.has_auto_assigned_partitions():
            self.coordinator.on_leave_prepare()
            self.coordinator.maybe_leave_group("the consumer unsubscribed from all topics")
        self.subscriptions.unsubscribe()

    def subscription(self) -> set[str]:
        with self._open_in_this_thread():
            return set(self.subscriptions.subscription())

    def assignment(self) -> set[TopicPartition]:
        with self._open_in_this_thread():
            return self.subscriptions.assigned_partitions()

    # -- polling ---------------------------------------------------------------------------------

    def poll(self, timeout: float = 0.0) -> ConsumerRecords[K, V]:
        """Records fetched for the assigned partitions, grouped by partition; waits up to
        ``timeout`` seconds for some. Drives the group (join, heartbeat bookkeeping, auto-commit)."""
        records = self.poll_with(timeout, self.fetcher.collect_fetch)
        if not records:
            return ConsumerRecords({})
        next_offsets = {}
        for tp in records:
            pos = self.subscriptions.position_or_none(tp)
            if pos is not None:
                next_offsets[tp] = OffsetAndMetadata(pos.offset, "", pos.offset_epoch)
        return ConsumerRecords(records, next_offsets)

    def poll_with(
        self, timeout: float, collect: Callable[[], dict[TopicPartition, list[_T]]]
    ) -> dict[TopicPartition, list[_T]]:
        """:meth:`poll`'s loop (group, positions, fetches, waiting up to ``timeout`` seconds) with ``collect``
        taking the buffered data: ``fetcher.collect_fetch`` for records (what :meth:`poll` does), or
        ``fetcher.collect_columns`` (:func:`~pykafka_client.consumer.column_fetch.poll_columns`). Empty when
        ``timeout`` passes without data. Same rules as :meth:`poll` (one thread, raises once closed)."""
        with self._open_in_this_thread():
            timer = self._time.timer(args.to_ms(timeout, 0))
            if self.subscriptions.has_no_subscription_or_user_assignment():
                raise IllegalStateError("Consumer is not subscribed to any topics or assigned any partitions")
            while True:
                self._client.maybe_trigger_wakeup()
                self._update_assignment_metadata_if_needed(timer, wait_for_join_group=False)
                records = self._poll_for_fetches(timer, collect)
                if records:
                    # pipeline the next fetches before handing records to the application
                    if self.fetcher.send_fetches() > 0 or self._client.has_pending_requests():
                        self._client.poll_no_wakeup()
                    return records
                timer.update()
                if timer.is_expired():
                    return {}

    def _update_assignment_metadata_if_needed(self, timer: Timer, wait_for_join_group: bool = True) -> bool:
        if self.coordinator is not None and not self.coordinator.poll(timer, wait_for_join_group):
            return False
        return self._update_fetch_positions(timer)

    def _update_fetch_positions(self, timer: Timer) -> bool:
        # positions whose leader changed are validated (KIP-320); may raise LogTruncationError
        self.position_validator.validate_positions_if_needed()
        if self.subscriptions.has_all_fetch_positions():
            return True
        if self.coordinator is not None and self.subscriptions.initializing_partitions():
            if not self.coordinator.refresh_committed_offsets_if_needed(timer):
                return False
        self.subscriptions.reset_initializing_positions()
        self.offset_fetcher.reset_positions_if_needed()
        return True

    def _poll_for_fetches(
        self, timer: Timer, collect: Callable[[], dict[TopicPartition, list[_T]]]
    ) -> dict[TopicPartition, list[_T]]:
        remaining = timer.remaining_ms()
        if self.coordinator is not None:
            remaining = min(remaining, self.coordinator.time_to_next_poll(timer.current_time_ms()))
        records = collect()
        if records:
            return records
        self.fetcher.send_fetches()
        if not self.subscriptions.has_all_fetch_positions() and remaining > self._retry_backoff_ms:
            remaining = self._retry_backoff_ms
        poll_timer = self._time.timer(remaining)
        self._client.poll(poll_timer, _NotAvailable(self.fetcher))
        timer.update(poll_timer.current_time_ms())
        return collect()

    def __iter__(self) -> Iterator[ConsumerRecord[K, V]]:
        """Yield records forever (until close or an error), polling as needed."""
        while not self._closed:
            yield from self.poll(1.0)

    # -- positions -------------------------------------------------------------------------------

    def seek(self, partition: TopicPartition, offset: int | OffsetAndMetadata) -> None:
        """Fetch ``partition`` from ``offset`` at the next poll (negative -> IllegalArgumentError,
        unassigned -> IllegalStateError). An ``OffsetAndMetadata`` with a leader epoch (from a commit or a
        record) is first validated against the current leader, so a truncated log is detected (KIP-320)."""
        with self._open_in_this_thread():
            off = args.seek_offset(offset)
            tp = TopicPartition(partition[0], partition[1])
            epoch = offset.leader_epoch if isinstance(offset, OffsetAndMetadata) else None
            if epoch is None:
                log.info("seeking to offset %d for partition %s", off, tp)
                self.subscriptions.seek(tp, off)
                return
            # An offset with its leader epoch is validated against the current leader first (KIP-320).
            log.info("seeking to offset %d (leader epoch %d) for partition %s", off, epoch, tp)
            if epoch >= 0:
                self.metadata.update_last_seen_epoch_if_newer(tp, epoch)
            position = FetchPosition(off, epoch).with_leader(self.metadata.current_leader(tp))
            self.subscriptions.seek_unvalidated(tp, position)

    def _seek_to(self, partitions: Collection[TopicPartition] | None, strategy: OffsetResetStrategy) -> None:
        with self._open_in_this_thread():
            tps = self.subscriptions.assigned_partitions() if partitions is None else args.topic_partitions(partitions)
            for tp in tps:
                if not self.subscriptions.is_assigned(tp):
                    raise IllegalStateError(f"No current assignment for partition {tp}")
            for tp in tps:
                self.subscriptions.request_offset_reset(tp, strategy)

    def seek_to_beginning(self, partitions: Collection[TopicPartition] | None = None) -> None:
        self._seek_to(partitions, OffsetResetStrategy.EARLIEST)

    def seek_to_end(self, partitions: Collection[TopicPartition] | None = None) -> None:
        self._seek_to(partitions, OffsetResetStrategy.LATEST)

    def position(self, partition: TopicPartition, timeout: float | None = None) -> int:
        """The offset of the next record to fetch; resolves it (committed offset or reset) if needed.
        For a partition whose topic does not exist this waits the whole timeout, as Java does."""
        with self._open_in_this_thread():
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
                    raise timeout_error(
                        self._client,
                        f"timeout of {timer.timeout_ms()}ms expired before the position for {tp} could be determined",
                    )

    # -- commits ---------------------------------------------------------------------------------

    def _offsets_to_commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        if offsets is None:
            return self.subscriptions.all_consumed()
        out = args.commit_offsets(offsets)
        for tp in out:
            if not self.subscriptions.is_assigned(tp):
                raise IllegalStateError(
                    f"cannot commit offsets for partition {tp}: it is not assigned to this consumer"
                )
        return out

    def commit_sync(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None, timeout: float | None = None
    ) -> None:
        """Commit ``offsets`` (default: the current positions) and wait. Raises CommitFailedError,
        RebalanceInProgressClientError, KafkaTimeoutError, ..."""
        with self._open_in_this_thread():
            coordinator = self._require_group("commit_sync")
            normalized = self._offsets_to_commit(offsets)
            timer = self._timer(timeout)
            if not coordinator.commit_offsets_sync(normalized, timer):
                raise timeout_error(
                    self._client, f"timeout of {timer.timeout_ms()}ms expired before successfully committing offsets"
                )

    def commit_async(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
        callback: OffsetCommitCallback | None = None,
    ) -> None:
        """Commit without waiting; ``callback(offsets, exception_or_None)`` runs in a later poll()."""
        with self._open_in_this_thread():
            coordinator = self._require_group("commit_async")
            coordinator.commit_offsets_async(self._offsets_to_commit(offsets), callback)

    def committed(
        self, partitions: Collection[TopicPartition], timeout: float | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The last committed offset of each partition (None when there is none, which includes a
        partition whose topic does not exist)."""
        with self._open_in_this_thread():
            coordinator = self._require_group("committed")
            tps = set(args.topic_partitions(partitions))
            timer = self._timer(timeout)
            result = coordinator.fetch_committed_offsets(tps, timer)
            if result is None:
                raise timeout_error(
                    self._client, f"timeout of {timer.timeout_ms()}ms expired before fetching committed offsets"
                )
            return {tp: result.get(tp) for tp in tps}

    # -- pause / resume ------------------------------------------------------------------------

    def pause(self, partitions: Collection[TopicPartition]) -> None:
        with self._open_in_this_thread():
            for tp in args.topic_partitions(partitions):
                self.subscriptions.pause(tp)

    def resume(self, partitions: Collection[TopicPartition]) -> None:
        with self._open_in_this_thread():
            for tp in args.topic_partitions(partitions):
                self.subscriptions.resume(tp)

    def paused(self) -> set[TopicPartition]:
        with self._open_in_this_thread():
            return self.subscriptions.paused_partitions()

    # -- offsets look-ups ------------------------------------------------------------------------
    # Java semantics: a partition without a known leader (its topic does not exist, or is being
    # created) is retried until the timeout expires, then KafkaTimeoutError names the partitions.

    def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int], timeout: float | None = None
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        with self._open_in_this_thread():
            return self.offset_fetcher.offsets_for_times(args.target_times(timestamps), self._timer(timeout))

    def beginning_offsets(
        self, partitions: Collection[TopicPartition], timeout: float | None = None
    ) -> dict[TopicPartition, int]:
        with self._open_in_this_thread():
            return self.offset_fetcher.beginning_or_end_offsets(
                args.topic_partitions(partitions), EARLIEST_TIMESTAMP, self._timer(timeout)
            )

    def end_offsets(
        self, partitions: Collection[TopicPartition], timeout: float | None = None
    ) -> dict[TopicPartition, int]:
        """The offset after the last record (the LSO with read_committed)."""
        with self._open_in_this_thread():
            return self.offset_fetcher.beginning_or_end_offsets(
                args.topic_partitions(partitions), LATEST_TIMESTAMP, self._timer(timeout)
            )

    # -- metadata ----------------------------------------------------------------------------------

    def list_topics(self, timeout: float | None = None) -> dict[str, list[PartitionInfo]]:
        """Every topic the user may describe, with its partitions (one metadata round trip)."""
        with self._open_in_this_thread():
            return self.topic_metadata_fetcher.get_all_topic_metadata(self._timer(timeout))

    def partitions_for(self, topic: str, timeout: float | None = None) -> list[PartitionInfo]:
        """Partitions of ``topic``; empty when it does not exist, after one metadata round trip.
        The request may create the topic when ``allow.auto.create.topics`` is on (as in Java) and
        the broker creates topics on metadata requests."""
        with self._open_in_this_thread():
            if not isinstance(topic, str) or not topic:
                raise IllegalArgumentError("topic cannot be empty")
            known = self.metadata.fetch().partitions_for_topic(topic)
            if known:
                return sorted(known, key=lambda p: p.partition)
            parts = self.topic_metadata_fetcher.get_topic_metadata(
                topic, self.config["allow.auto.create.topics"], self._timer(timeout)
            )
            return parts if parts is not None else []

    # -- group ---------------------------------------------------------------------------------

    def group_metadata(self) -> ConsumerGroupMetadata:
        """What a transactional producer needs (send_offsets_to_transaction)."""
        with self._open_in_this_thread():
            coordinator = self._require_group("group_metadata")
            gen = coordinator.generation_snapshot()
            return ConsumerGroupMetadata(
                self.group_id or "", gen.generation_id, gen.member_id, self.config["group.instance.id"]
            )

    def enforce_rebalance(self, reason: str | None = None) -> None:
        """Ask for a rebalance at the next poll (no-op if one is already in progress). With
        ``group.protocol=consumer`` this only logs a warning, as Java: the broker decides rebalances."""
        with self._open_in_this_thread():
            if self.coordinator is None:
                raise IllegalStateError("Tried to force a rebalance but consumer does not have a group.")
            if isinstance(self.coordinator, ConsumerGroupCoordinator):
                # Java (AsyncKafkaConsumer): the broker drives rebalances in the consumer protocol
                log.warning("Operation not supported in new consumer group protocol")
                return
            self.coordinator.request_rejoin(reason or "rebalance enforced by user")

    def current_lag(self, partition: TopicPartition) -> int | None:
        """Lag from the last fetch response (None if unknown), without I/O."""
        tp = TopicPartition(partition[0], partition[1])
        with self._open_in_this_thread():
            return self.subscriptions.partition_lag(tp, self._isolation_level == READ_COMMITTED)

    # -- lifecycle -------------------------------------------------------------------------------

    def wakeup(self) -> None:
        """Interrupt a blocking call from any thread: it (or the next one) raises WakeupException."""
        self._client.wakeup()

    def clear_wakeup(self) -> bool:
        """Drop a :meth:`wakeup` that no blocking call consumed yet, so that the next call does not raise
        WakeupException; True if one was pending. (The async consumer interrupts a poll it cancels with
        ``wakeup`` and clears what is left before its next call.)"""
        try:
            self._client.maybe_trigger_wakeup()
        except WakeupException:
            return True
        return False

    @property
    def closed(self) -> bool:
        """True once :meth:`close` finished (every other call then raises IllegalStateError)."""
        return self._closed

    def close(self, timeout: float | None = _DEFAULT_CLOSE_TIMEOUT_S) -> None:
        """Commit (if auto-commit), leave the group and close connections, within ``timeout``."""
        self._guard.acquire()
        try:
            if self._closed or self._closing:
                return
            self._closing = True
            timer = self._time.timer(args.to_ms(timeout, int(_DEFAULT_CLOSE_TIMEOUT_S * 1000)))
            try:
                if self.coordinator is not None:
                    # still open here: the revoke callback may commit (Java closes with the flag still unset)
                    self.coordinator.close(timer)
            except Exception as e:
                log.warning("error while closing the group coordinator: %s", e)
            finally:
                self._closed = True
                self.fetcher.close()
                self._client.close()
                self.metadata.close()
        finally:
            self._guard.release()

    def __enter__(self) -> KafkaConsumer[K, V]:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

"""The async consumer: :class:`~pykafka_client.KafkaConsumer`'s API as coroutines, for asyncio and trio.

::

    async with AsyncKafkaConsumer({"bootstrap.servers": "localhost:9092", "group.id": "g"}) as consumer:
        await consumer.subscribe(["orders"])
        async for record in consumer:          # ends when the consumer is closed
            print(record.partition, record.offset, record.value)

One core: the consumer *is* a sync :class:`KafkaConsumer` (same Fetcher, coordinator, heartbeat thread),
driven by one dedicated thread (:mod:`pykafka_client.aio._client_thread`): every call runs there, in the
order the tasks made them, and the awaiting task is woken through the event loop's thread-safe entry
point. Nothing blocks the event loop.

* A ``poll`` in progress steps aside for a call made meanwhile by another task (``seek``, ``pause``,
  ``commit``...): the call runs at once and the poll goes on for the rest of its timeout.
* Cancellation: a cancelled call is interrupted on the thread (as by the sync ``wakeup()``) and awaited
  until it has left the consumer, so the consumer is never left in the middle of a call. Records a
  cancelled ``poll`` had already taken are returned by the next ``poll``; a cancelled ``commit`` either
  reached the coordinator or not (commit again, as after a sync ``WakeupException``).
* Rebalance listeners (:class:`AsyncConsumerRebalanceListener`, coroutine methods; a sync
  :class:`ConsumerRebalanceListener` works too) run in the event loop, in the task awaiting the call that
  triggered the rebalance (``poll``, ``close``, ``unsubscribe``), while the consumer thread waits for them,
  as the sync consumer runs them inside ``poll``. They may await this consumer's calls (``commit``,
  ``seek``, ``position``): those run at once, nested, on the consumer thread.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import AsyncIterator, Callable, Collection, Mapping
from types import TracebackType
from typing import Any, Generic, TypeVar, overload

from pykafka_client.aio._client_thread import ClientThread
from pykafka_client.aio._consumer_calls import close_on_thread, iterate_polls, preemptible_poll
from pykafka_client.consumer.consumer_record import ConsumerRecord, ConsumerRecords
from pykafka_client.consumer.kafka_consumer import KafkaConsumer
from pykafka_client.consumer.rebalance_listener import ConsumerRebalanceListener
from pykafka_client.consumer.structs import ConsumerGroupMetadata
from pykafka_client.errors import IllegalStateError
from pykafka_client.network.cluster import PartitionInfo
from pykafka_client.serialization import Deserializer
from pykafka_client.structs import OffsetAndMetadata, OffsetAndTimestamp, TopicPartition

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")



class AsyncConsumerRebalanceListener:
    """Rebalance callbacks as coroutines (override what you need); see the module docstring for where they run."""

    async def on_partitions_revoked(self, revoked: Collection[TopicPartition]) -> None:
        """Partitions given up in a rebalance; commit their offsets here when committing manually."""

    async def on_partitions_assigned(self, assigned: Collection[TopicPartition]) -> None:
        """Partitions newly given to this member."""

    async def on_partitions_lost(self, lost: Collection[TopicPartition]) -> None:
        """Partitions that may already belong to another member: do not commit them. Defaults to revoked."""
        await self.on_partitions_revoked(lost)


RebalanceListener = ConsumerRebalanceListener | AsyncConsumerRebalanceListener


class _LoopListener(ConsumerRebalanceListener):
    """The sync consumer's listener: runs the user's (async or sync) listener in the event loop."""

    def __init__(self, listener: RebalanceListener, thread: ClientThread) -> None:
        self._listener = listener
        self._thread = thread

    def on_partitions_revoked(self, revoked: Collection[TopicPartition]) -> None:
        parts = list(revoked)
        self._thread.call_in_loop(lambda: self._listener.on_partitions_revoked(parts))

    def on_partitions_assigned(self, assigned: Collection[TopicPartition]) -> None:
        parts = list(assigned)
        self._thread.call_in_loop(lambda: self._listener.on_partitions_assigned(parts))

    def on_partitions_lost(self, lost: Collection[TopicPartition]) -> None:
        parts = list(lost)
        self._thread.call_in_loop(lambda: self._listener.on_partitions_lost(parts))


def _closed_error() -> IllegalStateError:
    return IllegalStateError("This consumer has already been closed.")


class AsyncKafkaConsumer(Generic[K, V]):
    """See the module docstring. Configuration, deserializers and typing are the sync consumer's."""

    # The sync consumer's overloads (see KafkaConsumer): a side is typed by its deserializer object, else
    # bytes without a config mapping and Any with one (the mapping may name a deserializer).
    @overload
    def __init__(
        self: AsyncKafkaConsumer[bytes | None, bytes | None],
        config: None = None,
        *,
        key_deserializer: None = None,
        value_deserializer: None = None,
        **overrides: Any,
    ) -> None: ...

    @overload
    def __init__(
        self: AsyncKafkaConsumer[K, bytes | None],
        config: None = None,
        *,
        key_deserializer: Deserializer[K],
        value_deserializer: None = None,
        **overrides: Any,
    ) -> None: ...

    @overload
    def __init__(
        self: AsyncKafkaConsumer[bytes | None, V],
        config: None = None,
        *,
        key_deserializer: None = None,
        value_deserializer: Deserializer[V],
        **overrides: Any,
    ) -> None: ...

    @overload
    def __init__(
        self: AsyncKafkaConsumer[K, V],
        config: Mapping[str, Any] | None = None,
        *,
        key_deserializer: Deserializer[K],
        value_deserializer: Deserializer[V],
        **overrides: Any,
    ) -> None: ...

    @overload
    def __init__(
        self: AsyncKafkaConsumer[K, Any],
        config: Mapping[str, Any],
        *,
        key_deserializer: Deserializer[K],
        value_deserializer: None = None,
        **overrides: Any,
    ) -> None: ...

    @overload
    def __init__(
        self: AsyncKafkaConsumer[Any, V],
        config: Mapping[str, Any],
        *,
        key_deserializer: None = None,
        value_deserializer: Deserializer[V],
        **overrides: Any,
    ) -> None: ...

    @overload
    def __init__(  # a config mapping, or a deserializer name ("str"), class or function: typed Any
        self: AsyncKafkaConsumer[Any, Any],
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
        **overrides: Any,
    ) -> None:
        """As :class:`KafkaConsumer` (no network I/O here: the first call connects)."""
        self._consumer: KafkaConsumer[K, V] = KafkaConsumer(
            config, key_deserializer=key_deserializer, value_deserializer=value_deserializer, **overrides
        )
        self.config = self._consumer.config
        self.group_id = self._consumer.group_id
        self.client_id = self._consumer.client_id
        sync_consumer = self._consumer
        self._thread = ClientThread(
            f"kafka-async-consumer | {self.client_id}",
            sync_consumer.wakeup,
            sync_consumer.clear_wakeup,
            _closed_error,
        )
        # a consumer dropped without close(): its client thread ends (the thread holds no reference to self)
        weakref.finalize(self, self._thread.stop)
        self._kept: ConsumerRecords[K, V] | None = None  # taken by a cancelled poll, returned by the next
        self._closed = False

    @property
    def sync_consumer(self) -> KafkaConsumer[K, V]:
        """The sync consumer underneath (for inspection; calling it directly races the consumer thread)."""
        return self._consumer

    async def _call(self, fn: Callable[[], T]) -> T:
        if self._closed:
            raise _closed_error()
        return await self._thread.call(fn)

    # --- subscription -----------------------------------------------------------------------------

    async def subscribe(
        self,
        topics: Collection[str] | re.Pattern[str] | None = None,
        listener: RebalanceListener | None = None,
        *,
        pattern: str | re.Pattern[str] | None = None,
    ) -> None:
        """As :meth:`KafkaConsumer.subscribe`; ``listener`` may have coroutine methods."""
        bridge = None if listener is None else _LoopListener(listener, self._thread)
        await self._call(lambda: self._consumer.subscribe(topics, bridge, pattern=pattern))

    async def assign(self, partitions: Collection[TopicPartition]) -> None:
        await self._call(lambda: self._consumer.assign(partitions))

    async def unsubscribe(self) -> None:
        await self._call(self._consumer.unsubscribe)

    async def subscription(self) -> set[str]:
        return await self._call(self._consumer.subscription)

    async def assignment(self) -> set[TopicPartition]:
        return await self._call(self._consumer.assignment)

    # --- polling ----------------------------------------------------------------------------------

    async def poll(self, timeout: float = 0.0) -> ConsumerRecords[K, V]:
        """Records for the assigned partitions, waiting up to ``timeout`` seconds for some (empty if the
        consumer is closed meanwhile). Drives the group, as the sync ``poll``."""
        if self._closed:
            raise _closed_error()
        kept = self._kept
        if kept is not None:
            self._kept = None
            return kept
        consumer = self._consumer
        return await preemptible_poll(self._thread, timeout, consumer.poll, lambda: consumer.closed,
                                      lambda: ConsumerRecords({}), self._keep)

    def _keep(self, records: ConsumerRecords[K, V]) -> None:
        if not records.is_empty():
            self._kept = records

    def __aiter__(self) -> AsyncIterator[ConsumerRecord[K, V]]:
        return self._iterate()

    def _iterate(self) -> AsyncIterator[ConsumerRecord[K, V]]:
        return iterate_polls(self.poll, lambda: self._closed)

    # --- positions --------------------------------------------------------------------------------

    async def seek(self, partition: TopicPartition, offset: int | OffsetAndMetadata) -> None:
        await self._call(lambda: self._consumer.seek(partition, offset))

    async def seek_to_beginning(self, partitions: Collection[TopicPartition] | None = None) -> None:
        await self._call(lambda: self._consumer.seek_to_beginning(partitions))

    async def seek_to_end(self, partitions: Collection[TopicPartition] | None = None) -> None:
        await self._call(lambda: self._consumer.seek_to_end(partitions))

    async def position(self, partition: TopicPartition, timeout: float | None = None) -> int:
        return await self._call(lambda: self._consumer.position(partition, timeout))

    # --- commits ----------------------------------------------------------------------------------

    async def commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None, timeout: float | None = None
    ) -> None:
        """Commit ``offsets`` (default: the positions of what was consumed) and wait for the coordinator
        (the sync ``commit_sync``; its errors: CommitFailedError, KafkaTimeoutError, ...)."""
        await self._call(lambda: self._consumer.commit_sync(offsets, timeout))

    commit_sync = commit

    async def committed(
        self, partitions: Collection[TopicPartition], timeout: float | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        return await self._call(lambda: self._consumer.committed(partitions, timeout))

    # --- pause / resume ---------------------------------------------------------------------------

    async def pause(self, partitions: Collection[TopicPartition]) -> None:
        await self._call(lambda: self._consumer.pause(partitions))

    async def resume(self, partitions: Collection[TopicPartition]) -> None:
        await self._call(lambda: self._consumer.resume(partitions))

    async def paused(self) -> set[TopicPartition]:
        return await self._call(self._consumer.paused)

    # --- offsets and metadata ---------------------------------------------------------------------

    async def beginning_offsets(
        self, partitions: Collection[TopicPartition], timeout: float | None = None
    ) -> dict[TopicPartition, int]:
        return await self._call(lambda: self._consumer.beginning_offsets(partitions, timeout))

    async def end_offsets(
        self, partitions: Collection[TopicPartition], timeout: float | None = None
    ) -> dict[TopicPartition, int]:
        return await self._call(lambda: self._consumer.end_offsets(partitions, timeout))

    async def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int], timeout: float | None = None
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        return await self._call(lambda: self._consumer.offsets_for_times(timestamps, timeout))

    async def list_topics(self, timeout: float | None = None) -> dict[str, list[PartitionInfo]]:
        return await self._call(lambda: self._consumer.list_topics(timeout))

    async def partitions_for(self, topic: str, timeout: float | None = None) -> list[PartitionInfo]:
        return await self._call(lambda: self._consumer.partitions_for(topic, timeout))

    async def current_lag(self, partition: TopicPartition) -> int | None:
        return await self._call(lambda: self._consumer.current_lag(partition))

    # --- group ------------------------------------------------------------------------------------

    async def group_metadata(self) -> ConsumerGroupMetadata:
        """What ``AsyncKafkaProducer.send_offsets_to_transaction`` needs."""
        return await self._call(self._consumer.group_metadata)

    async def enforce_rebalance(self, reason: str | None = None) -> None:
        await self._call(lambda: self._consumer.enforce_rebalance(reason))

    # --- lifecycle --------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    async def close(self, timeout: float | None = 30.0) -> None:
        """Commit (auto-commit), leave the group and close, within ``timeout`` seconds. A poll in progress
        returns empty and ``async for`` ends. Closing twice is a no-op; a cancelled close finishes closing first."""
        if self._closed:
            return
        self._closed = True
        await close_on_thread(self._thread, lambda: self._consumer.close(timeout))  # bounded by ``timeout``

    async def __aenter__(self) -> AsyncKafkaConsumer[K, V]:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"AsyncKafkaConsumer(client_id={self.client_id!r}, closed={self._closed})"

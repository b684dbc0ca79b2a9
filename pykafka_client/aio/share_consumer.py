"""The async share consumer: :class:`~pykafka_client.KafkaShareConsumer`'s API as coroutines, for asyncio and trio.

::

    async with AsyncKafkaShareConsumer({"bootstrap.servers": "localhost:9092", "group.id": "workers"}) as consumer:
        await consumer.subscribe(["jobs"])
        async for record in consumer:          # ends when the consumer is closed
            print(record.offset, record.delivery_count, record.value)

As :class:`~pykafka_client.aio.AsyncKafkaConsumer`: the consumer *is* a sync KafkaShareConsumer driven by one
dedicated thread (:mod:`pykafka_client.aio._client_thread`); a ``poll`` in progress steps aside for a call made
meanwhile by another task (``acknowledge``, ``commit_async``...); a cancelled call is interrupted and awaited,
and records a cancelled ``poll`` had taken are returned by the next one. The acknowledgement commit callback
runs on the consumer thread (keep it short; do not call the consumer from it).
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator, Callable, Collection, Mapping
from types import TracebackType
from typing import Any, Generic, TypeVar, overload

from pykafka_client.aio._client_thread import ClientThread
from pykafka_client.aio._consumer_calls import close_on_thread, iterate_polls, preemptible_poll
from pykafka_client.consumer.kafka_share_consumer import AcknowledgementCommitCallback, KafkaShareConsumer
from pykafka_client.consumer.share_acknowledgements import AcknowledgeType
from pykafka_client.consumer.share_consumer_record import ShareConsumerRecord
from pykafka_client.errors import IllegalStateError, KafkaError
from pykafka_client.serialization import Deserializer
from pykafka_client.structs import TopicPartition

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")



def _closed_error() -> IllegalStateError:
    return IllegalStateError("This share consumer has already been closed.")


class AsyncKafkaShareConsumer(Generic[K, V]):
    """See the module docstring; arguments, results and errors are the sync KafkaShareConsumer's."""

    @overload
    def __init__(
        self: AsyncKafkaShareConsumer[bytes | None, bytes | None],
        config: None = None,
        *,
        key_deserializer: None = None,
        value_deserializer: None = None,
        **overrides: Any,
    ) -> None: ...

    @overload
    def __init__(
        self: AsyncKafkaShareConsumer[K, bytes | None],
        config: None = None,
        *,
        key_deserializer: Deserializer[K],
        value_deserializer: None = None,
        **overrides: Any,
    ) -> None: ...

    @overload
    def __init__(
        self: AsyncKafkaShareConsumer[bytes | None, V],
        config: None = None,
        *,
        key_deserializer: None = None,
        value_deserializer: Deserializer[V],
        **overrides: Any,
    ) -> None: ...

    @overload
    def __init__(
        self: AsyncKafkaShareConsumer[K, V],
        config: Mapping[str, Any] | None = None,
        *,
        key_deserializer: Deserializer[K],
        value_deserializer: Deserializer[V],
        **overrides: Any,
    ) -> None: ...

    @overload
    def __init__(
        self: AsyncKafkaShareConsumer[K, Any],
        config: Mapping[str, Any],
        *,
        key_deserializer: Deserializer[K],
        value_deserializer: None = None,
        **overrides: Any,
    ) -> None: ...

    @overload
    def __init__(
        self: AsyncKafkaShareConsumer[Any, V],
        config: Mapping[str, Any],
        *,
        key_deserializer: None = None,
        value_deserializer: Deserializer[V],
        **overrides: Any,
    ) -> None: ...

    @overload
    def __init__(  # a config mapping, or a deserializer name ("str"), class or function: typed Any
        self: AsyncKafkaShareConsumer[Any, Any],
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
        """As :class:`KafkaShareConsumer` (no network I/O here: the first call connects)."""
        self._consumer: KafkaShareConsumer[K, V] = KafkaShareConsumer(
            config, key_deserializer=key_deserializer, value_deserializer=value_deserializer, **overrides
        )
        self.config = self._consumer.config
        self.group_id = self._consumer.group_id
        self.client_id = self._consumer.client_id
        sync_consumer = self._consumer
        self._thread = ClientThread(
            f"kafka-async-share-consumer | {self.client_id}", sync_consumer.wakeup, sync_consumer.clear_wakeup,
            _closed_error,
        )
        weakref.finalize(self, self._thread.stop)  # dropped without close(): the thread ends
        self._kept: list[ShareConsumerRecord[K, V]] | None = None  # taken by a cancelled poll
        self._closed = False

    @property
    def sync_consumer(self) -> KafkaShareConsumer[K, V]:
        """The sync consumer underneath (for inspection; calling it directly races the consumer thread)."""
        return self._consumer

    async def _call(self, fn: Callable[[], T]) -> T:
        if self._closed:
            raise _closed_error()
        return await self._thread.call(fn)

    async def subscribe(self, topics: Collection[str]) -> None:
        await self._call(lambda: self._consumer.subscribe(topics))

    async def unsubscribe(self) -> None:
        await self._call(self._consumer.unsubscribe)

    async def subscription(self) -> set[str]:
        return await self._call(self._consumer.subscription)

    async def poll(self, timeout: float = 0.0) -> list[ShareConsumerRecord[K, V]]:
        """The records acquired for this consumer, waiting up to ``timeout`` seconds (empty if the consumer
        is closed meanwhile); acknowledges as the sync ``poll`` does."""
        if self._closed:
            raise _closed_error()
        kept, self._kept = self._kept, None
        if kept is not None:
            return kept
        consumer = self._consumer
        return await preemptible_poll(self._thread, timeout, consumer.poll, lambda: consumer.closed, list, self._keep)

    def _keep(self, records: list[ShareConsumerRecord[K, V]]) -> None:
        if records:
            self._kept = records

    def __aiter__(self) -> AsyncIterator[ShareConsumerRecord[K, V]]:
        return self._iterate()

    def _iterate(self) -> AsyncIterator[ShareConsumerRecord[K, V]]:
        return iterate_polls(self.poll, lambda: self._closed)

    async def acknowledge(self, record: ShareConsumerRecord[Any, Any],
                          type: AcknowledgeType = AcknowledgeType.ACCEPT) -> None:
        await self._call(lambda: self._consumer.acknowledge(record, type))

    async def commit(self, timeout: float | None = None) -> dict[TopicPartition, KafkaError | None]:
        """The sync ``commit_sync``: send the acknowledgements and wait for them."""
        return await self._call(lambda: self._consumer.commit_sync(timeout))

    commit_sync = commit

    async def commit_async(self) -> None:
        await self._call(self._consumer.commit_async)

    async def set_acknowledgement_commit_callback(self, callback: AcknowledgementCommitCallback | None) -> None:
        await self._call(lambda: self._consumer.set_acknowledgement_commit_callback(callback))

    @property
    def closed(self) -> bool:
        return self._closed

    async def close(self, timeout: float | None = 30.0) -> None:
        """Settle what the consumer holds, close its share sessions and leave the group, within ``timeout``
        seconds. A poll in progress returns empty and ``async for`` ends. Idempotent; a cancelled close still closes."""
        if self._closed:
            return
        self._closed = True
        await close_on_thread(self._thread, lambda: self._consumer.close(timeout))

    async def __aenter__(self) -> AsyncKafkaShareConsumer[K, V]:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"AsyncKafkaShareConsumer(client_id={self.client_id!r}, closed={self._closed})"

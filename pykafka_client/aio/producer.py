"""The async producer: :class:`~pykafka_client.KafkaProducer`'s API as coroutines, for asyncio and trio.

::

    async with AsyncKafkaProducer({"bootstrap.servers": "localhost:9092"}) as producer:
        delivery = await producer.send("events", b"hello")   # enqueued; many sends batch together
        metadata = await delivery                            # RecordMetadata once the broker acknowledged
        metadata = await producer.send_and_wait("events", b"again")

One core: the async producer *is* a sync :class:`KafkaProducer` (same RecordAccumulator, Sender,
NetworkClient, idempotence and transactions). Its Sender is not run by an I/O thread but by a task of the
event loop (:mod:`pykafka_client.aio._sender_driver`: short non-blocking steps, waiting on the selector's
descriptor in between), started by the first async call. ``send`` appends to the accumulator in the event
loop (a few microseconds, never blocking: see below) and returns a :class:`DeliveryFuture`; the Sender's
step completes the record in the loop's thread and wakes the task awaiting it directly (a record completed
on another thread, e.g. after the loop ended, wakes it through :mod:`pykafka_client.aio._loop`).

* ``send`` never blocks the loop. A record that fits its partition's open batch, or a new batch whose buffer memory
  is free at once, is appended at once by the sync producer's compiled append
  (:attr:`KafkaProducer.append_to_open_batch`, which never waits); otherwise, when the topic's metadata is missing it waits for it on a worker thread;
  when ``buffer.memory`` is short it waits asynchronously for room; both within ``max.block.ms``, after which
  the record fails with KafkaTimeoutError / BufferExhaustedError (through its DeliveryFuture and
  ``on_delivery``, as the sync ``send``). A tight ``send`` loop yields to the event loop every 0.5 ms, behind
  the timers that came due (:func:`~pykafka_client.aio._loop.loop_yield`).
* Cancellation: ``send`` appends the record after its last await, so a cancelled ``send`` has not
  enqueued anything, and a ``send`` that returned has: that record is then delivered or failed (its
  DeliveryFuture and ``on_delivery`` say which) even if the task awaiting it is cancelled; a cancelled
  ``send_and_wait`` logs a WARNING if its record later fails, so no failure goes unseen. ``flush`` and the
  transactional calls run on worker threads: cancelling stops the waiting, not the work; calling again
  waits for the same outcome (as after the sync calls' KafkaTimeoutError).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time as _time
from collections.abc import AsyncIterator, Callable, Generator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any, TypeVar, cast

import anyio

from pykafka_client.aio._loop import LoopWaker, WakerCache, loop_yield, running_asyncio_loop
from pykafka_client.aio._sender_driver import SenderDriver
from pykafka_client.consumer.structs import ConsumerGroupMetadata
from pykafka_client.errors import BufferExhaustedError, KafkaTimeoutError, ProducerClosedError
from pykafka_client.errors_base import BrokerResponseError
from pykafka_client.network.cluster import PartitionInfo
from pykafka_client.producer import batch_append
from pykafka_client.producer.kafka_producer import BatchMetadata, KafkaProducer, SendBatchFuture
from pykafka_client.producer.record_metadata import RecordMetadata
from pykafka_client.producer.record_size import Callback
from pykafka_client.producer.sender import IoRunner, Sender
from pykafka_client.structs import OffsetAndMetadata, TopicPartition

log = logging.getLogger(__name__)

_perf_counter = _time.perf_counter

T = TypeVar("T")

#: Polling interval bounds (seconds) while ``send`` waits for ``buffer.memory``.
_MEMORY_POLL_MIN_S = 0.0005
_MEMORY_POLL_MAX_S = 0.01
#: ``send`` yields to the event loop when it has not for this long (seconds): a task woken by a timer waits
#: at most about this long (``loop_yield`` lets the timers due run first).
_YIELD_EVERY_S = 0.0005


class DeliveryFuture:
    """A record's delivery outcome: ``await`` it for its :class:`RecordMetadata` (or the error that failed it).

    Awaiting a record already completed returns at once; otherwise the awaiting task sleeps until the
    Sender completes it. ``done()``/``result()``/``exception()`` read it without waiting. Cancelling the
    awaiting task does not cancel the record.
    """

    __slots__ = ("_future", "_wakers")

    def __init__(self, future: Future[RecordMetadata], wakers: WakerCache) -> None:
        self._future = future
        self._wakers = wakers  # the loop's waker is looked up only if a task has to wait

    def done(self) -> bool:
        return self._future.done()

    def result(self) -> RecordMetadata:
        """The metadata (raises the record's error); InvalidStateError if it is not done yet."""
        if not self._future.done():
            from concurrent.futures import InvalidStateError

            raise InvalidStateError("the record is not delivered yet: await it")
        return self._future.result()

    def exception(self) -> BaseException | None:
        if not self._future.done():
            from concurrent.futures import InvalidStateError

            raise InvalidStateError("the record is not delivered yet: await it")
        return self._future.exception()

    def add_done_callback(self, fn: Callable[[DeliveryFuture], object]) -> None:
        """``fn(self)`` once the record completes: in the thread running the Sender, normally the event loop's
        (keep it quick, no awaits, no blocking call)."""
        self._future.add_done_callback(lambda _f: fn(self))

    def __await__(self) -> Generator[Any, None, RecordMetadata]:
        future = self._future
        if not future.done():
            yield from _until_done(future, self._wakers)
        return future.result()


def _until_done(future: Future[Any], wakers: WakerCache) -> Generator[Any, None, None]:
    """Suspend the awaiting task until ``future`` is done (raises the task's cancellation; the future is untouched).

    Under asyncio the task waits on a bare loop future, resolved by the record's done-callback: directly when
    the record completes in the loop's thread (the loop-driven Sender's step), else through the loop's
    :class:`~pykafka_client.aio._loop.LoopWaker` (one loop callback for a burst of completions). Under trio the
    task is parked (``wait_task_rescheduled``) and rescheduled the same two ways."""
    loop = running_asyncio_loop()
    waker = wakers.current()
    loop_thread = threading.get_ident()
    if loop is not None:
        waiter: asyncio.Future[None] = loop.create_future()
        future.add_done_callback(functools.partial(_wake, waiter.set_result, waiter.done, loop_thread, waker))
        yield from waiter.__await__()
        return
    import trio

    task = _TrioWaiter(trio.lowlevel.current_task())
    future.add_done_callback(functools.partial(_wake_trio, task, loop_thread, waker))
    if not task.finished:  # else the record completed while the callback was added: it ran at once
        task.parked = True
        yield from trio.lowlevel.wait_task_rescheduled(task.abort).__await__()


class _TrioWaiter:
    """A trio task parked until its record completes (``resolve``) or it is cancelled (``abort``), once."""

    __slots__ = ("finished", "parked", "task")

    def __init__(self, task: Any) -> None:
        self.task = task
        self.parked = False
        self.finished = False

    def resolve(self) -> None:
        if not self.finished:
            self.finished = True
            if self.parked:
                import trio

                trio.lowlevel.reschedule(self.task)

    def abort(self, _raise_cancel: Any) -> Any:
        import trio

        self.finished = True  # the record's completion, later, does nothing
        return trio.lowlevel.Abort.SUCCEEDED


def _wake_trio(waiter: _TrioWaiter, loop_thread: int, waker: LoopWaker, _f: object) -> None:
    if threading.get_ident() == loop_thread:
        waiter.resolve()
    else:
        waker.call_soon(waiter.resolve)


def _wake(
    set_result: Callable[[None], object], done: Callable[[], bool], loop_thread: int, waker: LoopWaker, _f: object
) -> None:
    """A record's done-callback for an asyncio task awaiting it (in the thread that completed the record)."""
    if threading.get_ident() != loop_thread:
        waker.call_soon(lambda: _wake(set_result, done, loop_thread, waker, _f))
    elif not done():  # the awaiting task was cancelled meanwhile: its waiter is cancelled
        set_result(None)


def _failed(exc: BaseException, wakers: WakerCache) -> DeliveryFuture:
    future: Future[RecordMetadata] = Future()
    future.set_exception(exc)
    return DeliveryFuture(future, wakers)


def _rough_size(data: object) -> int:
    if isinstance(data, (bytes, bytearray, memoryview, str)):
        return len(data)
    return 0


def _rough_batch_size(values: Any, keys: Any) -> int:
    """An upper bound of the buffer memory the records of a send_batch need, or a huge number if unknown."""
    total = 0
    for column in (values, keys):
        if column is None:
            continue
        if type(column).__module__.startswith("pyarrow"):  # a pyarrow array
            total += int(column.nbytes) + 100 * len(column)
        elif isinstance(column, list) and (longest := batch_append.scan_records(None, column, None)) >= 0:
            total += (longest + 100) * len(column)
        else:
            return 1 << 62
    return total


class BatchDeliveryFuture:
    """The outcome of an async ``send_batch``: ``await`` it for the :class:`BatchMetadata` of every record (it
    raises the first record's error if one failed; :attr:`future`'s ``metadata()`` still has them all)."""

    __slots__ = ("_delivery", "future")

    def __init__(self, future: SendBatchFuture, wakers: WakerCache) -> None:
        self.future = future
        self._delivery = DeliveryFuture(cast("Future[Any]", future), wakers)

    def done(self) -> bool:
        return self.future.done()

    def __await__(self) -> Generator[Any, None, BatchMetadata]:
        return self._wait().__await__()

    async def _wait(self) -> BatchMetadata:
        await self._delivery
        return self.future.result()


class _DriverFactory:
    """``KafkaProducer(io_runner=...)`` for the async producer: the Sender is run by a :class:`SenderDriver` in
    the event loop, not by a thread. The sync calls that wait for the Sender call ``ensure_started`` first: if
    no event loop runs it yet (a sync call from a thread came first), it starts on a thread instead."""

    def __init__(self) -> None:
        self.driver: SenderDriver | None = None

    def __call__(self, sender: Sender, client_id: str) -> IoRunner:
        self.driver = SenderDriver(sender, f"kafka-producer-network-task | {client_id}")
        return self.driver


class AsyncKafkaProducer:
    """See the module docstring. Configuration and serializers are the sync producer's."""

    #: True: the Sender runs in the event loop (:mod:`pykafka_client.aio._sender_driver`); False: on its
    #: own I/O thread bridged to the loop (the earlier design; kept for ``bench/async.py``'s bridge-* rows).
    _native_sender = True

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        *,
        key_serializer: Any = None,
        value_serializer: Any = None,
        **overrides: Any,
    ) -> None:
        """As :class:`KafkaProducer` (no network I/O here: the Sender starts in the loop at the first async call)."""
        factory = _DriverFactory() if self._native_sender else None
        producer = KafkaProducer(
            config, key_serializer=key_serializer, value_serializer=value_serializer, io_runner=factory, **overrides
        )
        self._producer = producer
        self._driver = factory.driver if factory is not None else None
        self._driver_idle = True  # until the first async call starts the driver in its loop
        self.config = self._producer.config
        self.client_id = self._producer.client_id
        self._batch_size: int = self.config["batch.size"]
        self._max_block_s: float = self.config["max.block.ms"] / 1000.0
        self._wakers = WakerCache()
        self._last_yield = 0.0

    @property
    def sync_producer(self) -> KafkaProducer:
        """The sync producer underneath (thread-safe; its blocking calls would block the event loop)."""
        return self._producer

    # --- sending ----------------------------------------------------------------------------------

    async def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        timestamp: int | None = None,
        headers: Sequence[tuple[str, Any]] | Mapping[str, Any] | None = None,
        on_delivery: Callback | None = None,
    ) -> DeliveryFuture:
        """Enqueue a record and return its :class:`DeliveryFuture` (await that for the RecordMetadata).
        Waits (asynchronously, up to ``max.block.ms``) only for missing topic metadata or buffer memory.
        Misuse raises here, as the sync ``send`` (closed producer, serialization error, bad partition...)."""
        producer = self._producer
        if self._driver_idle:
            if producer.closed:
                raise ProducerClosedError("Cannot perform operation after producer has been closed")
            self._start_driver()
        now = _perf_counter()
        if now - self._last_yield >= _YIELD_EVERY_S:
            # a task sending in a tight loop mostly never suspends (the append needs no await): let the
            # other tasks run now and then, so producing at full speed does not stall the event loop
            self._last_yield = now
            await loop_yield()
        if headers is None and (append := producer.append_to_open_batch) is not None:
            # Fastest path (nearly every call): the record goes into its partition's open batch (or a new one whose
            # memory is free at once), in one compiled call that never waits; NotImplemented: nothing was appended,
            # the paths below do it all
            future = append(topic, partition, timestamp, key, value, on_delivery)
            if future is not NotImplemented:
                return DeliveryFuture(future, self._wakers)
        if producer.closed:
            raise ProducerClosedError("Cannot perform operation after producer has been closed")
        need = self._batch_size
        size = 128
        if value is not None:
            size += len(value) if value.__class__ is bytes else _rough_size(value)
        if key is not None:
            size += len(key) if key.__class__ is bytes else _rough_size(key)
        if size > need:
            need = size
        # Fast path (nearly every call): the topic's partitions are known and ``buffer.memory`` has room, so
        # the sync send below waits for neither. Read without locks, as in the sync send's own fast path:
        # the metadata index is replaced whole, and memory is taken only by appends, here in this thread
        # (a concurrent sync send on another thread could take it between the check and the append as well
        # under the pool's lock). Anything else goes through the checks and waits of the loop below.
        pool = producer.accumulator.free
        if (
            (count := producer.metadata.current_partition_count(topic) if topic.__class__ is str else None)
            and (partition is None or (partition.__class__ is int and partition < count))
            and pool.may_allocate_now(need)
        ):
            return DeliveryFuture(producer.send(topic, value, key, partition, timestamp, headers, on_delivery), self._wakers)
        deadline: float | None = None
        while True:
            # Both conditions are checked again after any await (the loop-driven Sender runs meanwhile and may,
            # e.g., drop the topic's metadata), so the sync send below finds them true and never blocks the loop.
            count = producer.metadata.partition_count_for_topic(topic) if isinstance(topic, str) and topic else 0
            if count is None or (partition is not None and isinstance(partition, int) and partition >= count):
                if deadline is None:
                    deadline = _time.monotonic() + self._max_block_s
                remaining_ms = max(int((deadline - _time.monotonic()) * 1000), 0)
                try:
                    await anyio.to_thread.run_sync(
                        producer.wait_on_metadata, topic, partition, remaining_ms, abandon_on_cancel=True
                    )
                except (BrokerResponseError, KafkaTimeoutError) as e:
                    return self._fail(e, on_delivery)
                continue
            if not pool.can_allocate_now(need):
                if need > pool.total_memory:
                    # No wait frees that much: the sync send fails it at once (batch.size above buffer.memory:
                    # IllegalArgumentError, as Java's allocate; a record above it: RecordTooLargeError). On a worker
                    # thread: ``need`` is an upper bound, and a record just under buffer.memory waits there for it.
                    return DeliveryFuture(
                        await anyio.to_thread.run_sync(
                            lambda: producer.send(topic, value, key, partition, timestamp, headers, on_delivery)
                        ),
                        self._wakers,
                    )
                if deadline is None:
                    deadline = _time.monotonic() + self._max_block_s
                if not await self._wait_for_memory(need, deadline):
                    return self._fail(
                        BufferExhaustedError(
                            f"Failed to allocate {need} bytes within the configured max blocking time "
                            f"{int(self._max_block_s * 1000)} ms. Total memory: {pool.total_memory} bytes. "
                            f"Available memory: {pool.available_memory()} bytes."
                        ),
                        on_delivery,
                    )
                continue
            break
        # No await from here: the record is enqueued or send raises (cancellation cannot split the two).
        return DeliveryFuture(producer.send(topic, value, key, partition, timestamp, headers, on_delivery), self._wakers)

    async def _wait_for_memory(self, need: int, deadline: float) -> bool:
        """Wait until ``need`` bytes can be allocated at once; False if ``deadline`` passed first. The wait counts
        as a thread blocked in the pool's allocate (Java's "memory exhausted"): the Sender sends every batch then,
        lingering or not, so the memory this wait needs is freed (else batches lingering for a long
        ``linger.ms`` held it past ``max.block.ms``)."""
        producer = self._producer
        pool = producer.accumulator.free
        delay = _MEMORY_POLL_MIN_S
        pool.begin_external_wait()  # (wakes the Sender, which may be waiting out a linger)
        try:
            while not pool.can_allocate_now(need):
                if producer.closed:
                    raise ProducerClosedError("Producer closed while waiting for buffer memory")
                remaining = deadline - _time.monotonic()
                if remaining <= 0:
                    return False
                await anyio.sleep(min(delay, remaining))
                delay = min(delay * 2, _MEMORY_POLL_MAX_S)
            return True
        finally:
            pool.end_external_wait()

    def _fail(self, exc: BaseException, on_delivery: Callback | None) -> DeliveryFuture:
        if on_delivery is not None:
            on_delivery(None, exc)
        return _failed(exc, self._wakers)

    async def send_batch(
        self,
        topic: str,
        values: Sequence[Any] | Any,
        keys: Sequence[Any] | Any | None = None,
        *,
        partition: int | None = None,
        headers: Sequence[tuple[str, Any]] | Mapping[str, Any] | None = None,
        timestamps: Sequence[int | None] | Any | None = None,
        on_delivery: Callback | None = None,
    ) -> BatchDeliveryFuture:
        """:meth:`KafkaProducer.send_batch`: enqueue many records of one topic; ``await`` the returned future for
        their :class:`BatchMetadata`. Appends in the event loop when the topic's metadata is known and
        ``buffer.memory`` has room for all of them (the common case: no wait); otherwise on a worker thread,
        which waits for both within ``max.block.ms`` while the loop keeps sending. Misuse raises here. Once
        the worker started, cancelling waits for it to finish appending (the records are then sent)."""
        producer = self._producer
        if producer.closed:
            raise ProducerClosedError("Cannot perform operation after producer has been closed")
        self._start_driver()

        def send_batch() -> SendBatchFuture:
            return producer.send_batch(
                topic, values, keys, partition=partition, headers=headers, timestamps=timestamps, on_delivery=on_delivery
            )

        count = producer.metadata.partition_count_for_topic(topic) if isinstance(topic, str) and topic else 0
        pool = producer.accumulator.free
        if (
            count is not None
            and (partition is None or not isinstance(partition, int) or partition < count)
            and pool.can_allocate_now(self._batch_size + _rough_batch_size(values, keys))
        ):
            future = send_batch()
        else:
            future = await anyio.to_thread.run_sync(send_batch)
        return BatchDeliveryFuture(future, self._wakers)

    async def send_and_wait(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        timestamp: int | None = None,
        headers: Sequence[tuple[str, Any]] | Mapping[str, Any] | None = None,
    ) -> RecordMetadata:
        """Send one record and wait until it is acknowledged (raises its error)."""
        delivery = await self.send(topic, value, key, partition, timestamp, headers)
        try:
            return await delivery
        except anyio.get_cancelled_exc_class():
            delivery.add_done_callback(_warn_if_failed)
            raise

    async def flush(self, timeout: float | None = None) -> None:
        """Send everything buffered now and wait until those records completed (KafkaTimeoutError after
        ``timeout`` seconds). Cancelling stops the waiting; the records are sent all the same."""
        await self._to_thread(lambda: self._producer.flush(timeout))

    async def partitions_for(self, topic: str) -> list[PartitionInfo]:
        return await self._to_thread(lambda: self._producer.partitions_for(topic))

    def metrics(self) -> dict[str, float]:
        return self._producer.metrics()

    async def _to_thread(self, fn: Callable[[], T]) -> T:
        self._start_driver()
        return await anyio.to_thread.run_sync(fn, abandon_on_cancel=True)

    def _start_driver(self) -> None:
        """Start the loop-driven Sender in the running loop (first call; the async calls all pass here)."""
        driver = self._driver
        if driver is not None:
            driver.ensure_started()
        self._driver_idle = False

    # --- transactions -----------------------------------------------------------------------------

    async def init_transactions(self, timeout: float | None = None) -> None:
        """As :meth:`KafkaProducer.init_transactions`."""
        await self._to_thread(lambda: self._producer.init_transactions(timeout))

    async def begin_transaction(self) -> None:
        self._producer.begin_transaction()

    async def resume_transaction(self, producer_id: int, epoch: int) -> None:
        """As :meth:`KafkaProducer.resume_transaction`: on a fresh producer (no ``init_transactions``), adopt
        the open transaction another producer with this ``transactional.id`` left (its
        :meth:`producer_id_and_epoch`), then end it with ``commit_transaction()`` / ``abort_transaction()``.
        Sends nothing (no wait)."""
        self._producer.resume_transaction(producer_id, epoch)

    def producer_id_and_epoch(self) -> tuple[int, int]:
        """The producer id and epoch in use, (-1, -1) before one was obtained (a snapshot, no wait: a plain
        method, as :meth:`metrics`)."""
        return self._producer.producer_id_and_epoch()

    async def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
        group_metadata: ConsumerGroupMetadata,
        timeout: float | None = None,
    ) -> None:
        """As :meth:`KafkaProducer.send_offsets_to_transaction` (``await consumer.group_metadata()``)."""
        await self._to_thread(lambda: self._producer.send_offsets_to_transaction(offsets, group_metadata, timeout))

    async def commit_transaction(self, timeout: float | None = None) -> None:
        await self._to_thread(lambda: self._producer.commit_transaction(timeout))

    async def abort_transaction(self, timeout: float | None = None) -> None:
        await self._to_thread(lambda: self._producer.abort_transaction(timeout))

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        """``async with producer.transaction():`` begins a transaction, commits it when the block ends and
        aborts it when the block raises (the error propagates)."""
        await self.begin_transaction()
        try:
            yield
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.abort_transaction()
            raise
        await self.commit_transaction()

    # --- closing ----------------------------------------------------------------------------------

    async def close(self, timeout: float | None = None) -> None:
        """Send what is buffered (up to ``timeout`` seconds; None = no limit), then close. Cancelling
        stops the waiting; the producer goes on closing in the background."""
        await self._to_thread(lambda: self._producer.close(timeout))

    @property
    def closed(self) -> bool:
        return self._producer.closed

    async def __aenter__(self) -> AsyncKafkaProducer:
        self._start_driver()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"AsyncKafkaProducer(client_id={self.client_id!r}, closed={self.closed})"


def _warn_if_failed(delivery: DeliveryFuture) -> None:
    error = delivery.exception()
    if error is not None:
        log.warning("a record whose send_and_wait was cancelled failed: %r", error)

"""The async producer's Sender runs in the event loop (aio/_sender_driver.py): no I/O thread, completions in
the loop's thread, and the hand-over to a thread when the loop ends with the producer still open."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from mini_broker.broker import MiniBroker
from pykafka_client.aio import AsyncKafkaProducer
from pykafka_client.aio.producer import DeliveryFuture
from pykafka_client.producer.record_metadata import RecordMetadata
from tests.integration.aio.conftest import topic_name

if TYPE_CHECKING:
    from _typeshed import HasFileno

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

IO_THREAD_PREFIX = "kafka-producer-network"


def _io_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(IO_THREAD_PREFIX)]


@pytest.mark.anyio
async def test_the_sender_runs_in_the_loop_thread_without_an_io_thread(broker: MiniBroker) -> None:
    topic = topic_name()
    before = set(_io_threads())
    delivered_in: list[int] = []
    async with AsyncKafkaProducer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 2}) as producer:
        deliveries = [
            await producer.send(topic, b"v%d" % i, on_delivery=lambda md, exc: delivered_in.append(threading.get_ident()))
            for i in range(200)
        ]
        metas = [await d for d in deliveries]
        assert set(_io_threads()) == before  # no thread of ours runs this producer's Sender
        await producer.flush()
    assert len(metas) == 200 and all(m.offset >= 0 for m in metas)
    assert set(delivered_in) == {threading.get_ident()}  # callbacks ran in the event loop's thread
    assert producer.sync_producer.sender.is_running() is False


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_producer_left_open_when_its_loop_ends_goes_on_in_a_thread(broker: MiniBroker, backend: str) -> None:
    topic = topic_name()
    held: dict[str, object] = {}

    async def first_loop() -> None:
        producer = AsyncKafkaProducer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 50})
        await producer.send_and_wait(topic, b"first")
        held["producer"] = producer
        held["pending"] = [await producer.send(topic, b"p%d" % i) for i in range(50)]
        # the loop ends here with the producer open and records buffered (linger.ms 50)

    anyio.run(first_loop, backend=backend)
    producer = held["producer"]
    assert isinstance(producer, AsyncKafkaProducer)
    producer.sync_producer.flush(30)  # a thread now runs the Sender: the sync calls work
    pending = held["pending"]
    assert isinstance(pending, list)
    for d in pending:
        assert isinstance(d, DeliveryFuture)
        assert isinstance(d.result(), RecordMetadata)

    async def second_loop() -> RecordMetadata:
        async with producer:  # another loop: sends still work, close ends the thread
            return await producer.send_and_wait(topic, b"second")

    md = anyio.run(second_loop, backend=backend)
    assert md.offset == 51
    assert producer.closed and not producer.sync_producer._io_thread.is_alive()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_producer_closed_before_any_loop_ran_it_closes(broker: MiniBroker, backend: str) -> None:
    producer = AsyncKafkaProducer({"bootstrap.servers": broker.bootstrap_servers})
    future = producer.sync_producer.send(topic_name(), b"sync")  # appended; nothing drives the Sender yet
    producer.sync_producer.close(30)  # runs the Sender's steps on a thread, which sends the record
    assert future.result(0).offset == 0
    assert not producer.sync_producer._io_thread.is_alive()


@pytest.mark.anyio
async def test_the_threaded_bridge_still_delivers(broker: MiniBroker, monkeypatch: pytest.MonkeyPatch) -> None:
    """The earlier design (the Sender on its I/O thread, completions bridged to the loop), kept for
    bench/async.py's bridge rows: it must keep working, so the benchmark's comparison stays honest."""
    monkeypatch.setattr(AsyncKafkaProducer, "_native_sender", False)
    topic = topic_name()
    async with AsyncKafkaProducer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 2}) as producer:
        deliveries = [await producer.send(topic, b"b%d" % i) for i in range(100)]
        metas = [await d for d in deliveries]
        assert any(t.name.startswith(IO_THREAD_PREFIX) for t in _io_threads())  # its own I/O thread runs the Sender
    assert [m.offset for m in metas] == list(range(100))


def test_under_asyncio_the_descriptor_is_registered_once_per_run_and_removed_at_close(broker: MiniBroker) -> None:
    """The driver watches its selector's descriptor with one reader registration for its whole run (a wait per
    step through ``anyio.wait_readable`` added and removed the reader each time), resolves each wait when the
    descriptor is readable or on its timeout, and removes the reader when the producer closes."""
    import asyncio

    topic = topic_name()
    counts = {"add": 0, "remove": 0}

    async def main() -> tuple[list[int], bool]:
        loop = asyncio.get_running_loop()
        producer = AsyncKafkaProducer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 20})
        selector = producer.sync_producer.sender.pollable_selector
        assert selector is not None
        fd = selector.fileno()
        assert fd is not None
        add_reader, remove_reader = loop.add_reader, loop.remove_reader

        def counting_add(fileobj: int | HasFileno, callback: Callable[..., object], *args: Any) -> None:
            counts["add"] += fileobj == fd
            add_reader(fileobj, callback, *args)

        def counting_remove(fileobj: int | HasFileno) -> bool:
            counts["remove"] += fileobj == fd
            return remove_reader(fileobj)

        loop.add_reader = counting_add  # type: ignore[method-assign, assignment]  # a counting wrapper on the running loop
        loop.remove_reader = counting_remove  # type: ignore[method-assign, assignment]  # a counting wrapper on the running loop
        offsets: list[int] = []
        async with producer:
            for round_ in range(5):  # each round: the driver waits for linger.ms, then for the response
                deliveries = [await producer.send(topic, b"r%d-%d" % (round_, i)) for i in range(10)]
                offsets += [(await d).offset for d in deliveries]
                await anyio.sleep(0.03)  # idle: the driver waits on the descriptor with a timeout
        still_registered = remove_reader(fd)
        return offsets, still_registered

    offsets, still_registered = anyio.run(main, backend="asyncio")
    assert offsets == list(range(50))
    assert counts["add"] == 1 and counts["remove"] == 1
    assert still_registered is False

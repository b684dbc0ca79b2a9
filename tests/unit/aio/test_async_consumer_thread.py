"""The async consumer's client thread: it ends when the consumer is closed, and when a consumer that was
never closed is garbage-collected (the thread holds no reference to the async consumer). No broker: the
constructor does no network I/O."""

from __future__ import annotations

import gc
import threading

import pytest

from pykafka_client.aio import AsyncKafkaConsumer

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _threads(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == name]


async def test_client_thread_ends_on_close_and_on_garbage_collection() -> None:
    closed = AsyncKafkaConsumer({"bootstrap.servers": "127.0.0.1:1", "client.id": "closed-one"})
    (thread,) = _threads("kafka-async-consumer | closed-one")
    await closed.close()
    thread.join(10)
    assert not thread.is_alive()

    dropped = AsyncKafkaConsumer({"bootstrap.servers": "127.0.0.1:1", "client.id": "dropped-one"})
    (thread,) = _threads("kafka-async-consumer | dropped-one")
    del dropped
    gc.collect()
    thread.join(10)
    assert not thread.is_alive()

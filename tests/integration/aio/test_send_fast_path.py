"""The async ``send``'s common case: a record that fits its partition's open batch is appended by the sync
producer's compiled, never-waiting append (``KafkaProducer.append_to_open_batch``) without the sync ``send``
path; only a record that needs a new batch (its buffer memory), metadata or headers goes through the checks
and waits of the full path. Under asyncio and trio."""

from __future__ import annotations

from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client.aio import AsyncKafkaProducer
from pykafka_client.errors import ProducerClosedError
from tests.integration.aio.conftest import topic_name

pytestmark = [pytest.mark.integration, pytest.mark.anyio, pytest.mark.timeout(120)]


async def test_records_that_fit_the_open_batch_skip_the_sync_send_and_keep_their_order(
    broker: MiniBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = topic_name("fast")
    async with AsyncKafkaProducer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5}) as producer:
        await producer.send_and_wait(topic, b"first", partition=0)  # the topic's metadata is known from here
        sync = producer.sync_producer
        if sync.append_to_open_batch is None:
            pytest.skip("no compiled kernel (PYKAFKA_NO_NATIVE=1): async send takes the sync send path")
        full_path: list[Any] = []
        original = sync.send

        def counting_send(*args: Any, **kwargs: Any) -> Any:
            full_path.append(args)
            return original(*args, **kwargs)

        monkeypatch.setattr(sync, "send", counting_send)
        deliveries = [await producer.send(topic, b"v%d" % i, partition=0) for i in range(300)]
        with_headers = await producer.send(topic, b"h", partition=0, headers=[("k", b"x")])
        metas = [await d for d in deliveries]
        last = await with_headers
    offsets = [m.offset for m in metas]
    assert offsets == list(range(offsets[0], offsets[0] + 300))  # every record, in order, once
    assert last.offset == offsets[-1] + 1
    # the record with headers, and those that opened a new batch, took the full path; the rest did not
    assert 1 <= len(full_path) <= 10, len(full_path)
    assert full_path[-1][0] == topic and full_path[-1][5] == [("k", b"x")]


async def test_send_after_close_raises_producer_closed(broker: MiniBroker) -> None:
    topic = topic_name("fast")
    producer = AsyncKafkaProducer({"bootstrap.servers": broker.bootstrap_servers})
    await producer.send_and_wait(topic, b"a")  # the open batch is gone once sent, but metadata stays
    await producer.send(topic, b"b")  # an open batch with room: what the compiled append could use
    await producer.close()
    with pytest.raises(ProducerClosedError):
        await producer.send(topic, b"c")

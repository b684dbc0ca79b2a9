"""The async ``send``'s common case: a record that fits its partition's open batch is appended by the sync
producer's compiled, never-waiting append (``KafkaProducer.append_to_open_batch``) without the sync ``send``
path, and so is one that opens a new batch whose buffer memory is free at once; only a record that must wait for
memory or metadata, or has headers, goes through the checks and waits of the full path. Under asyncio and trio."""

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
    # linger.ms far beyond the test, so only flush() closes a batch: how many batches the 300 records fill does
    # not depend on how fast this machine runs the loop (they fit one batch.size, 16 KiB, with room to spare)
    config = {"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 120_000}
    async with AsyncKafkaProducer(config) as producer:
        first = await producer.send(topic, b"first", partition=0)  # the topic's metadata is known from here
        await producer.flush()
        await first
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
        await producer.flush()
        metas = [await d for d in deliveries]
        last = await with_headers
    offsets = [m.offset for m in metas]
    assert offsets == list(range(offsets[0], offsets[0] + 300))  # every record, in order, once
    assert last.offset == offsets[-1] + 1
    # only the record with headers took the full path: the first of the 300 opened a new batch in the compiled
    # append (its memory was free at once), the others fitted it
    assert [(args[0], args[1], args[5]) for args in full_path] == [(topic, b"h", [("k", b"x")])]


async def test_send_after_close_raises_producer_closed(broker: MiniBroker) -> None:
    topic = topic_name("fast")
    producer = AsyncKafkaProducer({"bootstrap.servers": broker.bootstrap_servers})
    await producer.send_and_wait(topic, b"a")  # the open batch is gone once sent, but metadata stays
    await producer.send(topic, b"b")  # an open batch with room: what the compiled append could use
    await producer.close()
    with pytest.raises(ProducerClosedError):
        await producer.send(topic, b"c")

"""AsyncKafkaProducer.send_batch against MiniBroker, under asyncio and trio: appended in the loop when memory
allows, on a worker thread when ``buffer.memory`` is short; every record arrives with the metadata reported."""

from __future__ import annotations

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import KafkaConsumer, TopicPartition
from pykafka_client.aio import AsyncKafkaProducer
from tests.integration.aio.conftest import topic_name

pytestmark = [pytest.mark.integration, pytest.mark.anyio, pytest.mark.timeout(120)]


@pytest.mark.parametrize("memory", [32 * 1024 * 1024, 100_000])
async def test_send_batch_round_trip(broker: MiniBroker, memory: int) -> None:
    pa = pytest.importorskip("pyarrow")
    topic = topic_name("aiob")
    values = [f"value-{i}" for i in range(2000)]
    config = {"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 2, "buffer.memory": memory, "batch.size": 8192}
    async with AsyncKafkaProducer(config) as producer:
        delivery = await producer.send_batch(topic, pa.array(values), partition=2)
        metadata = await delivery
        listed = await producer.send_batch(topic, [b"tail"], partition=2)
        tail = await listed
    assert [m.offset for m in metadata] == list(range(2000))
    assert tail[0].offset == 2000
    consumer = KafkaConsumer({"bootstrap.servers": broker.bootstrap_servers, "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(topic, 2)])
        got: list[bytes] = []
        for _ in range(100):
            got.extend(r.value for r in consumer.poll(0.2))
            if len(got) >= 2001:
                break
    finally:
        consumer.close()
    assert got == [v.encode() for v in values] + [b"tail"]

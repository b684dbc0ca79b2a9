"""A broker restart mid-stream (same port, same data dir): async producing and consuming carry on once it is
back; every record sent is delivered and read (none lost), and the event loop kept running meanwhile."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import TopicPartition
from pykafka_client.aio import AsyncKafkaConsumer, AsyncKafkaProducer
from pykafka_client.aio.producer import DeliveryFuture

pytestmark = [pytest.mark.integration, pytest.mark.anyio, pytest.mark.timeout(180)]

N = 400


async def test_producing_and_consuming_survive_a_broker_restart(tmp_path: Path) -> None:
    broker = MiniBroker({"num.partitions": 1}, data_dir=str(tmp_path)).start()
    port = broker.port
    tp = TopicPartition("restart", 0)
    fast = {"reconnect.backoff.max.ms": 200, "retry.backoff.max.ms": 200}
    sent: list[DeliveryFuture] = []
    got: list[bytes | None] = []
    restarted = anyio.Event()
    down = anyio.Event()
    try:
        async with AsyncKafkaProducer(
            {"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 2, **fast}
        ) as producer, AsyncKafkaConsumer(
            {"bootstrap.servers": broker.bootstrap_servers, "auto.offset.reset": "earliest", **fast}
        ) as consumer:
            await consumer.assign([tp])

            async def produce() -> None:
                for i in range(N):
                    if i == N // 2:
                        await down.wait()  # the second half is sent while the broker is down
                    sent.append(await producer.send(tp.topic, b"%d" % i, partition=0))
                    if i % 20 == 0:
                        await anyio.sleep(0.01)
                await producer.flush(60)

            async def consume() -> None:
                while len(got) < N:
                    got.extend(r.value for r in await consumer.poll(0.5))

            with anyio.fail_after(120):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(produce)
                    tg.start_soon(consume)
                    while len(got) < N // 4:
                        await anyio.sleep(0.01)
                    await anyio.to_thread.run_sync(broker.shutdown)
                    down.set()
                    await anyio.sleep(0.5)  # producer and consumer go on trying meanwhile
                    broker = await anyio.to_thread.run_sync(
                        lambda: MiniBroker(
                            {"num.partitions": 1}, data_dir=str(tmp_path), listeners=f"PLAINTEXT://127.0.0.1:{port}"
                        ).start()
                    )
                    restarted.set()
            metas = [await d for d in sent]
    finally:
        await anyio.to_thread.run_sync(broker.shutdown)
    assert restarted.is_set()
    assert len(metas) == N
    assert set(got) == {b"%d" % i for i in range(N)}  # every record read, in spite of the restart

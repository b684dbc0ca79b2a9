"""aiokafka group consumers against mini_broker: two members of one group consume a topic exactly once and
commit; a new member of the group starts from the committed offsets."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mini_broker.broker import MiniBroker

aiokafka = pytest.importorskip("aiokafka")

pytestmark = [pytest.mark.interop, pytest.mark.timeout(90)]

PARTITIONS = 4


@pytest.fixture(scope="module")
def broker() -> Iterator[MiniBroker]:
    with MiniBroker(num_network_threads=2, num_io_threads=4, group_initial_rebalance_delay_ms=0) as b:
        yield b


async def _scenario(bootstrap: str) -> None:
    topic = f"aio-{uuid.uuid4().hex[:8]}"
    group = f"g-{uuid.uuid4().hex[:8]}"
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        await admin.close()
    def consumer() -> Any:
        return aiokafka.AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                                         auto_offset_reset="earliest", enable_auto_commit=False,
                                         session_timeout_ms=10000, heartbeat_interval_ms=500)

    consumers = [consumer(), consumer()]
    for c in consumers:
        await c.start()
    got: list[bytes] = []
    loop = asyncio.get_running_loop()

    async def poll_until(cond: Callable[[], bool]) -> None:
        deadline = loop.time() + 30
        while not cond() and loop.time() < deadline:
            for c in consumers:
                for records in (await c.getmany(timeout_ms=200)).values():
                    got.extend(r.value for r in records)

    try:
        await poll_until(lambda: [len(c.assignment()) for c in consumers] == [2, 2])
        assert [len(c.assignment()) for c in consumers] == [2, 2]
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap)
        await producer.start()
        values = [f"v{i}".encode() for i in range(60)]
        try:
            for i, v in enumerate(values):
                await producer.send(topic, v, partition=i % PARTITIONS)
            await producer.flush()
        finally:
            await producer.stop()
        await poll_until(lambda: len(got) >= len(values))
        assert sorted(got) == sorted(values)  # each record once
        for c in consumers:
            await c.commit()
    finally:
        for c in consumers:
            await c.stop()
    later = consumer()
    await later.start()
    try:
        tps = [aiokafka.TopicPartition(topic, p) for p in range(PARTITIONS)]
        committed = [await later.committed(tp) for tp in tps]
        assert sum(o or 0 for o in committed) == len(values)
    finally:
        await later.stop()


def test_group_consumers_share_and_commit(broker: MiniBroker) -> None:
    asyncio.run(asyncio.wait_for(_scenario(broker.bootstrap_servers), 80))

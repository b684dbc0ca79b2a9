"""AsyncKafkaShareConsumer against a real MiniBroker's share groups, under asyncio and trio: records with their
delivery count, explicit acknowledgement through the consumer thread, a released record redelivered."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import AcknowledgeType, ShareConsumerRecord
from pykafka_client.aio import AsyncKafkaShareConsumer
from tests.integration.share.helpers import create_share_topic, produce

pytestmark = [pytest.mark.integration, pytest.mark.anyio, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def share_broker() -> Iterator[MiniBroker]:
    b = MiniBroker(share_auto_offset_reset="earliest", group_share_record_lock_duration_ms=60_000,
                   group_share_heartbeat_interval_ms=200).start()
    yield b
    b.shutdown()


async def test_async_share_consumer_acknowledges_and_gets_a_released_record_again(share_broker: MiniBroker) -> None:
    topic = create_share_topic(share_broker)
    produce(share_broker, topic, ["a", "b"])
    async with AsyncKafkaShareConsumer(
            {"bootstrap.servers": share_broker.bootstrap_servers, "group.id": topic, "value.deserializer": "str",
             "share.acknowledgement.mode": "explicit", "fetch.max.wait.ms": 100}) as consumer:
        await consumer.subscribe([topic])
        got: list[ShareConsumerRecord[Any, Any]] = []
        with anyio.fail_after(30):
            while len(got) < 2:
                got.extend(await consumer.poll(0.2))
        assert [(r.value, r.delivery_count) for r in got] == [("a", 1), ("b", 1)]
        await consumer.acknowledge(got[0], AcknowledgeType.ACCEPT)
        await consumer.acknowledge(got[1], AcknowledgeType.RELEASE)
        results = await consumer.commit(10)
        assert list(results.values()) == [None]
        again: list[ShareConsumerRecord[Any, Any]] = []
        with anyio.fail_after(30):
            async for record in consumer:
                again.append(record)
                await consumer.acknowledge(record)
                break
        assert [(r.value, r.offset, r.delivery_count) for r in again] == [("b", 1, 2)]
    assert consumer.closed

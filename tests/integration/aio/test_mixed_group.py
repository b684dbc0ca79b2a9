"""One consumer group, three kinds of member: our async consumer, our sync consumer and a confluent-kafka
(librdkafka) consumer share a topic's six partitions through mini_broker's coordinator, and every record is
read exactly once. The sync members are polled in worker threads, in turn with the async one."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import KafkaConsumer
from pykafka_client.aio import AsyncKafkaConsumer
from pykafka_client.errors import CommitFailedError, RebalanceInProgressClientError
from tests.integration.aio.conftest import consumer_config

ck = pytest.importorskip("confluent_kafka")
admin_mod = pytest.importorskip("confluent_kafka.admin")

pytestmark = [pytest.mark.interop, pytest.mark.anyio, pytest.mark.timeout(120)]

PARTITIONS = 6


@pytest.fixture(scope="module")
def broker() -> Any:
    with MiniBroker(num_network_threads=2, num_io_threads=4, group_initial_rebalance_delay_ms=0) as b:
        yield b


async def test_async_sync_and_librdkafka_members_share_one_group(broker: MiniBroker) -> None:
    topic = f"mixed-{uuid.uuid4().hex[:8]}"
    group = f"g-{topic}"
    admin = admin_mod.AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([admin_mod.NewTopic(topic, PARTITIONS, 1)])[topic].result(15)
    cfg = consumer_config(broker, group_id=group, partition_assignment_strategy="range")
    ours_async: AsyncKafkaConsumer[bytes | None, bytes | None] = AsyncKafkaConsumer(cfg)
    ours_sync: KafkaConsumer[bytes | None, bytes | None] = KafkaConsumer(cfg)
    theirs = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group,
                          "session.timeout.ms": 10000, "heartbeat.interval.ms": 500,
                          "partition.assignment.strategy": "range", "auto.offset.reset": "earliest",
                          "enable.auto.commit": False, "enable.partition.eof": False})  # fmt: skip
    got: dict[str, list[tuple[int, int]]] = {"async": [], "sync": [], "librdkafka": []}
    owned: dict[str, set[int]] = {}

    async def poll_once() -> None:
        records = await ours_async.poll(0.05)
        got["async"].extend((r.partition, r.offset) for r in records)
        owned["async"] = {tp.partition for tp in await ours_async.assignment()}
        if not records.is_empty():
            try:
                await ours_async.commit()
            except (CommitFailedError, RebalanceInProgressClientError):
                pass

        def sync_member() -> None:
            recs = ours_sync.poll(0.05)
            got["sync"].extend((r.partition, r.offset) for r in recs)
            owned["sync"] = {tp.partition for tp in ours_sync.assignment()}
            if not recs.is_empty():
                try:
                    ours_sync.commit_sync()
                except (CommitFailedError, RebalanceInProgressClientError):
                    pass

        def librdkafka_member() -> None:
            m = theirs.poll(0.05)
            if m is not None and m.error() is None:
                got["librdkafka"].append((m.partition(), m.offset()))
                theirs.commit(message=m, asynchronous=False)
            owned["librdkafka"] = {tp.partition for tp in theirs.assignment()}

        await anyio.to_thread.run_sync(sync_member)
        await anyio.to_thread.run_sync(librdkafka_member)

    async def poll_until(done: Callable[[], bool]) -> None:
        with anyio.fail_after(60):
            while not done():
                await poll_once()

    try:
        await ours_async.subscribe([topic])
        ours_sync.subscribe([topic])
        theirs.subscribe([topic])
        await poll_until(
            lambda: len(owned) == 3
            and sorted(len(p) for p in owned.values()) == [2, 2, 2]
            and set().union(*owned.values()) == set(range(PARTITIONS))
        )
        p = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
        for i in range(60):
            p.produce(topic, value=b"v%d" % i, partition=i % PARTITIONS)
        assert p.flush(20) == 0
        await poll_until(lambda: sum(len(v) for v in got.values()) >= 60)
        for _ in range(5):
            await poll_once()  # a duplicate would show up here
        consumed = [x for xs in got.values() for x in xs]
        assert len(consumed) == len(set(consumed)) == 60
        assert set(consumed) == {(p, o) for p in range(PARTITIONS) for o in range(10)}
        assert all(len(v) == 20 for v in got.values()), {k: len(v) for k, v in got.items()}
    finally:
        await ours_async.close(10)
        await anyio.to_thread.run_sync(lambda: ours_sync.close(10))
        await anyio.to_thread.run_sync(theirs.close)

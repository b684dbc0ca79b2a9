"""A consumer group of three async members: the partitions are split, a member leaving rebalances them,
coroutine listeners run (and may await the consumer's own commit) and every record is read exactly once."""

from __future__ import annotations

from collections.abc import Callable, Collection

import anyio
import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import TopicPartition
from pykafka_client.admin import NewTopic
from pykafka_client.aio import (
    AsyncAdminClient,
    AsyncConsumerRebalanceListener,
    AsyncKafkaConsumer,
    AsyncKafkaProducer,
)
from pykafka_client.errors import CommitFailedError, RebalanceInProgressClientError
from tests.integration.aio.conftest import consumer_config, topic_name

pytestmark = [pytest.mark.integration, pytest.mark.anyio, pytest.mark.timeout(120)]

PARTITIONS = 6


class Member(AsyncConsumerRebalanceListener):
    def __init__(self, consumer: AsyncKafkaConsumer[bytes | None, bytes | None]) -> None:
        self.consumer = consumer
        self.owned: set[TopicPartition] = set()
        self.revocations = 0
        self.nested_commits = 0
        self.got: list[bytes] = []

    async def on_partitions_revoked(self, revoked: Collection[TopicPartition]) -> None:
        self.revocations += 1
        if revoked:
            try:  # a nested call from inside the rebalance: it must return (no deadlock), whatever the outcome
                await self.consumer.commit()
                self.nested_commits += 1
            except (CommitFailedError, RebalanceInProgressClientError):
                self.nested_commits += 1
            await anyio.sleep(0)
        self.owned -= set(revoked)

    async def on_partitions_assigned(self, assigned: Collection[TopicPartition]) -> None:
        self.owned |= set(assigned)


async def test_three_async_members_share_partitions_and_rebalance(broker: MiniBroker) -> None:
    topic = topic_name()
    group = f"g-{topic}"
    cfg = consumer_config(broker, group_id=group, partition_assignment_strategy="range")
    members = [Member(AsyncKafkaConsumer(cfg)) for _ in range(3)]
    async with AsyncAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        await admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    async with AsyncKafkaProducer({"bootstrap.servers": broker.bootstrap_servers}) as producer:
        for p in range(PARTITIONS):
            await producer.send(topic, b"init", partition=p)

    async def poll_all(cond: Callable[[], bool], members_: list[Member]) -> None:
        with anyio.fail_after(60):
            while not cond():
                async with anyio.create_task_group() as tg:
                    for m in members_:

                        async def one(m: Member = m) -> None:
                            records = await m.consumer.poll(0.2)
                            for r in records:
                                assert r.value is not None, "the test writes no null values"
                                m.got.append(r.value)
                            if not records.is_empty():
                                try:
                                    await m.consumer.commit()
                                except (CommitFailedError, RebalanceInProgressClientError):
                                    pass  # a rebalance started: the next owner re-reads from the last commit

                        tg.start_soon(one)

    for m in members:
        await m.consumer.subscribe([topic], m)
    try:
        await poll_all(lambda: sorted(len(m.owned) for m in members) == [2, 2, 2], members)
        async with AsyncKafkaProducer({"bootstrap.servers": broker.bootstrap_servers}) as producer:
            for i in range(60):
                await producer.send(topic, b"v%d" % i, partition=i % PARTITIONS)
        expected = sorted([b"init"] * PARTITIONS + [b"v%d" % i for i in range(60)])
        await poll_all(lambda: sum(len(m.got) for m in members) >= len(expected), members)
        assert sorted(v for m in members for v in m.got) == expected  # every record once
        assert all(m.got for m in members)
        # a member leaves: the two others take its partitions (its revoke listener commits on the way out)
        await members[2].consumer.close()
        rest = members[:2]
        await poll_all(lambda: sorted(len(m.owned) for m in rest) == [3, 3], rest)
        assert set().union(*(m.owned for m in rest)) == {TopicPartition(topic, p) for p in range(PARTITIONS)}
        assert all(m.revocations >= 1 for m in members)
        assert sum(m.nested_commits for m in members) >= 1
        async with AsyncKafkaProducer({"bootstrap.servers": broker.bootstrap_servers}) as producer:
            for i in range(30):
                await producer.send(topic, b"after%d" % i, partition=i % PARTITIONS)
        before = sum(len(m.got) for m in rest)
        await poll_all(lambda: sum(len(m.got) for m in rest) >= before + 30, rest)
        after = sorted(v for m in rest for v in m.got if v is not None and v.startswith(b"after"))
        assert after == sorted(b"after%d" % i for i in range(30))
    finally:
        for m in members:
            await m.consumer.close()

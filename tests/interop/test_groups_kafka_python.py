"""kafka-python group consumers against mini_broker: two members share a topic, commit, and a later member
of the same group resumes from the committed offsets."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mini_broker.broker import MiniBroker

kafka = pytest.importorskip("kafka")

pytestmark = [pytest.mark.interop, pytest.mark.timeout(90)]

PARTITIONS = 4


@pytest.fixture(scope="module")
def broker() -> Iterator[MiniBroker]:
    with MiniBroker(num_network_threads=2, num_io_threads=4, group_initial_rebalance_delay_ms=0) as b:
        yield b


def _create(broker: MiniBroker) -> str:
    topic = f"kp-{uuid.uuid4().hex[:8]}"
    admin = kafka.KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        admin.create_topics([kafka.admin.NewTopic(topic, PARTITIONS, 1)])
    finally:
        admin.close()
    return topic


def _produce(broker: MiniBroker, topic: str, n: int) -> list[bytes]:
    producer = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    values = [f"v{i}".encode() for i in range(n)]
    for i, v in enumerate(values):
        producer.send(topic, value=v, partition=i % PARTITIONS)
    producer.flush(20)
    producer.close()
    return values


def _consumer(broker: MiniBroker, topic: str, group: str) -> Any:
    return kafka.KafkaConsumer(topic, bootstrap_servers=broker.bootstrap_servers, group_id=group,
                               auto_offset_reset="earliest", enable_auto_commit=False, session_timeout_ms=10000,
                               heartbeat_interval_ms=500, max_poll_interval_ms=20000)


def test_group_consumers_share_and_commit(broker: MiniBroker) -> None:
    topic = _create(broker)
    group = f"g-{uuid.uuid4().hex[:8]}"
    consumers = [_consumer(broker, topic, group) for _ in range(2)]
    got: list[list[bytes]] = [[], []]

    def poll_until(cond: Callable[[], bool]) -> None:
        # kafka-python needs poll timeouts well above its heartbeat interval to finish a rebalance.
        deadline = time.monotonic() + 30
        while not cond() and time.monotonic() < deadline:
            for i, c in enumerate(consumers):
                for records in c.poll(timeout_ms=1000).values():
                    got[i].extend(r.value for r in records)

    try:
        poll_until(lambda: [len(c.assignment()) for c in consumers] == [2, 2])
        assert [len(c.assignment()) for c in consumers] == [2, 2]
        values = _produce(broker, topic, 80)
        poll_until(lambda: sum(map(len, got)) >= len(values))
        assert sorted(got[0] + got[1]) == sorted(values)  # each record once
        assert got[0] and got[1]
        for c in consumers:
            c.commit()
    finally:
        for c in consumers:
            c.close()
    later = _consumer(broker, topic, group)
    try:
        tps = [kafka.TopicPartition(topic, p) for p in range(PARTITIONS)]
        assert sum(later.committed(tp) or 0 for tp in tps) == len(values)
    finally:
        later.close()

"""kafka-python and aiokafka produce and consume on a 3-broker MiniCluster across a leader change (issue 16,
interop; confluent-kafka is covered with the cluster itself). Each library writes half of the records with
acks=all, its consumer reads them, the leader's broker is SIGKILLed, the library writes the other half
(its retries must find the new leader), and the same consumer, still open, reads on from the new leader.
No acknowledged record may be missing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mini_broker.cluster.mini_cluster import MiniCluster
from tests.integration.cluster.failover import await_new_leader_and_restart, kill_leader

kafka = pytest.importorskip("kafka")
aiokafka = pytest.importorskip("aiokafka")

pytestmark = [pytest.mark.integration, pytest.mark.interop, pytest.mark.timeout(600)]

N = 2_000
HALF = N // 2


def test_kafka_python_across_a_leader_change(cluster: MiniCluster) -> None:
    topic = "failover-kafka-python"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    producer = kafka.KafkaProducer(
        bootstrap_servers=cluster.bootstrap_servers, acks="all", linger_ms=5, retries=1_000_000,
        request_timeout_ms=15_000, delivery_timeout_ms=300_000, retry_backoff_ms=200,
    )
    consumer = kafka.KafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers, enable_auto_commit=False, request_timeout_ms=15_000,
        retry_backoff_ms=200,
    )
    tp = kafka.TopicPartition(topic, 0)
    victim = -1
    try:
        acked: list[int] = []
        futures = [(i, producer.send(topic, value=b"%d" % i, partition=0)) for i in range(HALF)]
        producer.flush(120)
        acked += [i for i, f in futures if f.get(60) is not None]
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        seen = _poll_kafka_python(consumer, tp, HALF)
        victim = kill_leader(cluster, topic)
        futures = [(i, producer.send(topic, value=b"%d" % i, partition=0)) for i in range(HALF, N)]
        producer.flush(300)
        acked += [i for i, f in futures if f.get(60) is not None]
        seen += _poll_kafka_python(consumer, tp, len(acked) - len(seen))
    finally:
        consumer.close()
        producer.close(30)
        if victim >= 0:
            await_new_leader_and_restart(cluster, topic, 1, victim)
    assert len(acked) == N
    missing = set(acked) - set(seen)
    assert not missing, f"{len(missing)} acknowledged record(s) never consumed, e.g. {sorted(missing)[:5]}"


def _poll_kafka_python(consumer: Any, tp: Any, count: int, timeout_s: float = 180.0) -> list[int]:
    import time

    out: list[int] = []
    deadline = time.monotonic() + timeout_s
    while len(out) < count:
        assert time.monotonic() < deadline, f"kafka-python consumed {len(out)} of {count} records"
        for m in consumer.poll(timeout_ms=1000).get(tp, []):
            out.append(int(m.value))
    return out


def test_aiokafka_across_a_leader_change(cluster: MiniCluster) -> None:
    topic = "failover-aiokafka"
    cluster.create_topic(topic, partitions=1, replication_factor=3)

    async def main() -> tuple[list[int], list[int], int]:
        producer = aiokafka.AIOKafkaProducer(
            bootstrap_servers=cluster.bootstrap_servers, acks="all", linger_ms=5, request_timeout_ms=15_000,
            retry_backoff_ms=200,
        )
        consumer = aiokafka.AIOKafkaConsumer(
            bootstrap_servers=cluster.bootstrap_servers, enable_auto_commit=False, request_timeout_ms=15_000,
            retry_backoff_ms=200,
        )
        await producer.start()
        await consumer.start()
        tp = aiokafka.TopicPartition(topic, 0)
        victim = -1
        try:
            acked = await _send_aiokafka(producer, topic, range(HALF))
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            seen = await _poll_aiokafka(consumer, tp, HALF)
            victim = await asyncio.to_thread(kill_leader, cluster, topic)
            acked += await _send_aiokafka(producer, topic, range(HALF, N))
            seen += await _poll_aiokafka(consumer, tp, len(acked) - len(seen))
            return acked, seen, victim
        finally:
            await consumer.stop()
            await producer.stop()

    acked, seen, victim = asyncio.run(asyncio.wait_for(main(), 400))
    await_new_leader_and_restart(cluster, topic, 1, victim)
    assert len(acked) == N
    missing = set(acked) - set(seen)
    assert not missing, f"{len(missing)} acknowledged record(s) never consumed, e.g. {sorted(missing)[:5]}"


async def _send_aiokafka(producer: Any, topic: str, values: range) -> list[int]:
    """Send with aiokafka's own retries; a batch that fails after them (aiokafka gives up on a dead
    leader once ``request_timeout_ms`` passes) is sent again, as an application would."""
    acked: list[int] = []
    pending = list(values)
    for _ in range(20):
        futures = [(i, await producer.send(topic, value=b"%d" % i, partition=0)) for i in pending]
        pending = []
        for i, f in futures:
            try:
                await f
                acked.append(i)
            except aiokafka.errors.KafkaError:
                pending.append(i)
        if not pending:
            return acked
        await asyncio.sleep(1)
    raise AssertionError(f"aiokafka could not deliver {len(pending)} record(s) after the leader change")


async def _poll_aiokafka(consumer: Any, tp: Any, count: int, timeout_s: float = 180.0) -> list[int]:
    out: list[int] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while len(out) < count:
        assert loop.time() < deadline, f"aiokafka consumed {len(out)} of {count} records"
        batch = await consumer.getmany(tp, timeout_ms=1000)
        out.extend(int(m.value) for m in batch.get(tp, []))
    return out

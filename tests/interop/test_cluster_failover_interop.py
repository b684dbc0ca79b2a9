"""kafka-python and aiokafka produce (acks=all) and consume against a 3-broker MiniCluster across a leader
change: the leader of the partition is SIGKILLed between two rounds of produce; everything acknowledged is read
back in order (confluent-kafka's run is in tests/integration/cluster/test_cluster_failover.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from mini_broker.cluster.mini_cluster import MiniCluster

pytestmark = [pytest.mark.interop, pytest.mark.timeout(240)]

ROUND = 500


@pytest.fixture
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MiniCluster]:
    with MiniCluster(3, data_dir=str(tmp_path_factory.mktemp("cluster"))) as c:
        c.create_topic("interop", partitions=1, replication_factor=3)
        yield c


def test_kafka_python_across_a_leader_change(cluster: MiniCluster) -> None:
    kafka = pytest.importorskip("kafka")
    producer = kafka.KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", retries=50,
                                   retry_backoff_ms=200, request_timeout_ms=10000, metadata_max_age_ms=1000)
    sent = [b"a-%04d" % i for i in range(ROUND)]
    for f in [producer.send("interop", v, partition=0) for v in sent]:
        f.get(timeout=60)
    victim = cluster.leader("interop", 0)
    cluster.kill(victim)
    cluster.wait_for_leader("interop", 0, not_in={victim})
    more = [b"b-%04d" % i for i in range(ROUND)]
    for f in [producer.send("interop", v, partition=0) for v in more]:
        f.get(timeout=120)
    producer.close()
    consumer = kafka.KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, enable_auto_commit=False,
                                   auto_offset_reset="earliest", consumer_timeout_ms=15000)
    tp = kafka.TopicPartition("interop", 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    got = [m.value for _, m in zip(range(2 * ROUND), consumer, strict=False)]
    consumer.close()
    assert got == sent + more


def test_aiokafka_across_a_leader_change(cluster: MiniCluster) -> None:
    aiokafka = pytest.importorskip("aiokafka")

    async def main() -> list[bytes]:
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all",
                                             request_timeout_ms=10000, metadata_max_age_ms=1000)
        await producer.start()
        try:
            for i in range(ROUND):
                await producer.send_and_wait("interop", b"a-%04d" % i, partition=0)
            victim = cluster.leader("interop", 0)
            await asyncio.to_thread(cluster.kill, victim)
            for i in range(ROUND):
                await producer.send_and_wait("interop", b"b-%04d" % i, partition=0)
        finally:
            await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, enable_auto_commit=False,
                                             auto_offset_reset="earliest")
        await consumer.start()
        got: list[bytes] = []
        try:
            tp = aiokafka.TopicPartition("interop", 0)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            while len(got) < 2 * ROUND:
                batch = await asyncio.wait_for(consumer.getmany(tp, timeout_ms=1000), 60)
                got.extend(m.value for m in batch.get(tp, []))
        finally:
            await consumer.stop()
        return got

    got = asyncio.run(asyncio.wait_for(main(), 180))
    assert got == [b"a-%04d" % i for i in range(ROUND)] + [b"b-%04d" % i for i in range(ROUND)]

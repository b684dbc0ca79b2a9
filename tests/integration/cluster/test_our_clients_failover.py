"""Our producer and a consumer group of ours on a 3-broker MiniCluster while the partition leader's broker is
SIGKILLed twice and restarted (issue 16, end-to-end tests): the group keeps consuming through the failovers
and loses nothing, and every record the idempotent acks=all producer had acknowledged is read back exactly
once, in order per partition, at the offset it was acknowledged with.

The 200,000-record run of the idempotent producer alone is test_cluster_failover.py's; this one adds the group
and the offset check with a moderate count (6,000). Nothing here asserts a rate or a latency."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from mini_broker.cluster.mini_cluster import MiniCluster
from pykafka_client import KafkaConsumer, KafkaProducer
from pykafka_client.producer.record_metadata import RecordMetadata
from tests.integration.cluster.failover import (
    await_new_leader_and_restart,
    kill_leader,
    read_back,
    wait_until,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

PARTITIONS = 3


class Acks:
    """Delivery outcomes of a produce run, filled by the producer's I/O thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.acked: dict[int, list[tuple[int, int]]] = {p: [] for p in range(PARTITIONS)}  # p -> (offset, i)
        self.failed: list[tuple[int, BaseException]] = []

    def callback(self, i: int) -> Any:
        def on_delivery(md: RecordMetadata | None, exc: BaseException | None) -> None:
            with self.lock:
                if exc is not None or md is None:
                    self.failed.append((i, exc or RuntimeError("no metadata")))
                else:
                    self.acked[md.partition].append((md.offset, i))

        return on_delivery

    def acked_values(self) -> set[int]:
        with self.lock:
            return {i for recs in self.acked.values() for _, i in recs}


def produce_through_two_leader_kills(cluster: MiniCluster, topic: str, n: int) -> Acks:
    """Send ``n`` records (value ``i`` to partition ``i % 3``) in five chunks; after the first and the third
    chunk the broker leading partition 0 is SIGKILLed with records still in flight, the next chunk is sent
    while the leader is being re-elected, then the broker is restarted and rejoins every ISR."""
    acks = Acks()
    producer = KafkaProducer({
        "bootstrap.servers": cluster.bootstrap_servers,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        "request.timeout.ms": 15_000,
        "delivery.timeout.ms": 300_000,
    })
    chunks = [range(k * n // 5, (k + 1) * n // 5) for k in range(5)]
    victim = -1

    def send(chunk: range) -> None:
        for i in chunk:
            producer.send(topic, value=b"%d" % i, partition=i % PARTITIONS, on_delivery=acks.callback(i))

    try:
        for k, chunk in enumerate(chunks):
            send(chunk)
            if k in (0, 2):
                victim = kill_leader(cluster, topic)
            elif k in (1, 3):
                await_new_leader_and_restart(cluster, topic, PARTITIONS, victim)
        producer.flush(300)
    finally:
        producer.close(30)
    return acks


def check_exactly_once_in_order(acks: Acks, read: dict[int, list[tuple[int, int]]], n: int) -> None:
    assert not acks.failed, f"{len(acks.failed)} record(s) not acknowledged, first: {acks.failed[:3]}"
    for p in range(PARTITIONS):
        values = [i for _, i in read[p]]
        sent = [i for i in range(n) if i % PARTITIONS == p]
        assert len(values) == len(set(values)), f"partition {p}: duplicates {len(values) - len(set(values))}"
        assert values == sent, f"partition {p}: read back differs from what was sent (order, loss or extra records)"
        by_offset = dict(read[p])
        wrong = [(off, i, by_offset.get(off)) for off, i in acks.acked[p] if by_offset.get(off) != i]
        assert not wrong, f"partition {p}: acknowledged offsets hold other records: {wrong[:5]}"


class GroupMember(threading.Thread):
    """One of our consumers in a group, polling until told to stop; records every value it got."""

    def __init__(self, cluster: MiniCluster, topic: str, group: str) -> None:
        super().__init__(daemon=True)
        self.consumer: KafkaConsumer[Any, Any] = KafkaConsumer({
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 10_000,
            "heartbeat.interval.ms": 1_000,
            "max.poll.interval.ms": 60_000,
            "auto.commit.interval.ms": 500,
        })
        self.topic = topic
        self.seen: list[int] = []
        self.lock = threading.Lock()
        self.stop_requested = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.consumer.subscribe([self.topic])
            while not self.stop_requested.is_set():
                records = self.consumer.poll(0.5)
                with self.lock:
                    self.seen.extend(int(r.value) for r in records)
        except BaseException as e:  # reported by the test
            self.error = e
        finally:
            self.consumer.close(10)

    def values(self) -> list[int]:
        with self.lock:
            return list(self.seen)


def test_group_keeps_consuming_and_idempotent_producer_loses_nothing_through_leader_kills(cluster: MiniCluster) -> None:
    topic, n = "failover-group", 6_000
    cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=3)
    members = [GroupMember(cluster, topic, "failover-group") for _ in range(2)]
    for m in members:
        m.start()
    try:
        epoch = cluster.leader_epoch(topic, 0)
        acks = produce_through_two_leader_kills(cluster, topic, n)
        assert cluster.leader_epoch(topic, 0) >= epoch + 2  # two failovers happened under the producer
        assert not acks.failed, f"{len(acks.failed)} record(s) not acknowledged, first: {acks.failed[:3]}"
        acked = acks.acked_values()

        def all_consumed() -> bool:
            assert not any(m.error for m in members), [m.error for m in members]
            got: set[int] = set()
            for m in members:
                got.update(m.values())
            return acked <= got

        wait_until(all_consumed, 180, "the group to consume every acknowledged record")
    finally:
        for m in members:
            m.stop_requested.set()
        for m in members:
            m.join(60)
    errors = [m.error for m in members if m.error is not None]
    assert not errors, errors
    check_exactly_once_in_order(acks, read_back(cluster, topic, PARTITIONS), n)

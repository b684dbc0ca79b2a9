"""KIP-320 on a real cluster: our consumer detects that an unclean leader election truncated the log below
its position. A 2-broker MiniCluster with ``unclean.leader.election.enable=true``: the follower is killed,
the leader takes five more records alone (acks=1), the consumers read them, the leader is killed and the
stale follower comes back as the leader. Its log diverges from offset 5, so a consumer with
``auto.offset.reset=none`` gets LogTruncationError naming offset 5, and one with a reset policy moves back
to offset 5 and reads what the new leader writes there.

Before position validation (checked: this test fails on that code) the consumers kept fetching from offset
10 on the new leader and learned nothing but OFFSET_OUT_OF_RANGE: the strict one got OffsetOutOfRangeClientError
without the divergent offset, the lenient one jumped back to offset 0 and re-read the log; had the new leader
already written past offset 10, offsets 5-9 of the new log would have been skipped silently."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from mini_broker.cluster.mini_cluster import MiniCluster
from pykafka_client import KafkaConsumer, KafkaProducer, TopicPartition
from pykafka_client.errors import LogTruncationError
from pykafka_client.structs import OffsetAndMetadata
from tests.integration.cluster.failover import FAILOVER_TIMEOUT_S, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

TOPIC = "truncated"
TP = TopicPartition(TOPIC, 0)


@pytest.fixture
def unclean_cluster() -> Iterator[MiniCluster]:
    with MiniCluster(2, overrides={"unclean.leader.election.enable": True, "min.insync.replicas": 1}) as c:
        yield c


def produce(cluster: MiniCluster, values: list[bytes], acks: int | str = 1) -> list[int]:
    p = KafkaProducer({"bootstrap.servers": cluster.bootstrap_servers, "acks": acks, "enable.idempotence": False,
                       "delivery.timeout.ms": 120_000, "request.timeout.ms": 10_000})
    try:
        futures = [p.send(TOPIC, value=v, partition=0) for v in values]
        p.flush(120)
        return [f.result(60).offset for f in futures]
    finally:
        p.close(30)


def consumer(cluster: MiniCluster, reset: str) -> KafkaConsumer[Any, Any]:
    c: KafkaConsumer[Any, Any] = KafkaConsumer({"bootstrap.servers": cluster.bootstrap_servers,
                                                "auto.offset.reset": reset, "enable.auto.commit": False})
    c.assign([TP])
    c.seek(TP, 0)
    return c


def poll_values(c: KafkaConsumer[Any, Any], count: int, timeout_s: float = 120.0) -> list[tuple[int, bytes]]:
    out: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + timeout_s
    while len(out) < count:
        assert time.monotonic() < deadline, f"consumed {out} of {count} records"
        out.extend((r.offset, r.value) for r in c.poll(0.5))
    return out


def test_unclean_election_truncation_is_detected_by_our_consumer(unclean_cluster: MiniCluster) -> None:
    cluster = unclean_cluster
    cluster.create_topic(TOPIC, partitions=1, replication_factor=2)
    leader = cluster.leader(TOPIC, 0)
    follower = 1 - leader
    cluster.wait_for_isr(TOPIC, 0, 2, timeout=FAILOVER_TIMEOUT_S)
    epoch = cluster.leader_epoch(TOPIC, 0)
    # acks=all: both replicas have offsets 0-4 before the follower goes away
    assert produce(cluster, [b"a%d" % i for i in range(5)], acks="all") == list(range(5))
    strict, lenient = consumer(cluster, "none"), consumer(cluster, "earliest")
    try:
        cluster.kill(follower)
        wait_until(lambda: cluster.isr(TOPIC, 0) == [leader], FAILOVER_TIMEOUT_S, "the ISR to shrink to the leader")
        assert produce(cluster, [b"b%d" % i for i in range(5, 10)]) == list(range(5, 10))
        for c in (strict, lenient):
            assert [o for o, _ in poll_values(c, 10)] == list(range(10))
            assert c.position(TP) == 10
        # The leader dies; the stale follower comes back and is elected uncleanly: offsets 5-9 are gone.
        cluster.kill(leader)
        cluster.restart(follower, timeout=FAILOVER_TIMEOUT_S)
        cluster.wait_for_leader(TOPIC, 0, not_in={leader}, timeout=FAILOVER_TIMEOUT_S)
        assert cluster.leader(TOPIC, 0) == follower

        deadline = time.monotonic() + 120
        with pytest.raises(LogTruncationError) as info:
            while time.monotonic() < deadline:
                assert not strict.poll(0.5), "records read past a truncated log"
        assert info.value.divergent_offsets == {TP: OffsetAndMetadata(5, "", epoch)}
        assert "seek" in str(info.value)

        new = produce(cluster, [b"c%d" % i for i in range(3)])
        assert new == [5, 6, 7]  # the new leader writes over the lost offsets
        assert poll_values(lenient, 3) == [(5, b"c0"), (6, b"c1"), (7, b"c2")]

        divergent = info.value.divergent_offsets[TP]
        assert isinstance(divergent, OffsetAndMetadata)
        strict.seek(TP, divergent.offset)  # what the error says to do
        assert poll_values(strict, 3) == [(5, b"c0"), (6, b"c1"), (7, b"c2")]
    finally:
        strict.close(10)
        lenient.close(10)


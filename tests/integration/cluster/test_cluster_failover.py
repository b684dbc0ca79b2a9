"""A 3-broker MiniCluster end to end: metadata, acks=all with our idempotent producer through leader kills
(SIGKILL) and restarts, min.insync.replicas, acks=1 vs acks=all under an unclean failover, confluent-kafka
across a leader change.

The two producer failover tests run the issue's 200,000 records: the failovers (session timeout, election,
restart, catching up) cost most of their ~10 s each, the records about as much again as 20,000 would.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mini_broker.cluster.mini_cluster import MiniCluster
from pykafka_client import AdminClient, KafkaProducer, RecordMetadata
from pykafka_client.errors import NotEnoughReplicasError, NotLeaderOrFollowerError
from pykafka_client.protocol.messages import ProduceRequest
from pykafka_client.protocol.records.builder import MemoryRecordsBuilder
from tests.integration.cluster.failover import TwoLeaderKills, wait_until
from tests.integration.cluster.helpers import Endpoint, read_back
from tests.integration.wire import Conn

#: the issue's count for the producer failover tests (ours and confluent-kafka's)
RECORDS = 200_000


@pytest.fixture
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MiniCluster]:
    with MiniCluster(3, data_dir=str(tmp_path_factory.mktemp("cluster"))) as c:
        yield c


def _value(p: int, seq: int) -> bytes:
    return b"%d-%08d" % (p, seq)


def test_metadata_lists_every_broker_with_the_controllers_leaders(cluster: MiniCluster) -> None:
    cluster.create_topic("meta", partitions=3, replication_factor=3)
    with AdminClient(bootstrap_servers=cluster.bootstrap_servers) as admin:
        desc = admin.describe_topics(["meta"], timeout=30)["meta"]
        nodes = admin.describe_cluster(timeout=30).nodes
    assert sorted(n.id for n in nodes) == [0, 1, 2]
    for p in desc.partitions:
        assert p.leader is not None and p.leader.id == cluster.leader("meta", p.partition)
        assert sorted(r.id for r in p.replicas) == [0, 1, 2]
        assert sorted(r.id for r in p.isr) == [0, 1, 2]


def _check_exactly_once_in_order(acked: dict[int, list[int]], got: dict[int, list[bytes]], records: int) -> None:
    """Every record was acknowledged, and each partition holds each acknowledged record exactly once, in the
    order sent."""
    assert sum(len(v) for v in acked.values()) == records
    for p, values in got.items():
        seqs = [int(v.split(b"-")[1]) for v in values]
        assert len(seqs) == len(set(seqs)), f"partition {p} has {len(seqs) - len(set(seqs))} duplicates"
        assert seqs == sorted(seqs), f"partition {p} is out of order"
        assert set(acked[p]) <= set(seqs), f"partition {p} lost {len(set(acked[p]) - set(seqs))} acked records"


@pytest.mark.timeout(900)
def test_idempotent_acks_all_loses_and_duplicates_nothing_through_two_leader_kills(cluster: MiniCluster) -> None:
    topic, partitions, records = "failover", 3, RECORDS
    cluster.create_topic(topic, partitions=partitions, replication_factor=3)
    acked: dict[int, list[int]] = {p: [] for p in range(partitions)}
    errors: list[BaseException] = []
    lock = threading.Lock()
    # kill when a quarter (then half) is acknowledged; hold back the records past 3/8 (3/4) until it happened
    killer = TwoLeaderKills(cluster, topic, partitions, (records // 4, records // 2))

    def on_delivery(err: BaseException | None, p: int, seq: int) -> None:
        if err is not None:
            errors.append(err)
            return
        with lock:
            acked[p].append(seq)
        killer.acked()

    def delivered(p: int, seq: int, md: RecordMetadata | None, err: BaseException | None) -> None:
        on_delivery(err, p, seq)

    with KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", enable_idempotence=True,
                       linger_ms=5, delivery_timeout_ms=300_000, request_timeout_ms=15_000) as producer:
        for seq in range(records):
            p = seq % partitions
            producer.send(topic, value=_value(p, seq), partition=p,
                          on_delivery=functools.partial(delivered, p, seq))
            if seq in (records * 3 // 8, records * 3 // 4):
                killer.wait_for_kills(1 if seq == records * 3 // 8 else 2)
        producer.flush(300)
    killer.join()
    assert not errors, errors[:3]
    _check_exactly_once_in_order(acked, read_back(cluster.bootstrap_servers, topic, partitions, records), records)


def _produce_raw_response(port: int, topic: str, acks: int, value: bytes, version: int = 9) -> Any:
    builder = MemoryRecordsBuilder(write_limit=1 << 20)
    builder.append(int(time.time() * 1000), None, value)
    body = ProduceRequest(acks=acks, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=builder.build())])])
    with Conn(Endpoint(port)) as conn:  # type: ignore[arg-type]
        return conn.call(body, version)


def _produce_raw(port: int, topic: str, acks: int, value: bytes) -> int:
    return int(_produce_raw_response(port, topic, acks, value).responses[0].partition_responses[0].error_code)


def test_a_follower_refuses_produce_and_names_the_leader_kip_951(cluster: MiniCluster) -> None:
    cluster.create_topic("hint", partitions=1, replication_factor=3)
    leader = cluster.leader("hint", 0)
    follower = next(b for b in cluster.brokers if b != leader)
    resp = _produce_raw_response(cluster.brokers[follower].port, "hint", 1, b"x", version=11)
    part = resp.responses[0].partition_responses[0]
    assert part.error_code == NotLeaderOrFollowerError.code
    assert part.current_leader.leader_id == leader
    assert part.current_leader.leader_epoch == cluster.leader_epoch("hint", 0)
    assert [(n.node_id, n.port) for n in resp.node_endpoints] == [(leader, cluster.brokers[leader].port)]


def test_min_insync_replicas_refuses_acks_all_but_not_acks_1_with_a_follower_stopped(cluster: MiniCluster) -> None:
    cluster.create_topic("minisr", partitions=1, replication_factor=2, configs={"min.insync.replicas": "2"})
    leader = cluster.leader("minisr", 0)
    follower = next(r for r in cluster.isr("minisr", 0) if r != leader)
    port = cluster.brokers[leader].port
    assert _produce_raw(port, "minisr", -1, b"both in sync") == 0
    cluster.stop(follower)
    wait_until(lambda: cluster.isr("minisr", 0) == [leader], 30, "the ISR to shrink")
    cluster.wait_for_metadata()  # the leader learns the ISR from its next heartbeat
    assert _produce_raw(port, "minisr", -1, b"refused") == NotEnoughReplicasError.code
    assert _produce_raw(port, "minisr", 1, b"acks=1 still works") == 0
    cluster.restart(follower)
    cluster.wait_for_isr("minisr", 0, 2)
    assert _produce_raw(port, "minisr", -1, b"back in sync") == 0


def test_acks_1_can_lose_acknowledged_records_in_an_unclean_failover_and_acks_all_cannot(
        cluster: MiniCluster) -> None:
    """The follower is stopped, so the ISR is the leader alone. acks=1 writes are acknowledged by the leader only;
    the leader dies; the stale follower comes back and, with unclean election, leads: those records are gone
    (and the old leader truncates them when it returns). With min.insync.replicas=2 the same acks=all writes are
    refused instead of acknowledged, so nothing acknowledged is lost."""
    acked: dict[str, list[bytes]] = {"unclean-acks1": [], "unclean-acksall": []}
    for topic in acked:
        cluster.create_topic(topic, partitions=1, replication_factor=2,
                             configs={"unclean.leader.election.enable": "true", "min.insync.replicas": "2"})
    for topic, acks in (("unclean-acks1", 1), ("unclean-acksall", -1)):
        # the first round's kills may have shrunk this topic's ISR too: a follower must be back in it first
        cluster.wait_for_isr(topic, 0, 2, timeout=60)
        leader = cluster.leader(topic, 0)
        follower = next(r for r in cluster.isr(topic, 0) if r != leader)
        cluster.stop(follower)
        wait_until(lambda t=topic, ld=leader: cluster.isr(t, 0) == [ld], 30, "the ISR to shrink")  # type: ignore[misc]
        cluster.wait_for_metadata()
        for i in range(5):
            v = b"%s-%d" % (topic.encode(), i)
            if _produce_raw(cluster.brokers[leader].port, topic, acks, v) == 0:
                acked[topic].append(v)
        cluster.kill(leader)
        cluster.restart(follower)
        cluster.wait_for_leader(topic, 0, not_in={leader})
        cluster.restart(leader)
        cluster.wait_for_isr(topic, 0, 2, timeout=60)
        after = b"%s-after-failover" % topic.encode()
        assert _produce_raw(cluster.brokers[cluster.leader(topic, 0)].port, topic, -1, after) == 0
        got = read_back(cluster.bootstrap_servers, topic, 1, 1, timeout_s=30)[0]
        if acks == 1:
            assert acked[topic] and not set(acked[topic]) <= set(got), "acks=1 records survived the unclean failover"
            # the old leader truncated its divergent tail (OffsetForLeaderEpoch) before rejoining the ISR: when it
            # leads again the lost records do not come back
            new_leader = cluster.leader(topic, 0)
            cluster.kill(new_leader)
            assert cluster.wait_for_leader(topic, 0, not_in={new_leader}) == leader
            cluster.wait_for_metadata()
            # a fresh consumer finds the new leader past the dead one: 30 s is slack for a loaded 2-core box
            assert read_back(cluster.bootstrap_servers, topic, 1, len(got), timeout_s=30)[0] == got
            cluster.restart(new_leader)
        else:
            assert acked[topic] == [] and got == [after]


@pytest.mark.timeout(900)
def test_confluent_kafka_idempotent_acks_all_through_two_leader_kills(cluster: MiniCluster) -> None:
    """confluent-kafka's idempotent acks=all producer while the leader of partition 0 is SIGKILLed twice and
    restarted: every record acknowledged, read back exactly once in order (with our consumer and with
    confluent-kafka's)."""
    ck = pytest.importorskip("confluent_kafka")
    topic, partitions, records = "ck-failover", 3, RECORDS
    cluster.create_topic(topic, partitions=partitions, replication_factor=3)
    acked: dict[int, list[int]] = {p: [] for p in range(partitions)}
    errors: list[object] = []
    killer = TwoLeaderKills(cluster, topic, partitions, (records // 4, records // 2))

    def cb(err: object, msg: Any) -> None:  # runs in producer.poll()/flush() on this thread
        if err is not None:
            errors.append(err)
        else:
            acked[msg.partition()].append(int(msg.value().split(b"-")[1]))
            killer.acked()

    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "enable.idempotence": True,
                            "linger.ms": 5, "message.timeout.ms": 300_000, "queue.buffering.max.messages": 1_000_000})
    for seq in range(records):
        p = seq % partitions
        producer.produce(topic, value=_value(p, seq), partition=p, callback=cb)
        if seq % 1000 == 0:
            producer.poll(0)
        if seq in (records * 3 // 8, records * 3 // 4):
            killer.wait_for_kills(1 if seq == records * 3 // 8 else 2, pump=lambda: producer.poll(0.05))
    assert producer.flush(300) == 0, "records left unacknowledged"
    killer.join()
    assert not errors, errors[:3]
    got = read_back(cluster.bootstrap_servers, topic, partitions, records)
    _check_exactly_once_in_order(acked, got, records)
    # confluent-kafka's consumer reads the same
    consumer = ck.Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "ck-failover",
                            "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.assign([ck.TopicPartition(topic, p, 0) for p in range(partitions)])
    theirs: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    deadline = time.monotonic() + 120
    while sum(len(v) for v in theirs.values()) < records and time.monotonic() < deadline:
        for m in consumer.consume(10_000, 0.5):
            if not m.error():
                theirs[m.partition()].append(m.value())
    consumer.close()
    assert theirs == got


def test_our_consumer_group_keeps_consuming_through_a_leader_kill(cluster: MiniCluster) -> None:
    """A group member of ours consumes while the leader of one partition (not the coordinators' broker, whose
    group state is not replicated) is SIGKILLed and restarted: every acknowledged record is consumed."""
    from pykafka_client import KafkaConsumer

    topic, partitions, total = "group-failover", 3, 6000
    cluster.create_topic(topic, partitions=partitions, replication_factor=3)
    victim = next(cluster.leader(topic, p) for p in range(partitions) if cluster.leader(topic, p) != 0)
    acked: set[bytes] = set()
    consumed: set[bytes] = set()
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id="survivors",
                       auto_offset_reset="earliest") as consumer, \
            KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", linger_ms=5) as producer:
        consumer.subscribe([topic])

        def produce(lo: int, hi: int) -> None:
            futures = {producer.send(topic, value=b"%06d" % i, partition=i % partitions): b"%06d" % i
                       for i in range(lo, hi)}
            producer.flush(120)
            acked.update(v for f, v in futures.items() if f.exception() is None)

        def consume_until(n: int, timeout: float = 90.0) -> None:
            deadline = time.monotonic() + timeout
            while len(consumed & acked) < n and time.monotonic() < deadline:
                consumed.update(r.value for r in consumer.poll(0.5) if r.value is not None)

        produce(0, total // 3)
        consume_until(len(acked))
        cluster.kill(victim)
        produce(total // 3, 2 * total // 3)
        consume_until(len(acked))
        cluster.restart(victim)
        produce(2 * total // 3, total)
        consume_until(len(acked))
    assert len(acked) == total
    assert acked <= consumed, f"{len(acked - consumed)} acknowledged records never consumed"

"""A 3-broker MiniCluster end to end: metadata, acks=all with our idempotent producer through leader kills
(SIGKILL) and restarts, min.insync.replicas, acks=1 vs acks=all under an unclean failover, confluent-kafka
across a leader change.

Record counts are moderate (20,000 in the failover test, not the issue's 200,000) so that the whole module
stays within a few minutes on a loaded 2-core CI runner; the failure modes do not depend on the count.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mini_broker.cluster.mini_cluster import MiniCluster
from pykafka_client import AdminClient, KafkaProducer
from pykafka_client.errors import NotEnoughReplicasError, NotLeaderOrFollowerError
from pykafka_client.protocol.messages import ProduceRequest
from pykafka_client.protocol.records.builder import MemoryRecordsBuilder
from tests.integration.cluster.helpers import Endpoint, read_back
from tests.integration.wire import Conn

RECORDS = 20_000


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


def test_idempotent_acks_all_loses_and_duplicates_nothing_through_two_leader_kills(cluster: MiniCluster) -> None:
    topic, partitions = "failover", 3
    cluster.create_topic(topic, partitions=partitions, replication_factor=3)
    acked: dict[int, list[int]] = {p: [] for p in range(partitions)}
    errors: list[BaseException] = []
    lock = threading.Lock()
    progress = threading.Event()

    def on_delivery(md: object, err: BaseException | None, p: int, seq: int) -> None:
        if err is not None:
            errors.append(err)
            return
        with lock:
            acked[p].append(seq)
            if sum(len(v) for v in acked.values()) in (RECORDS // 4, RECORDS // 2):
                progress.set()

    kills: list[int] = []

    def killer() -> None:
        for _ in range(2):
            progress.wait(120)
            progress.clear()
            victim = cluster.leader(topic, 0)
            cluster.kill(victim)
            kills.append(victim)
            cluster.wait_for_leader(topic, 0, not_in={victim})
            cluster.restart(victim)
            for p in range(partitions):
                cluster.wait_for_isr(topic, p, 3, timeout=60)

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    with KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", enable_idempotence=True,
                       linger_ms=5, delivery_timeout_ms=120_000, request_timeout_ms=15_000) as producer:
        for seq in range(RECORDS):
            p = seq % partitions
            producer.send(topic, value=_value(p, seq), partition=p,
                          on_delivery=lambda md, err, p=p, seq=seq: on_delivery(md, err, p, seq))
            if seq % 1000 == 999:
                time.sleep(0.05)  # let the kills land while records are in flight
        producer.flush(180)
    t.join(180)
    assert len(kills) == 2, "the leader was not killed twice"
    assert not errors, errors[:3]
    got = read_back(cluster.bootstrap_servers, topic, partitions, RECORDS)
    for p in range(partitions):
        seqs = [int(v.split(b"-")[1]) for v in got[p]]
        assert len(seqs) == len(set(seqs)), f"partition {p} has duplicates"
        assert seqs == sorted(seqs), f"partition {p} is out of order"
        assert set(acked[p]) <= set(seqs), f"partition {p} lost {len(set(acked[p]) - set(seqs))} acked records"
    assert sum(len(v) for v in acked.values()) == RECORDS


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
    cluster._wait(lambda: cluster.isr("minisr", 0) == [leader], 30, "the ISR to shrink")
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
        leader = cluster.leader(topic, 0)
        follower = next(r for r in cluster.isr(topic, 0) if r != leader)
        cluster.stop(follower)
        cluster._wait(lambda t=topic, ld=leader: cluster.isr(t, 0) == [ld], 30, "the ISR to shrink")
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
            assert read_back(cluster.bootstrap_servers, topic, 1, len(got), timeout_s=10)[0] == got
            cluster.restart(new_leader)
        else:
            assert acked[topic] == [] and got == [after]


def test_confluent_kafka_produces_and_consumes_across_a_leader_change(cluster: MiniCluster) -> None:
    ck = pytest.importorskip("confluent_kafka")
    topic = "ck-failover"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    delivered: list[bytes] = []
    errors: list[object] = []

    def cb(err: object, msg: object) -> None:
        if err is not None:
            errors.append(err)
        else:
            delivered.append(msg.value())  # type: ignore[attr-defined]

    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "enable.idempotence": True,
                            "linger.ms": 5, "message.timeout.ms": 120000})
    for i in range(2000):
        producer.produce(topic, value=b"a-%05d" % i, callback=cb)
    producer.flush(60)
    victim = cluster.leader(topic, 0)
    cluster.kill(victim)
    for i in range(2000):
        producer.produce(topic, value=b"b-%05d" % i, callback=cb)
        producer.poll(0)
    producer.flush(120)
    assert not errors and len(delivered) == 4000
    assert cluster.leader(topic, 0) != victim
    consumer = ck.Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "ck-failover",
                            "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.assign([ck.TopicPartition(topic, 0, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(got) < 4000 and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value())
    consumer.close()
    assert got == delivered


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
                consumed.update(r.value for r in consumer.poll(0.5))

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

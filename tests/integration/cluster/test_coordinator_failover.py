"""The group and transaction coordinators move with the leaders of ``__consumer_offsets`` / ``__transaction_state``
(issue 16, item 4): the broker leading the coordinator's partition is SIGKILLed and what it had acknowledged
(committed offsets, an open transaction) is on the new coordinator, which a client finds with
FindCoordinator. Each test restarts its victim and waits for full ISRs, so the shared cluster is whole again.
Nothing here asserts a rate or a latency."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest

from mini_broker.cluster.mini_cluster import MiniCluster
from mini_broker.coordinator.partitioning import partition_for
from pykafka_client import KafkaConsumer, KafkaProducer, TopicPartition
from pykafka_client.protocol.messages import (
    FindCoordinatorRequest,
    HeartbeatRequest,
    InitProducerIdRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)
from tests.integration.cluster.failover import FAILOVER_TIMEOUT_S, wait_until
from tests.integration.cluster.helpers import Endpoint, transaction_coordinator
from tests.integration.wire import Conn

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

PARTITIONS = 3
GROUP_KEY, TRANSACTION_KEY = 0, 1
NOT_COORDINATOR = 16
COORDINATOR_NOT_AVAILABLE = 15


def _conn(cluster: MiniCluster, broker_id: int) -> Conn:
    return Conn(Endpoint(cluster.brokers[broker_id].port))  # type: ignore[arg-type]


def find_coordinator(cluster: MiniCluster, key: str, key_type: int, timeout_s: float = FAILOVER_TIMEOUT_S) -> int:
    """The coordinator's broker id as any live broker answers FindCoordinator (retried while unavailable)."""
    deadline = time.monotonic() + timeout_s
    while True:
        for bid, b in cluster.brokers.items():
            if not b.alive:
                continue
            try:
                with _conn(cluster, bid) as c:
                    resp = c.call(FindCoordinatorRequest(key=key, key_type=key_type), 3)
            except OSError:
                continue
            if resp.error_code == 0 and cluster.brokers[resp.node_id].alive:
                return int(resp.node_id)
        if time.monotonic() > deadline:
            raise AssertionError(f"no coordinator for {key!r} within {timeout_s}s")
        time.sleep(0.2)


def _restart_and_heal(cluster: MiniCluster, victim: int, topic: str) -> None:
    cluster.restart(victim, timeout=FAILOVER_TIMEOUT_S)
    for p in range(PARTITIONS):
        cluster.wait_for_isr(topic, p, cluster.num_brokers, timeout=FAILOVER_TIMEOUT_S)


def _produce(cluster: MiniCluster, topic: str, values: range) -> None:
    with KafkaProducer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                        "enable.idempotence": True}) as p:
        for i in values:
            p.send(topic, value=b"%d" % i, partition=i % PARTITIONS)
        p.flush()


def test_committed_offsets_survive_the_group_coordinators_death(cluster: MiniCluster) -> None:
    topic, group = f"coord-g-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=3)
    n = 3000
    _produce(cluster, topic, range(n))
    consumer: KafkaConsumer[Any, Any] = KafkaConsumer({
        "bootstrap.servers": cluster.bootstrap_servers, "group.id": group, "enable.auto.commit": False,
        "auto.offset.reset": "earliest", "max.poll.records": 200, "session.timeout.ms": 30000,
        "request.timeout.ms": 15000})
    victim = -1
    try:
        consumer.subscribe([topic])
        before: list[int] = []
        while len(before) < n // 2:
            records = list(consumer.poll(0.5))
            before.extend(int(r.value) for r in records)
            if records:
                consumer.commit_sync()
        committed_before = {tp: consumer.position(tp) for tp in consumer.assignment()}
        assert len(committed_before) == PARTITIONS

        victim = find_coordinator(cluster, group, GROUP_KEY)
        cluster.kill(victim)
        new = find_coordinator(cluster, group, GROUP_KEY)
        assert new != victim

        # the new coordinator has every offset acknowledged before the kill (OffsetFetch straight to it)
        def fetched() -> dict[TopicPartition, int] | None:
            try:
                with _conn(cluster, new) as c:
                    resp = c.call(OffsetFetchRequest(group_id=group, topics=None), 6)
            except OSError:
                return None
            if resp.error_code != 0:
                return None
            return {TopicPartition(t.name, p.partition_index): p.committed_offset
                    for t in resp.topics for p in t.partitions}

        wait_until(lambda: fetched() is not None, FAILOVER_TIMEOUT_S, "the new coordinator answers OffsetFetch")
        assert fetched() == committed_before

        # the group keeps consuming from there: nothing committed is read again, nothing is lost
        after: list[int] = []
        deadline = time.monotonic() + 180
        while len(set(before) | set(after)) < n and time.monotonic() < deadline:
            records = list(consumer.poll(0.5))
            after.extend(int(r.value) for r in records)
            if records:
                consumer.commit_sync()
        assert set(before) | set(after) == set(range(n))
        assert not set(before) & set(after), "records committed before the failover were delivered again"
    finally:
        consumer.close()
        if victim >= 0:
            _restart_and_heal(cluster, victim, topic)


def _read_committed(cluster: MiniCluster, topic: str, expected: int, timeout_s: float = 120.0) -> list[int]:
    c: KafkaConsumer[Any, Any] = KafkaConsumer({
        "bootstrap.servers": cluster.bootstrap_servers, "enable.auto.commit": False,
        "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    out: list[int] = []
    try:
        c.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        deadline = time.monotonic() + timeout_s
        while len(out) < expected and time.monotonic() < deadline:
            out.extend(int(r.value) for r in c.poll(0.5))
        end = time.monotonic() + 2.0  # anything more is a record that should not be visible
        while time.monotonic() < end:
            out.extend(int(r.value) for r in c.poll(0.2))
    finally:
        c.close()
    return out


def test_open_transaction_survives_the_transaction_coordinators_death(cluster: MiniCluster) -> None:
    topic, txn_id = f"coord-t-{uuid.uuid4().hex[:8]}", f"txn-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=3)
    producer = KafkaProducer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": txn_id,
                              "request.timeout.ms": 15000, "delivery.timeout.ms": 120000,
                              "max.block.ms": 120000, "transaction.timeout.ms": 60000})
    victim = -1
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(0, 100):
            producer.send(topic, value=b"%d" % i, partition=i % PARTITIONS)
        producer.commit_transaction()
        producer.begin_transaction()
        for i in range(100, 300):
            producer.send(topic, value=b"%d" % i, partition=i % PARTITIONS)
        producer.flush()  # every partition is in the transaction and its records are acknowledged

        victim = find_coordinator(cluster, txn_id, TRANSACTION_KEY)
        cluster.kill(victim)
        assert find_coordinator(cluster, txn_id, TRANSACTION_KEY) != victim
        producer.commit_transaction()  # the new coordinator knows the open transaction and its partitions

        producer.begin_transaction()
        for i in range(300, 310):
            producer.send(topic, value=b"%d" % i, partition=i % PARTITIONS)
        producer.abort_transaction()
    finally:
        producer.close()
    try:
        got = _read_committed(cluster, topic, 300)
        assert sorted(got) == list(range(300))
    finally:
        if victim >= 0:
            _restart_and_heal(cluster, victim, topic)


def test_brokers_other_than_the_coordinator_answer_not_coordinator(cluster: MiniCluster) -> None:
    group, txn_id, topic = f"g-{uuid.uuid4().hex[:8]}", f"txn-{uuid.uuid4().hex[:8]}", f"nc-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    group_coordinator = find_coordinator(cluster, group, GROUP_KEY)
    txn_coordinator = transaction_coordinator(cluster, txn_id)  # loaded: InitProducerId below must not see 14
    # the leaders of the keys' partitions (of 50: offsets.topic.num.partitions, transaction.state.log.num.partitions)
    assert cluster.leader("__consumer_offsets", partition_for(group, 50)) == group_coordinator
    assert cluster.leader("__transaction_state", partition_for(txn_id, 50)) == txn_coordinator
    other = next(b for b in cluster.brokers if b != group_coordinator)
    with _conn(cluster, other) as c:
        assert c.call(HeartbeatRequest(group_id=group, generation_id=1, member_id="m"), 4).error_code == NOT_COORDINATOR
        assert c.call(OffsetFetchRequest(group_id=group, topics=None), 6).error_code == NOT_COORDINATOR
        commit = c.call(OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=[
                OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=5)])]), 8)
        assert [p.error_code for t in commit.topics for p in t.partitions] == [NOT_COORDINATOR]
    other = next(b for b in cluster.brokers if b != txn_coordinator)
    with _conn(cluster, other) as c:
        init = c.call(InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=60000), 4)
        assert init.error_code == NOT_COORDINATOR
    with _conn(cluster, txn_coordinator) as c:
        assert c.call(InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=60000), 4).error_code == 0


def test_an_abandoned_transaction_is_aborted_by_the_new_coordinators_timeout(cluster: MiniCluster) -> None:
    """The producer disappears with its transaction open and the coordinator's broker is SIGKILLed: the new
    coordinator knows the transaction and its partitions and aborts it at its timeout, so the last stable offset
    moves again and a read_committed consumer sees exactly the committed records."""
    topic, txn_id = f"coord-a-{uuid.uuid4().hex[:8]}", f"txn-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=3)
    abandoned = KafkaProducer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": txn_id,
                               "transaction.timeout.ms": 3000, "request.timeout.ms": 15000})
    victim = -1
    try:
        abandoned.init_transactions()
        abandoned.begin_transaction()
        for i in range(1000, 1100):
            abandoned.send(topic, value=b"%d" % i, partition=i % PARTITIONS)
        abandoned.flush()
        victim = find_coordinator(cluster, txn_id, TRANSACTION_KEY)
        cluster.kill(victim)
        # committed after the open transaction's records: visible only once the new coordinator aborted it
        with KafkaProducer({"bootstrap.servers": cluster.bootstrap_servers, "request.timeout.ms": 15000,
                            "transactional.id": f"{txn_id}-other", "max.block.ms": 120000}) as other:
            other.init_transactions()
            other.begin_transaction()
            for i in range(100):
                other.send(topic, value=b"%d" % i, partition=i % PARTITIONS)
            other.commit_transaction()
        got = _read_committed(cluster, topic, 100, timeout_s=180)
        assert sorted(got) == list(range(100))
    finally:
        abandoned.close(timeout=0)
        if victim >= 0:
            _restart_and_heal(cluster, victim, topic)


def test_a_commit_the_coordinator_cannot_replicate_is_refused_per_partition_and_retried(cluster: MiniCluster) -> None:
    """Both followers of __consumer_offsets are down (ISR below min.insync.replicas=2): the coordinator answers
    an OffsetCommit with COORDINATOR_NOT_AVAILABLE on each partition (the connection stays open), and our
    consumer's commit_sync keeps retrying until the followers are back, then succeeds."""
    group, topic = f"g-{uuid.uuid4().hex[:8]}", f"nr-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    coordinator = find_coordinator(cluster, group, GROUP_KEY)
    followers = [b for b in cluster.brokers if b != coordinator]
    tp = TopicPartition(topic, 0)
    outcome: list[object] = []

    def commit_through_the_outage() -> None:
        consumer: KafkaConsumer[Any, Any] = KafkaConsumer({
            "bootstrap.servers": f"127.0.0.1:{cluster.brokers[coordinator].port}", "group.id": group,
            "enable.auto.commit": False, "request.timeout.ms": 15000, "default.api.timeout.ms": 180000})
        try:
            consumer.assign([tp])
            consumer.commit_sync({tp: 7})
            outcome.append(consumer.committed([tp])[tp])
        except Exception as e:  # reported by the main thread's assertion
            outcome.append(e)
        finally:
            consumer.close()

    try:
        for b in followers:
            cluster.kill(b)
        with _conn(cluster, coordinator) as c:
            commit = c.call(OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=[
                    OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=5)])]), 8)
            assert [p.error_code for t in commit.topics for p in t.partitions] == [COORDINATOR_NOT_AVAILABLE]
            assert not c.closed_by_broker()
            fetched = c.call(OffsetFetchRequest(group_id=group, topics=None), 6)
            assert fetched.error_code == 0 and not fetched.topics  # the refused commit was never applied
        committer = threading.Thread(target=commit_through_the_outage, name="commit-through-outage")
        committer.start()
        for b in followers:
            cluster.restart(b, timeout=FAILOVER_TIMEOUT_S)
        committer.join(240)
        assert len(outcome) == 1 and not isinstance(outcome[0], Exception), outcome
        committed = outcome[0]
        assert committed is not None and committed.offset == 7  # type: ignore[attr-defined]
    finally:
        for b in followers:
            if not cluster.brokers[b].alive:
                cluster.restart(b, timeout=FAILOVER_TIMEOUT_S)
        cluster.wait_for_isr("__consumer_offsets", partition_for(group, 50), cluster.num_brokers,
                             timeout=FAILOVER_TIMEOUT_S)
        cluster.wait_for_isr(topic, 0, cluster.num_brokers, timeout=FAILOVER_TIMEOUT_S)

"""The AdminClient finds a group's new coordinator when the old one dies (Java ``KafkaAdminClient``: a disconnect
from the coordinator, or NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE, looks the coordinator up again after
``retry.backoff.ms`` and sends again, until the call's timeout). The coordinator's broker is SIGKILLed while the
admin is connected to it; the next offset fetch returns the committed offsets from the broker elected in its
place within the failover bound, well inside the call's timeout. The victim is restarted and the ISRs healed."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from mini_broker.cluster.mini_cluster import MiniCluster
from mini_broker.coordinator.partitioning import partition_for
from pykafka_client import AdminClient, KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition
from pykafka_client.admin import OffsetSpec
from tests.integration.cluster.failover import FAILOVER_TIMEOUT_S
from tests.integration.cluster.helpers import transaction_coordinator
from tests.integration.cluster.test_coordinator_failover import GROUP_KEY, find_coordinator

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

PARTITIONS = 3
#: offsets.topic.num.partitions (and transaction.state.log.num.partitions) of the MiniCluster's brokers
OFFSETS_PARTITIONS = 50


def test_admin_offset_fetch_finds_the_new_coordinator_after_the_old_one_is_killed(cluster: MiniCluster) -> None:
    topic, group = f"acf-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=3)
    committed = {TopicPartition(topic, p): OffsetAndMetadata(10 + p, f"m{p}") for p in range(PARTITIONS)}
    # the call's timeout is twice the failover bound: finishing inside the bound is finding the new coordinator,
    # not waiting out the timeout
    admin = AdminClient(bootstrap_servers=cluster.bootstrap_servers,
                        default_api_timeout_ms=int(2 * FAILOVER_TIMEOUT_S * 1000), request_timeout_ms=15000)
    victim = -1
    try:
        admin.alter_consumer_group_offsets(group, committed)
        # the admin is connected to the coordinator, and the commit is on every replica of its offsets partition
        offsets_partition = partition_for(group, OFFSETS_PARTITIONS)
        cluster.wait_for_isr("__consumer_offsets", offsets_partition, cluster.num_brokers, timeout=FAILOVER_TIMEOUT_S)
        assert admin.list_consumer_group_offsets(group) == committed
        victim = find_coordinator(cluster, group, GROUP_KEY)
        cluster.kill(victim)
        started = time.monotonic()
        fetched = admin.list_consumer_group_offsets(group)
        took = time.monotonic() - started
        print(f"list_consumer_group_offsets after the coordinator's SIGKILL took {took:.2f} s")
        assert fetched == committed
        assert took < FAILOVER_TIMEOUT_S, f"the offset fetch took {took:.1f} s: it waited on the dead coordinator"
        # the other calls bound to the coordinator find it too
        assert admin.describe_consumer_groups([group])[group].coordinator.id != victim  # type: ignore[union-attr]
    finally:
        admin.close()
        if victim >= 0:
            _heal(cluster, victim, ("__consumer_offsets", partition_for(group, OFFSETS_PARTITIONS)), topic)


def _heal(cluster: MiniCluster, victim: int, internal: tuple[str, int], topic: str) -> None:
    cluster.restart(victim, timeout=FAILOVER_TIMEOUT_S)
    cluster.wait_for_isr(*internal, cluster.num_brokers, timeout=FAILOVER_TIMEOUT_S)
    for p in range(PARTITIONS):
        cluster.wait_for_isr(topic, p, cluster.num_brokers, timeout=FAILOVER_TIMEOUT_S)


def test_consumer_committed_and_commit_find_the_new_coordinator_after_the_old_one_is_killed(
        cluster: MiniCluster) -> None:
    """The same failover for the consumer's coordinator calls: committed() (OffsetFetch) and commit_sync()
    (OffsetCommit) right after the SIGKILL finish inside the failover bound, well inside default.api.timeout.ms."""
    topic, group = f"ccf-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=3)
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    consumer: KafkaConsumer[Any, Any] = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers, group_id=group, enable_auto_commit=False,
        default_api_timeout_ms=int(2 * FAILOVER_TIMEOUT_S * 1000), request_timeout_ms=15000)
    victim = -1
    try:
        consumer.assign(tps)
        consumer.commit_sync({tp: 10 + tp.partition for tp in tps})
        cluster.wait_for_isr("__consumer_offsets", partition_for(group, OFFSETS_PARTITIONS), cluster.num_brokers,
                             timeout=FAILOVER_TIMEOUT_S)
        assert {tp: o.offset for tp, o in consumer.committed(tps).items() if o is not None} == {
            tp: 10 + tp.partition for tp in tps}
        victim = find_coordinator(cluster, group, GROUP_KEY)
        cluster.kill(victim)
        started = time.monotonic()
        committed = consumer.committed(tps)
        took_fetch = time.monotonic() - started
        started = time.monotonic()
        consumer.commit_sync({tp: 20 + tp.partition for tp in tps})
        took_commit = time.monotonic() - started
        print(f"consumer after the coordinator's SIGKILL: committed() {took_fetch:.2f} s, "
              f"commit_sync() {took_commit:.2f} s")
        assert {tp: o.offset for tp, o in committed.items() if o is not None} == {tp: 10 + tp.partition for tp in tps}
        assert took_fetch < FAILOVER_TIMEOUT_S and took_commit < FAILOVER_TIMEOUT_S, (took_fetch, took_commit)
        assert {tp: o.offset for tp, o in consumer.committed(tps).items() if o is not None} == {
            tp: 20 + tp.partition for tp in tps}
    finally:
        consumer.close()
        if victim >= 0:
            _heal(cluster, victim, ("__consumer_offsets", partition_for(group, OFFSETS_PARTITIONS)), topic)


def test_transactional_producer_commits_at_the_new_coordinator_after_the_old_one_is_killed(
        cluster: MiniCluster) -> None:
    """The transaction coordinator is SIGKILLed with a transaction open: commit_transaction() (EndTxn, after
    FindCoordinator again) finishes inside the failover bound, well inside max.block.ms."""
    topic, txn_id = f"tcf-{uuid.uuid4().hex[:8]}", f"txn-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=3)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, transactional_id=txn_id,
                             request_timeout_ms=15000, max_block_ms=int(2 * FAILOVER_TIMEOUT_S * 1000),
                             delivery_timeout_ms=int(2 * FAILOVER_TIMEOUT_S * 1000) + 15000,
                             transaction_timeout_ms=120000)
    victim = -1
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(30):
            producer.send(topic, value=b"%d" % i, partition=i % PARTITIONS)
        producer.flush()
        victim = transaction_coordinator(cluster, txn_id)
        cluster.kill(victim)
        started = time.monotonic()
        producer.commit_transaction()
        took = time.monotonic() - started
        print(f"commit_transaction after the transaction coordinator's SIGKILL took {took:.2f} s")
        assert took < FAILOVER_TIMEOUT_S, f"commit_transaction took {took:.1f} s"
    finally:
        producer.close()
        if victim >= 0:
            _heal(cluster, victim, ("__transaction_state", partition_for(txn_id, OFFSETS_PARTITIONS)), topic)


def test_admin_list_offsets_finds_the_new_leader_after_the_old_one_is_killed(cluster: MiniCluster) -> None:
    """The calls bound to a partition's leader take the same path: list_offsets right after the leader's SIGKILL
    answers from the new leader inside the failover bound (before, it waited on the dead broker until its
    timeout)."""
    topic = f"alf-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    with KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all") as producer:
        for i in range(10):
            producer.send(topic, value=b"%d" % i, partition=0)
        producer.flush()
        # the followers learn the high watermark 10 with the fetch that replicates one more record: the new
        # leader's latest offset is then at least 10 (MiniBroker does not answer OFFSET_NOT_AVAILABLE while a new
        # leader's high watermark is behind its epoch's start, as Kafka does, KIP-207)
        producer.send(topic, value=b"10", partition=0)
        producer.flush()
    cluster.wait_for_isr(topic, 0, cluster.num_brokers, timeout=FAILOVER_TIMEOUT_S)
    admin = AdminClient(bootstrap_servers=cluster.bootstrap_servers,
                        default_api_timeout_ms=int(2 * FAILOVER_TIMEOUT_S * 1000), request_timeout_ms=15000)
    tp = TopicPartition(topic, 0)
    victim = -1
    try:
        assert admin.list_offsets({tp: OffsetSpec.latest()})[tp].offset == 11  # connected to the leader
        victim = cluster.leader(topic, 0)
        cluster.kill(victim)
        started = time.monotonic()
        latest = admin.list_offsets({tp: OffsetSpec.latest()})[tp].offset
        took = time.monotonic() - started
        print(f"list_offsets after the leader's SIGKILL took {took:.2f} s")
        assert latest >= 10
        assert took < FAILOVER_TIMEOUT_S, f"list_offsets took {took:.1f} s: it waited on the dead leader"
    finally:
        admin.close()
        if victim >= 0:
            cluster.restart(victim, timeout=FAILOVER_TIMEOUT_S)
            cluster.wait_for_isr(topic, 0, cluster.num_brokers, timeout=FAILOVER_TIMEOUT_S)

"""On a 3-broker cluster the internal topics have ``offsets.topic.num.partitions`` /
``transaction.state.log.num.partitions`` partitions (Kafka's default 50, issue 28 item 2): each broker coordinates
the groups and transactional ids of the partitions it leads, so FindCoordinator answers differ from key to key;
SIGKILLing one broker moves only its partitions' coordinators, and nothing committed is lost. A transaction's
offsets reach its group's partition on another broker. The victim is restarted and the ISRs healed, so the shared
cluster is whole again. Earlier failover tests of the shared cluster leave leaderships piled on the survivors (the
cluster has no automatic leader rebalance), so each test first elects the preferred leaders of the internal
topics (round-robin over the brokers at creation). No rate or latency is asserted."""

from __future__ import annotations

import uuid

import pytest

from mini_broker.cluster.mini_cluster import MiniCluster
from mini_broker.coordinator.partitioning import partition_for
from pykafka_client import AdminClient, KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition
from pykafka_client.admin import ElectionType
from pykafka_client.consumer.structs import ConsumerGroupMetadata
from tests.integration.cluster.failover import FAILOVER_TIMEOUT_S
from tests.integration.cluster.test_coordinator_failover import GROUP_KEY, TRANSACTION_KEY, find_coordinator

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

PARTITIONS = 50
OFFSETS_TOPIC = "__consumer_offsets"
TXN_TOPIC = "__transaction_state"


def _preferred_internal_leaders(cluster: MiniCluster) -> None:
    """Create both internal topics (a FindCoordinator each), wait for their full ISRs and move every partition's
    leadership back to its preferred replica."""
    find_coordinator(cluster, "any-group", GROUP_KEY)
    find_coordinator(cluster, "any-txn", TRANSACTION_KEY)
    partitions = [TopicPartition(t, p) for t in (OFFSETS_TOPIC, TXN_TOPIC) for p in range(PARTITIONS)]
    for tp in partitions:
        cluster.wait_for_isr(tp.topic, tp.partition, cluster.num_brokers, timeout=FAILOVER_TIMEOUT_S)
    with AdminClient({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        admin.elect_leaders(ElectionType.PREFERRED, partitions, timeout=60)


def _committed(cluster: MiniCluster, group: str, tp: TopicPartition) -> int | None:
    with KafkaConsumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                        "request.timeout.ms": 15000}) as consumer:
        found = consumer.committed({tp}, timeout=FAILOVER_TIMEOUT_S)[tp]
        return None if found is None else found.offset


def test_groups_spread_over_the_brokers_and_a_kill_moves_only_its_partitions(cluster: MiniCluster) -> None:
    _preferred_internal_leaders(cluster)
    run = uuid.uuid4().hex[:8]
    topic = f"spread-{run}"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    tp = TopicPartition(topic, 0)
    groups = [f"spread-{run}-{i}" for i in range(24)]
    for i, group in enumerate(groups):
        with KafkaConsumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                            "enable.auto.commit": False}) as consumer:
            consumer.assign([tp])
            consumer.commit_sync({tp: OffsetAndMetadata(i + 1)})
    coordinators = {g: find_coordinator(cluster, g, GROUP_KEY) for g in groups}
    assert len(set(coordinators.values())) >= 2, coordinators  # spread over brokers
    for group, node in coordinators.items():  # the leader of the group's partition of 50 is its coordinator
        assert cluster.leader(OFFSETS_TOPIC, partition_for(group, PARTITIONS)) == node
    used = {partition_for(g, PARTITIONS) for g in groups}
    for p in used:
        cluster.wait_for_isr(OFFSETS_TOPIC, p, cluster.num_brokers, timeout=FAILOVER_TIMEOUT_S)

    victim = coordinators[groups[0]]
    cluster.kill(victim)
    try:
        after = {g: find_coordinator(cluster, g, GROUP_KEY) for g in groups}
        for group in groups:
            if coordinators[group] == victim:
                assert after[group] != victim
            else:  # the other brokers' partitions did not move
                assert after[group] == coordinators[group], group
        assert {g: _committed(cluster, g, tp) for g in groups} == {g: i + 1 for i, g in enumerate(groups)}
    finally:
        cluster.restart(victim, timeout=FAILOVER_TIMEOUT_S)
        for p in used:
            cluster.wait_for_isr(OFFSETS_TOPIC, p, cluster.num_brokers, timeout=FAILOVER_TIMEOUT_S)
        cluster.wait_for_isr(topic, 0, cluster.num_brokers, timeout=FAILOVER_TIMEOUT_S)


def test_transactional_ids_spread_and_offsets_reach_the_groups_partition(cluster: MiniCluster) -> None:
    _preferred_internal_leaders(cluster)
    run = uuid.uuid4().hex[:8]
    topic = f"txn-spread-{run}"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    tp = TopicPartition(topic, 0)
    txn_ids = [f"tx-{run}-{i}" for i in range(12)]
    txn_coordinators = {t: find_coordinator(cluster, t, TRANSACTION_KEY) for t in txn_ids}
    assert len(set(txn_coordinators.values())) >= 2, txn_coordinators
    txn_id = txn_ids[0]
    # a group coordinated by another broker than the transaction: its marker goes to that broker's partition
    group = next(g for g in (f"txg-{run}-{i}" for i in range(100))
                 if find_coordinator(cluster, g, GROUP_KEY) != txn_coordinators[txn_id])
    with KafkaProducer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": txn_id}) as producer:
        producer.init_transactions(60)
        producer.begin_transaction()
        producer.send(topic, b"v", partition=0)
        producer.send_offsets_to_transaction({tp: OffsetAndMetadata(42)}, ConsumerGroupMetadata(group), 60)
        producer.commit_transaction(60)
    assert _committed(cluster, group, tp) == 42

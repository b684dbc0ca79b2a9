"""Automatic preferred leader election on a real cluster (Kafka: ``auto.leader.rebalance.enable``, here with a
``leader.imbalance.check.interval.seconds`` of 1): a SIGKILLed broker's leaderships, of a topic and of
``__consumer_offsets``, move to the survivors; once it is back and in the ISRs again, they return to it, the
preferred replica, and the group coordinator it hosted moves back with its partition and keeps working (the
offsets committed before the kill are there, a new commit is read back). Before, the leaderships stayed piled
up on the survivors. Bounded waits, no timings asserted."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mini_broker.cluster.mini_cluster import MiniCluster
from mini_broker.coordinator.partitioning import partition_for
from pykafka_client import TopicPartition
from pykafka_client.admin import AdminClient
from tests.integration.cluster.failover import FAILOVER_TIMEOUT_S, wait_until
from tests.integration.cluster.test_coordinator_failover import GROUP_KEY, find_coordinator

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

OFFSETS_TOPIC = "__consumer_offsets"
OFFSETS_PARTITIONS = 6
TOPIC, PARTITIONS = "balanced", 6
VICTIM = 0


@pytest.fixture(scope="module")
def cluster() -> Iterator[MiniCluster]:
    with MiniCluster(3, overrides={"leader.imbalance.check.interval.seconds": 1,
                                   "offsets.topic.num.partitions": OFFSETS_PARTITIONS,
                                   "group.initial.rebalance.delay.ms": 0}) as c:
        yield c


def _partitions(cluster: MiniCluster) -> list[tuple[str, int]]:
    return [(TOPIC, p) for p in range(PARTITIONS)] + [(OFFSETS_TOPIC, p) for p in range(OFFSETS_PARTITIONS)]


def _off_preferred(cluster: MiniCluster) -> list[tuple[str, int, int]]:
    """(topic, partition, leader) of the partitions not led by their preferred replica."""
    leaders = {(t, p): cluster.leader(t, p) for t, p in _partitions(cluster)}
    return [(t, p, leader) for (t, p), leader in leaders.items() if leader != cluster.replicas(t, p)[0]]


def _admin(cluster: MiniCluster) -> AdminClient:
    # a fresh client per phase: one that saw a broker die and come back can time out finding its way again
    # (a client issue of its own, also noted in test_cluster_metadata)
    return AdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=15000,
                       default_api_timeout_ms=60000)


def _committed(cluster: MiniCluster, group: str) -> int:
    with _admin(cluster) as admin:
        return admin.list_consumer_group_offsets(group)[TopicPartition(TOPIC, 1)].offset


def test_leadership_and_the_coordinator_go_back_to_a_restarted_preferred_replica(cluster: MiniCluster) -> None:
    cluster.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=3)
    with _admin(cluster) as admin:
        admin.alter_consumer_group_offsets("creates-the-offsets-topic", {(TOPIC, 0): 1})
        # a group whose coordinator partition prefers the victim: the victim is its coordinator until it dies
        group = next(g for g in (f"group-{i}" for i in range(1000))
                     if cluster.replicas(OFFSETS_TOPIC, partition_for(g, OFFSETS_PARTITIONS))[0] == VICTIM)
        admin.alter_consumer_group_offsets(group, {(TOPIC, 1): 7})
    coordinator_partition = partition_for(group, OFFSETS_PARTITIONS)
    assert _off_preferred(cluster) == []
    led_by_victim = [(t, p) for t, p in _partitions(cluster) if cluster.leader(t, p) == VICTIM]
    assert (OFFSETS_TOPIC, coordinator_partition) in led_by_victim

    cluster.kill(VICTIM)
    for t, p in led_by_victim:
        cluster.wait_for_leader(t, p, not_in={VICTIM}, timeout=FAILOVER_TIMEOUT_S)
    assert find_coordinator(cluster, group, GROUP_KEY) != VICTIM
    assert _committed(cluster, group) == 7  # on a survivor

    cluster.restart(VICTIM, timeout=FAILOVER_TIMEOUT_S)
    for t, p in _partitions(cluster):
        cluster.wait_for_isr(t, p, 3, timeout=FAILOVER_TIMEOUT_S)
    # the next imbalance check elects the preferred replicas: the victim leads what it led before
    wait_until(lambda: _off_preferred(cluster) == [], FAILOVER_TIMEOUT_S,
               "every partition's leadership back on its preferred replica")
    assert sorted((t, p) for t, p in _partitions(cluster) if cluster.leader(t, p) == VICTIM) == sorted(led_by_victim)
    cluster.wait_for_metadata(FAILOVER_TIMEOUT_S)

    # the coordinator moved back with its partition and serves the group's offsets
    assert find_coordinator(cluster, group, GROUP_KEY) == VICTIM
    assert _committed(cluster, group) == 7
    with _admin(cluster) as admin:
        admin.alter_consumer_group_offsets(group, {(TOPIC, 1): 9})
    assert _committed(cluster, group) == 9

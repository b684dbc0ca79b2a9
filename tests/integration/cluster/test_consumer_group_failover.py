"""A KIP-848 consumer group survives a SIGKILL of its coordinator: its records are in the replicated
``__consumer_offsets``, the broker elected in its place replays them, and the member heartbeats on there with
its id and epoch, keeping its partitions (no rejoin). The victim is restarted and the ISRs healed afterwards."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from mini_broker.cluster.mini_cluster import MiniCluster
from mini_broker.coordinator.partitioning import partition_for
from pykafka_client.protocol.messages import (
    ConsumerGroupHeartbeatRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)
from tests.integration.cluster.failover import FAILOVER_TIMEOUT_S, wait_until
from tests.integration.cluster.helpers import conn
from tests.integration.cluster.test_coordinator_failover import GROUP_KEY, find_coordinator

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

PARTITIONS = 3
OFFSETS_TOPIC = "__consumer_offsets"


def _call(cluster: MiniCluster, broker_id: int, request: Any, version: int) -> Any:
    try:
        with conn(cluster, broker_id) as c:
            return c.call(request, version)
    except OSError:
        return None


def test_a_consumer_group_survives_its_coordinators_death(cluster: MiniCluster) -> None:
    topic, group, member = f"cgf-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}", f"m-{uuid.uuid4().hex}"
    cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=3)
    coordinator = find_coordinator(cluster, group, GROUP_KEY)

    def join() -> Any:
        return _call(cluster, coordinator, ConsumerGroupHeartbeatRequest(
            group_id=group, member_id=member, member_epoch=0, rebalance_timeout_ms=10000,
            subscribed_topic_names=[topic], topic_partitions=[]), 1)

    wait_until(lambda: (r := join()) is not None and r.error_code == 0 and r.assignment is not None
               and sum(len(tp.partitions) for tp in r.assignment.topic_partitions) == PARTITIONS,
               FAILOVER_TIMEOUT_S, "the member joins and gets every partition")
    joined = join()  # a rejoin with the same id: same epoch, same partitions
    epoch = joined.member_epoch
    owned = [ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=tp.topic_id, partitions=tp.partitions)
             for tp in joined.assignment.topic_partitions]
    # a commit appended after the group's records: once it is visible, the ISR has the group's records too
    commit = _call(cluster, coordinator, OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=epoch, member_id=member,
        topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=5)])]), 9)
    assert commit is not None and commit.topics[0].partitions[0].error_code == 0

    def committed(broker_id: int) -> int | None:
        r = _call(cluster, broker_id, OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(
            group_id=group, topics=[OffsetFetchRequest.OffsetFetchRequestTopics(name=topic, partition_indexes=[0])])]),
            9)
        if r is None or r.groups[0].error_code != 0:
            return None
        return int(r.groups[0].topics[0].partitions[0].committed_offset)

    wait_until(lambda: committed(coordinator) == 5, FAILOVER_TIMEOUT_S, "the commit is replicated")
    cluster.kill(coordinator)
    try:
        new = find_coordinator(cluster, group, GROUP_KEY)
        assert new != coordinator

        def heartbeat() -> Any:
            return _call(cluster, new, ConsumerGroupHeartbeatRequest(
                group_id=group, member_id=member, member_epoch=epoch, topic_partitions=owned), 1)

        wait_until(lambda: (r := heartbeat()) is not None and r.error_code not in (14, 15, 16),
                   FAILOVER_TIMEOUT_S, "the new coordinator serves the group")
        r = heartbeat()
        assert (r.error_code, r.member_epoch) == (0, epoch)  # the group and its member survived: no rejoin
        assert committed(new) == 5
    finally:
        cluster.restart(coordinator, timeout=FAILOVER_TIMEOUT_S)
        for p in range(PARTITIONS):
            cluster.wait_for_isr(topic, p, cluster.num_brokers, timeout=FAILOVER_TIMEOUT_S)
        cluster.wait_for_isr(OFFSETS_TOPIC, partition_for(group, 50), cluster.num_brokers, timeout=FAILOVER_TIMEOUT_S)

"""The AdminClient finds a group's new coordinator when the old one dies (Java ``KafkaAdminClient``: a disconnect
from the coordinator, or NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE, looks the coordinator up again after
``retry.backoff.ms`` and sends again, until the call's timeout). The coordinator's broker is SIGKILLed while the
admin is connected to it; the next offset fetch returns the committed offsets from the broker elected in its
place within the failover bound, well inside the call's timeout. The victim is restarted and the ISRs healed."""

from __future__ import annotations

import time
import uuid

import pytest

from mini_broker.cluster.mini_cluster import MiniCluster
from mini_broker.coordinator.partitioning import partition_for
from pykafka_client import AdminClient, OffsetAndMetadata, TopicPartition
from tests.integration.cluster.failover import FAILOVER_TIMEOUT_S
from tests.integration.cluster.test_coordinator_failover import GROUP_KEY, find_coordinator

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

PARTITIONS = 3
#: offsets.topic.num.partitions of the MiniCluster's brokers
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
            cluster.restart(victim, timeout=FAILOVER_TIMEOUT_S)
            cluster.wait_for_isr("__consumer_offsets", partition_for(group, OFFSETS_PARTITIONS), cluster.num_brokers,
                                 timeout=FAILOVER_TIMEOUT_S)
            for p in range(PARTITIONS):
                cluster.wait_for_isr(topic, p, cluster.num_brokers, timeout=FAILOVER_TIMEOUT_S)

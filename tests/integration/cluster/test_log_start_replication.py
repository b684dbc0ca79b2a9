"""The log start offset is replicated: DeleteRecords on the leader reaches the followers (the leader's Fetch
response carries its log start offset; a follower moves its own and deletes the segments below it), and
DeleteRecords is answered once the in-sync followers have it, so after the leader is SIGKILLed the new
leader's earliest offset is not below what DeleteRecords set."""

from __future__ import annotations

from typing import Any

import pytest

from mini_broker.cluster.mini_cluster import MiniCluster
from pykafka_client import AdminClient, KafkaProducer
from pykafka_client.protocol.messages import ListOffsetsRequest
from pykafka_client.structs import TopicPartition
from tests.integration.cluster.failover import FAILOVER_TIMEOUT_S, read_back
from tests.integration.cluster.helpers import conn

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

EARLIEST = -2


def earliest_on(cluster: MiniCluster, broker_id: int, topic: str) -> Any:
    """ListOffsets earliest of ``topic``-0 asked of broker ``broker_id`` (the partition response)."""
    req = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=topic, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=EARLIEST)])])
    with conn(cluster, broker_id) as c:
        return c.call(req, 7).topics[0].partitions[0]


def produce_then_delete_records(cluster: MiniCluster, topic: str, n: int, cut: int) -> None:
    """``n`` records to ``topic``-0 (acks=all, small batches), then DeleteRecords below ``cut``."""
    with KafkaProducer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 5,
                        "batch.size": 512}) as producer:
        for i in range(n):
            producer.send(topic, value=b"%05d" % i, partition=0)
        producer.flush(60)
    with AdminClient(bootstrap_servers=cluster.bootstrap_servers) as admin:
        low = admin.delete_records({TopicPartition(topic, 0): cut}, timeout=30)
    assert low[TopicPartition(topic, 0)] == cut


def test_delete_records_survives_a_leader_kill(cluster: MiniCluster) -> None:
    topic, n, cut = "log-start", 300, 200
    # small segments, so that moving the log start deletes whole segments on every replica
    cluster.create_topic(topic, partitions=1, replication_factor=3, configs={"segment.bytes": "2048"})
    produce_then_delete_records(cluster, topic, n, cut)
    old_leader = cluster.leader(topic, 0)
    cluster.kill(old_leader)
    new_leader = cluster.wait_for_leader(topic, 0, not_in={old_leader}, timeout=FAILOVER_TIMEOUT_S)
    cluster.wait_for_metadata()
    part = earliest_on(cluster, new_leader, topic)
    assert part.error_code == 0, part
    assert part.offset == cut, f"the new leader's log starts at {part.offset}, DeleteRecords set {cut}"
    values = [v for _, v in read_back(cluster, topic, 1)[0]]
    assert values == list(range(cut, n))
    cluster.restart(old_leader, timeout=FAILOVER_TIMEOUT_S)
    cluster.wait_for_isr(topic, 0, 3, timeout=FAILOVER_TIMEOUT_S)


def test_a_follower_behind_the_leaders_log_start_starts_over_there_and_rejoins_the_isr(cluster: MiniCluster) -> None:
    """A follower stopped while DeleteRecords moved the leader's log start past the follower's log end cannot
    fetch from its log end (OFFSET_OUT_OF_RANGE): it empties its log, starts at the leader's log start (Kafka's
    truncateFullyAndStartAt), catches up and rejoins the ISR; led by it, the partition starts there."""
    topic, n, cut = "log-start-behind", 300, 250
    cluster.create_topic(topic, partitions=1, replication_factor=3, configs={"segment.bytes": "2048"})
    leader = cluster.leader(topic, 0)
    lagging = next(r for r in cluster.isr(topic, 0) if r != leader)
    cluster.stop(lagging)
    cluster.wait_for_isr(topic, 0, 2, timeout=FAILOVER_TIMEOUT_S)
    produce_then_delete_records(cluster, topic, n, cut)
    cluster.restart(lagging, timeout=FAILOVER_TIMEOUT_S)
    cluster.wait_for_isr(topic, 0, 3, timeout=FAILOVER_TIMEOUT_S)
    # make the lagging broker the leader: stop the others one by one (it is in the ISR, so it is elected)
    stopped = []
    while cluster.leader(topic, 0) != lagging:
        victim = cluster.leader(topic, 0)
        cluster.stop(victim)
        stopped.append(victim)
        cluster.wait_for_leader(topic, 0, not_in=set(stopped), timeout=FAILOVER_TIMEOUT_S)
    cluster.wait_for_metadata()
    part = earliest_on(cluster, lagging, topic)
    assert (part.error_code, part.offset) == (0, cut)
    assert [v for _, v in read_back(cluster, topic, 1)[0]] == list(range(cut, n))
    for b in stopped:
        cluster.restart(b, timeout=FAILOVER_TIMEOUT_S)
    cluster.wait_for_isr(topic, 0, 3, timeout=FAILOVER_TIMEOUT_S)

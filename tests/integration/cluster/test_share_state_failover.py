"""Share-partition state moves with a cluster failover (issue #25 item 3): on a 3-broker cluster our
KafkaShareConsumer accepts, releases and rejects records and keeps others acquired; then the broker leading the
topic partition (the share-partition leader) is SIGKILLed, or first the broker of the share coordinator (the
leader of the share partition's ``__share_group_state`` partition) and then the share-partition leader. A new
member of the group gets exactly the records nobody acknowledged, the acquired ones with their delivery count
raised, and never an accepted or rejected one. Each test restarts its victims and waits for full ISRs."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from mini_broker.cluster.mini_cluster import MiniCluster
from mini_broker.server.coordinator_lookup import partition_for
from mini_broker.share.share_coordinator import SHARE_GROUP_STATE_TOPIC_NAME, share_key
from pykafka_client import AcknowledgeType, KafkaProducer, KafkaShareConsumer, ShareConsumerRecord
from tests.integration.cluster.failover import FAILOVER_TIMEOUT_S
from tests.integration.cluster.helpers import restored_after_each_test

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

ACCEPT, RELEASE, REJECT = AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT
N = 10
#: share state partitions: Kafka's default would be 50; fewer keep the cluster's elections short
STATE_PARTITIONS = 10
#: how long a dead broker keeps its partitions (MiniCluster's default) and how long a coordinator answer waits
#: for its partition's ISR
SESSION_TIMEOUT_MS, COMMIT_TIMEOUT_MS = 2000, 5000
#: an acknowledgement after the share coordinator's kill is answered once the dead broker is fenced and the new
#: coordinator's own partition has the write: the fence plus one ISR wait, with slack for a loaded machine (it
#: used to wait for every internal partition the new coordinator leads, and retry until the 20 s persister timeout)
ACK_AFTER_COORDINATOR_KILL_S = (SESSION_TIMEOUT_MS + 2 * COMMIT_TIMEOUT_MS) / 1000


@pytest.fixture(scope="module")
def module_cluster() -> Iterator[MiniCluster]:
    overrides = {"min.insync.replicas": 2, "group.initial.rebalance.delay.ms": 0,
                 "share.auto.offset.reset": "earliest", "group.share.record.lock.duration.ms": 120_000,
                 "group.share.heartbeat.interval.ms": 200, "group.share.delivery.count.limit": 2,
                 "share.coordinator.state.topic.num.partitions": STATE_PARTITIONS,
                 "share.coordinator.snapshot.update.records.per.snapshot": 3,
                 "broker.session.timeout.ms": SESSION_TIMEOUT_MS, "offsets.commit.timeout.ms": COMMIT_TIMEOUT_MS,
                 # fewer coordinator partitions to elect and load on each kill keep the failovers short
                 "offsets.topic.num.partitions": 10, "transaction.state.log.num.partitions": 10}
    with MiniCluster(3, overrides=overrides) as c:
        yield c


@pytest.fixture
def cluster(module_cluster: MiniCluster) -> Iterator[MiniCluster]:
    """The module's cluster, with any broker a failed test left down started again after it."""
    yield from restored_after_each_test(module_cluster)


def _consumer(cluster: MiniCluster, group: str, topic: str) -> KafkaShareConsumer[Any, Any]:
    c: KafkaShareConsumer[Any, Any] = KafkaShareConsumer(
        {"bootstrap.servers": cluster.bootstrap_servers, "group.id": group, "value.deserializer": "str",
         "fetch.max.wait.ms": 100, "share.acknowledgement.mode": "explicit", "request.timeout.ms": 30000})
    c.subscribe([topic])
    return c


def _poll(c: KafkaShareConsumer[Any, Any], want: int, timeout_s: float,
          kinds: dict[int, AcknowledgeType]) -> list[ShareConsumerRecord[Any, Any]]:
    """Poll until ``want`` records came, acknowledging each as ``kinds`` says (others stay acquired)."""
    got: list[ShareConsumerRecord[Any, Any]] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < want and time.monotonic() < deadline:
        batch = c.poll(0.2)
        for r in batch:
            if r.offset in kinds:
                c.acknowledge(r, kinds[r.offset])
        got.extend(batch)
    return got


def _topic(cluster: MiniCluster) -> str:
    topic = f"share-fo-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    with KafkaProducer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"}) as producer:
        for i in range(N):
            producer.send(topic, value=f"v{i}".encode(), partition=0)
            producer.flush()  # one batch per record: the broker acquires whole batches
    return topic


def _heal(cluster: MiniCluster, victim: int, topic: str, partition: int) -> None:
    cluster.wait_for_leader(topic, partition, not_in={victim}, timeout=FAILOVER_TIMEOUT_S)
    cluster.restart(victim, timeout=FAILOVER_TIMEOUT_S)
    cluster.wait_for_isr(topic, partition, cluster.num_brokers, timeout=FAILOVER_TIMEOUT_S)


def _redelivered(cluster: MiniCluster, group: str, topic: str, want: int) -> list[tuple[int, str, int]]:
    """What a new member of ``group`` gets (accepting it), waiting a little longer to see that nothing else comes."""
    c2 = _consumer(cluster, group, topic)
    try:
        accept_all = dict.fromkeys(range(N), ACCEPT)
        again = _poll(c2, want, FAILOVER_TIMEOUT_S, accept_all)
        again.extend(_poll(c2, 1, 2.0, accept_all))
        c2.commit_sync()
    finally:
        c2.close(timeout=5)
    return sorted((r.offset, r.value, r.delivery_count) for r in again)


def _state_partition(cluster: MiniCluster, group: str, topic: str) -> int:
    found = cluster.topic_id(topic)
    assert found is not None, f"no topic {topic}"
    topic_id = uuid.UUID(found)
    return partition_for(share_key((group, topic_id, 0)), STATE_PARTITIONS)


def _group_coordinated_away_from(cluster: MiniCluster, topic: str, broker: int) -> tuple[str, int]:
    """A share group (and its ``__share_group_state`` partition) whose share coordinator for ``topic``-0 is not
    on ``broker``; the state topic is created first (by a throwaway group's first read) when it does not exist."""
    if cluster.leader(SHARE_GROUP_STATE_TOPIC_NAME, 0) < 0:
        warm_up = _consumer(cluster, f"warm-up-{uuid.uuid4().hex[:8]}", topic)
        try:
            _poll(warm_up, 1, 60, {})
        finally:
            warm_up.close(timeout=5)
    for i in range(100):
        group = f"sg-{uuid.uuid4().hex[:8]}-{i}"
        partition = _state_partition(cluster, group, topic)
        if cluster.leader(SHARE_GROUP_STATE_TOPIC_NAME, partition) not in (broker, -1):
            return group, partition
    raise AssertionError(f"every {SHARE_GROUP_STATE_TOPIC_NAME} partition is led by broker {broker}")


def test_the_new_share_partition_leader_reads_the_state_of_the_killed_one(cluster: MiniCluster) -> None:
    topic, group = _topic(cluster), f"sg-{uuid.uuid4().hex[:8]}"
    victim = -1
    c1 = _consumer(cluster, group, topic)
    c1b = _consumer(cluster, group, topic)
    try:
        got = _poll(c1, N, 60, {0: ACCEPT, 1: ACCEPT, 2: RELEASE, 3: RELEASE, 4: RELEASE, 5: REJECT, 6: REJECT})
        assert [(r.offset, r.delivery_count) for r in got] == [(i, 1) for i in range(N)]
        c1.commit_sync()  # answered once the share coordinator's ISR has the acknowledgements
        # another member gets the released ones for their last allowed delivery (limit 2), accepts 2 and keeps
        # 3 and 4 acquired
        second = _poll(c1b, 3, 60, {2: ACCEPT})
        assert [(r.offset, r.delivery_count) for r in second] == [(2, 2), (3, 2), (4, 2)]
        c1b.commit_sync()
        victim = cluster.leader(topic, 0)
        cluster.kill(victim)  # 3 and 4 (c1b) and 7, 8 and 9 (c1) are still acquired: their locks die with it
    finally:
        c1.close(timeout=1)
        c1b.close(timeout=1)
    try:
        # 7, 8 and 9 come back; 3 and 4 had their last allowed delivery: archived, as a release would have
        assert _redelivered(cluster, group, topic, 3) == [(7, "v7", 2), (8, "v8", 2), (9, "v9", 2)]
    finally:
        if victim >= 0:
            _heal(cluster, victim, topic, 0)


def test_the_share_coordinators_failover_keeps_the_state_its_leader_wrote(cluster: MiniCluster) -> None:
    topic = _topic(cluster)
    leader = cluster.leader(topic, 0)
    group, state_partition = _group_coordinated_away_from(cluster, topic, leader)
    c1 = _consumer(cluster, group, topic)
    killed = -1
    try:
        got = _poll(c1, N, 60, {0: ACCEPT, 1: ACCEPT, 2: RELEASE, 3: REJECT})
        assert [(r.offset, r.delivery_count) for r in got] == [(i, 1) for i in range(N)]
        c1.commit_sync()
        coordinator = killed = cluster.leader(SHARE_GROUP_STATE_TOPIC_NAME, state_partition)
        cluster.kill(coordinator)
        # the share-partition leader writes the next acknowledgements to the new share coordinator
        for r in got:
            if r.offset in (4, 5):
                c1.acknowledge(r, ACCEPT)
        started = time.monotonic()
        assert all(error is None for error in c1.commit_sync().values())
        assert time.monotonic() - started < ACK_AFTER_COORDINATOR_KILL_S
        _heal(cluster, coordinator, SHARE_GROUP_STATE_TOPIC_NAME, state_partition)
        killed = leader
        cluster.kill(leader)  # 6..9 still acquired by c1; the next leader reads the state from the coordinator
    finally:
        c1.close(timeout=1)
    try:
        assert _redelivered(cluster, group, topic, 5) == [
            (2, "v2", 2), (6, "v6", 2), (7, "v7", 2), (8, "v8", 2), (9, "v9", 2)]
    finally:
        if killed >= 0:
            _heal(cluster, killed, topic, 0)

"""A share group's state on a 3-broker cluster whose topic's partitions are led by different brokers (issue #25):
the group coordinator records which share partitions have state (ShareGroupStatePartitionMetadata) and acts on
each at its share coordinator, whichever broker leads the topic partition. DescribeShareGroupOffsets gives every
partition's start offset and lag; deleting the group deletes every partition's state (the group created again
gets every record again, so no leader kept its old share partition in memory); altering and deleting offsets act
on every partition; the metadata survives the group coordinator's failover."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from mini_broker.cluster.mini_cluster import MiniCluster
from mini_broker.server.coordinator_lookup import partition_for
from pykafka_client import KafkaProducer, KafkaShareConsumer
from pykafka_client.admin import AdminClient, SharePartitionOffsetInfo
from pykafka_client.errors import GroupIdNotFoundError
from pykafka_client.structs import TopicPartition
from tests.integration.cluster.failover import FAILOVER_TIMEOUT_S
from tests.integration.cluster.helpers import restored_after_each_test

pytestmark = [pytest.mark.integration, pytest.mark.timeout(400)]

PARTITIONS = 3
PER_PARTITION = 4
OFFSETS_PARTITIONS = 10


@pytest.fixture(scope="module")
def module_cluster() -> Iterator[MiniCluster]:
    overrides = {"min.insync.replicas": 2, "group.initial.rebalance.delay.ms": 0,
                 "share.auto.offset.reset": "earliest", "group.share.heartbeat.interval.ms": 200,
                 "share.coordinator.state.topic.num.partitions": 10,
                 "offsets.topic.num.partitions": OFFSETS_PARTITIONS, "transaction.state.log.num.partitions": 10}
    with MiniCluster(3, overrides=overrides) as c:
        yield c


@pytest.fixture
def cluster(module_cluster: MiniCluster) -> Iterator[MiniCluster]:
    """The module's cluster, with any broker a failed test left down started again after it."""
    yield from restored_after_each_test(module_cluster)


def _topic(cluster: MiniCluster) -> str:
    """A topic whose partitions are led by different brokers, with PER_PARTITION records in each."""
    topic = f"share-meta-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=3)
    assert len({cluster.leader(topic, p) for p in range(PARTITIONS)}) > 1, "one broker leads every partition"
    _produce(cluster, topic, 0, PER_PARTITION)
    return topic


def _produce(cluster: MiniCluster, topic: str, first: int, count: int) -> None:
    with KafkaProducer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"}) as producer:
        for p in range(PARTITIONS):
            for i in range(first, first + count):
                producer.send(topic, value=f"p{p}-v{i}".encode(), partition=p)
        producer.flush()


def _admin(cluster: MiniCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "request.timeout.ms": 30000})


def _consume(cluster: MiniCluster, group: str, topic: str, want: int, quiet_s: float = 3.0) -> list[tuple[int, int]]:
    """(partition, offset) of what a new member of ``group`` gets (accepted: implicit acknowledgement, closing
    accepts the last poll's), polling until ``want`` came and then ``quiet_s`` more to see nothing else does."""
    c: KafkaShareConsumer[Any, Any] = KafkaShareConsumer(
        {"bootstrap.servers": cluster.bootstrap_servers, "group.id": group, "fetch.max.wait.ms": 100,
         "request.timeout.ms": 30000})
    c.subscribe([topic])
    got: list[tuple[int, int]] = []
    try:
        deadline = time.monotonic() + FAILOVER_TIMEOUT_S
        while len(got) < want and time.monotonic() < deadline:
            got.extend((r.partition, r.offset) for r in c.poll(0.2))
        quiet = time.monotonic() + quiet_s
        while time.monotonic() < quiet:
            got.extend((r.partition, r.offset) for r in c.poll(0.2))
    finally:
        c.close(timeout=10)
    return sorted(got)


def _offsets(cluster: MiniCluster, group: str) -> dict[TopicPartition, tuple[int, int | None] | None]:
    """(start offset, lag) of each share partition of the group, as list_share_group_offsets gives them."""
    with _admin(cluster) as admin:
        found: dict[TopicPartition, SharePartitionOffsetInfo | None] = admin.list_share_group_offsets(group)
    return {tp: None if info is None else (info.start_offset, info.lag) for tp, info in found.items()}


def _every(topic: str, start: int, lag: int) -> dict[TopicPartition, tuple[int, int | None] | None]:
    return {TopicPartition(topic, p): (start, lag) for p in range(PARTITIONS)}


def _all(first: int, last: int) -> list[tuple[int, int]]:
    return [(p, o) for p in range(PARTITIONS) for o in range(first, last + 1)]


def _wait_for(what: str, check: Any, timeout_s: float = 30.0) -> Any:
    """Poll ``check()`` until it returns something truthy (the high watermark of a follower moves a little
    after the leader's)."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"{what}: still {last!r} after {timeout_s} s")


def test_describe_offsets_gives_every_partitions_start_offset_and_lag(cluster: MiniCluster) -> None:
    topic, group = _topic(cluster), f"sg-{uuid.uuid4().hex[:8]}"
    assert _consume(cluster, group, topic, PARTITIONS * PER_PARTITION) == _all(0, PER_PARTITION - 1)
    assert _offsets(cluster, group) == _every(topic, PER_PARTITION, 0)
    _produce(cluster, topic, PER_PARTITION, 2)
    _wait_for("lag 2 on every partition", lambda: _offsets(cluster, group) == _every(topic, PER_PARTITION, 2))


def test_a_deleted_group_created_again_gets_every_record_of_every_partition_again(cluster: MiniCluster) -> None:
    topic, group = _topic(cluster), f"sg-{uuid.uuid4().hex[:8]}"
    assert _consume(cluster, group, topic, PARTITIONS * PER_PARTITION) == _all(0, PER_PARTITION - 1)
    with _admin(cluster) as admin:
        admin.delete_share_groups([group])
    # no leader serves its old share partition from memory, nor reads its old state
    assert _consume(cluster, group, topic, PARTITIONS * PER_PARTITION) == _all(0, PER_PARTITION - 1)
    assert _offsets(cluster, group) == _every(topic, PER_PARTITION, 0)


def test_altered_and_deleted_offsets_act_on_every_partition(cluster: MiniCluster) -> None:
    topic, group = _topic(cluster), f"sg-{uuid.uuid4().hex[:8]}"
    assert _consume(cluster, group, topic, PARTITIONS * PER_PARTITION) == _all(0, PER_PARTITION - 1)
    with _admin(cluster) as admin:
        admin.alter_share_group_offsets(group, {(topic, p): 1 for p in range(PARTITIONS)})
    assert _consume(cluster, group, topic, PARTITIONS * (PER_PARTITION - 1)) == _all(1, PER_PARTITION - 1)
    # deleted offsets: each partition starts again at share.auto.offset.reset (earliest)
    with _admin(cluster) as admin:
        admin.delete_share_group_offsets(group, [topic])
        assert admin.list_share_group_offsets(group) == {}
    assert _consume(cluster, group, topic, PARTITIONS * PER_PARTITION) == _all(0, PER_PARTITION - 1)
    with _admin(cluster) as admin:
        admin.alter_share_group_offsets(group, {(topic, p): 2 for p in range(PARTITIONS)})
    assert _offsets(cluster, group) == _every(topic, 2, PER_PARTITION - 2)


def test_the_state_partitions_survive_the_group_coordinators_failover(cluster: MiniCluster) -> None:
    topic, group = _topic(cluster), f"sg-{uuid.uuid4().hex[:8]}"
    assert _consume(cluster, group, topic, PARTITIONS * PER_PARTITION) == _all(0, PER_PARTITION - 1)
    offsets_partition = partition_for(group, OFFSETS_PARTITIONS)
    victim = cluster.leader("__consumer_offsets", offsets_partition)
    cluster.kill(victim)
    try:
        cluster.wait_for_leader("__consumer_offsets", offsets_partition, not_in={victim}, timeout=FAILOVER_TIMEOUT_S)
        # the new coordinator replayed which share partitions have state; a partition the victim led has no
        # leader to measure its lag against until it is elected elsewhere
        _wait_for("every partition's start offset after the failover", lambda: {
            tp: v[0] if v else None for tp, v in _offsets(cluster, group).items()} == {
            TopicPartition(topic, p): PER_PARTITION for p in range(PARTITIONS)}, FAILOVER_TIMEOUT_S)
        with _admin(cluster) as admin:
            admin.delete_share_groups([group])
            with pytest.raises(GroupIdNotFoundError):
                admin.list_share_group_offsets(group)
    finally:
        cluster.restart(victim, timeout=FAILOVER_TIMEOUT_S)
        cluster.wait_for_isr("__consumer_offsets", offsets_partition, cluster.num_brokers, timeout=FAILOVER_TIMEOUT_S)

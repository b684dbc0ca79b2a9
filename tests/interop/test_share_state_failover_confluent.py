"""confluent-kafka's ShareConsumer across a failover of the share-partition leader on a 3-broker MiniCluster
(issue #25 item 3): it accepts, releases and rejects records and keeps others acquired; the broker leading the
topic partition is SIGKILLed; a new ShareConsumer of the group gets exactly the released and the acquired
records, with their delivery count raised, and never an accepted or rejected one (the new leader read the
share-partition state from the share coordinator)."""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from mini_broker.cluster.mini_cluster import MiniCluster
from pykafka_client import KafkaProducer
from tests.integration.cluster.failover import FAILOVER_TIMEOUT_S

ck = pytest.importorskip("confluent_kafka")
if not hasattr(ck, "ShareConsumer"):
    if os.environ.get("CI"):  # the interop extra installs one that has it: a missing peer fails CI
        pytest.fail("this confluent-kafka has no ShareConsumer (2.15+ has it)", pytrace=False)
    pytest.skip("this confluent-kafka has no ShareConsumer (2.15+ has it)", allow_module_level=True)

pytestmark = [pytest.mark.integration, pytest.mark.interop, pytest.mark.timeout(300)]

N = 10


@pytest.fixture
def cluster() -> Iterator[MiniCluster]:
    overrides = {"min.insync.replicas": 2, "group.initial.rebalance.delay.ms": 0,
                 "share.auto.offset.reset": "earliest", "group.share.record.lock.duration.ms": 120_000,
                 "group.share.heartbeat.interval.ms": 200, "share.coordinator.state.topic.num.partitions": 10,
                 "offsets.topic.num.partitions": 10}
    with MiniCluster(3, overrides=overrides) as c:
        yield c


def _share_consumer(cluster: MiniCluster, group: str, topic: str) -> Any:
    c = ck.ShareConsumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                          "share.acknowledgement.mode": "explicit"})
    c.subscribe([topic])
    return c


def _poll_until(c: Any, want: int, timeout_s: float, accept: bool = False) -> list[Any]:
    """Poll until ``want`` records came; ``accept``: each is accepted as it comes (the explicit mode wants every
    record of a poll acknowledged before the next one)."""
    got: list[Any] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < want and time.monotonic() < deadline:
        for m in c.poll(0.2):
            if m.error() is None:
                got.append(m)
                if accept:
                    c.acknowledge(m, ck.AcknowledgeType.ACCEPT)
    return got


def _close_in_background(c: Any) -> None:
    """Close a consumer whose broker died without letting a slow close hold the test up."""
    t = threading.Thread(target=c.close, daemon=True)
    t.start()
    t.join(10)


def test_confluent_share_consumer_gets_exactly_the_unacknowledged_records_after_the_leader_dies(
        cluster: MiniCluster) -> None:
    topic, group = f"share-ck-{uuid.uuid4().hex[:8]}", f"sg-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    with KafkaProducer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 100}) as producer:
        for i in range(N):
            producer.send(topic, value=f"v{i}".encode(), partition=0)
        producer.flush()  # one batch: one poll gets it whole, so its records can be left acquired
    kinds = {0: ck.AcknowledgeType.ACCEPT, 1: ck.AcknowledgeType.ACCEPT, 2: ck.AcknowledgeType.RELEASE,
             3: ck.AcknowledgeType.REJECT, 4: ck.AcknowledgeType.REJECT}
    c1 = _share_consumer(cluster, group, topic)
    victim = -1
    try:
        first = _poll_until(c1, N, 60)
        assert [(m.offset(), m.delivery_count()) for m in first] == [(i, 1) for i in range(N)]
        for m in first:
            if m.offset() in kinds:
                c1.acknowledge(m, kinds[m.offset()])
        c1.commit_sync()
        victim = cluster.leader(topic, 0)
        cluster.kill(victim)  # 5..9 still acquired by c1
    finally:
        _close_in_background(c1)
    c2 = _share_consumer(cluster, group, topic)
    try:
        again = _poll_until(c2, 6, FAILOVER_TIMEOUT_S, accept=True)
        again += _poll_until(c2, 1, 2.0, accept=True)  # nothing else comes
        c2.commit_sync()
        assert sorted((m.offset(), m.value(), m.delivery_count()) for m in again) == [
            (2, b"v2", 2), (5, b"v5", 2), (6, b"v6", 2), (7, b"v7", 2), (8, b"v8", 2), (9, b"v9", 2)]
    finally:
        c2.close()
        if victim >= 0:
            cluster.restart(victim, timeout=FAILOVER_TIMEOUT_S)

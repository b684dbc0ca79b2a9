"""A burst of topic creations does not cost brokers their sessions (Kafka: the BrokerLifecycleManager heartbeats
on its own event queue, apart from metadata publication): a 3-broker cluster creating 1,000 topics of 3 replicas
in one request (3,000 logs a broker, then the ISR changes of followers catching up) keeps every broker unfenced,
so no leader moves. Before, a heartbeat queued behind the controller's long changes let the broker's session
expire, and the fenced broker registered again on its heartbeat thread and applied the metadata there, missing
more heartbeats: brokers were fenced again and again. The session timeout is below Kafka's 9 s and above what a
loaded 2-core box delays a heartbeat by."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from mini_broker.cluster.mini_cluster import MiniCluster
from pykafka_client.admin import AdminClient, NewTopic
from tests.integration.cluster.failover import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

TOPICS = 1000
PARTITIONS = 3
SESSION_TIMEOUT_MS = 4000


@pytest.fixture(scope="module")
def cluster() -> Iterator[MiniCluster]:
    with MiniCluster(3, overrides={"broker.session.timeout.ms": SESSION_TIMEOUT_MS}) as c:
        yield c


def test_a_thousand_topics_created_at_once_fence_no_broker(cluster: MiniCluster) -> None:
    assert cluster.controller is not None
    state = cluster.controller.state
    epochs = {b: reg.broker_epoch for b, reg in state.broker_registrations().items()}
    fenced: list[int] = []
    stop = threading.Event()

    def watch() -> None:  # a fencing can be undone by the broker registering again: watch while it happens
        while not stop.wait(0.05):
            fenced.extend(b for b, reg in state.broker_registrations().items() if reg.fenced)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        with AdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=300_000,
                         default_api_timeout_ms=300_000) as admin:
            results = admin.create_topics([NewTopic(f"burst-{i}", PARTITIONS, 3) for i in range(TOPICS)],
                                          timeout=300)
            assert [n for n, r in results.items() if getattr(r, "error", None) is not None] == []
            # the followers catch up on 3,000 partitions (ISR shrinks and expansions, thousands of AlterPartitions)
            wait_until(lambda: all(len(cluster.isr(f"burst-{i}", p)) == 3
                                   for i in range(TOPICS) for p in range(PARTITIONS)),
                       300, "every partition's ISR to hold its 3 replicas")
            cluster.wait_for_metadata(120)
            described = admin.describe_cluster(timeout=60)
    finally:
        stop.set()
        watcher.join()
    assert sorted(set(fenced)) == []
    assert {b: reg.broker_epoch for b, reg in state.broker_registrations().items()} == epochs  # none registered again
    assert sorted(n.id for n in described.nodes) == [0, 1, 2]
    moved = [(f"burst-{i}", p) for i in range(TOPICS) for p in range(PARTITIONS)
             if cluster.leader_epoch(f"burst-{i}", p) != 0]
    assert moved == []  # every leader is the one the creation chose

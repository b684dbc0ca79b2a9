"""A broker that missed metadata changes catches up (Kafka: a broker fetching the metadata log from its offset,
or the latest snapshot when it has none): on a 3-broker MiniCluster of this module's own, topics are created,
deleted and given partitions while one broker is down; restarted, it gets the image and serves exactly the
controller's metadata (and has no log of the deleted topic left). A broker that was only stalled (SIGSTOP past
its session) keeps its version and catches up by the deltas after it: no image is sent."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from mini_broker.cluster.mini_cluster import MiniCluster
from pykafka_client import AdminClient
from pykafka_client.admin import NewPartitions, NewTopic
from pykafka_client.protocol.messages import MetadataRequest
from tests.integration.cluster.conftest import CLUSTER_OVERRIDES
from tests.integration.cluster.failover import wait_until
from tests.integration.cluster.helpers import conn, restored_after_each_test

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

BEHIND = 2


@pytest.fixture(scope="module")
def module_cluster() -> Iterator[MiniCluster]:
    with MiniCluster(3, overrides=CLUSTER_OVERRIDES) as c:
        yield c


@pytest.fixture
def cluster(module_cluster: MiniCluster) -> Iterator[MiniCluster]:
    """The module's cluster, with any broker a failed test left down started again after it."""
    yield from restored_after_each_test(module_cluster)


def _served_by(cluster: MiniCluster, broker_id: int) -> dict[str, list[tuple[int, int, list[int], list[int]]]]:
    """Broker ``broker_id``'s Metadata answer: per topic, per partition (index, leader, replicas, ISR)."""
    with conn(cluster, broker_id) as c:
        md = c.call(MetadataRequest(topics=None), 12)
    return {t.name: sorted((p.partition_index, p.leader_id, list(p.replica_nodes), list(p.isr_nodes))
                           for p in t.partitions)
            for t in md.topics if t.error_code == 0}


def _controllers(cluster: MiniCluster) -> dict[str, list[tuple[int, int, list[int], list[int]]]]:
    assert cluster.controller is not None
    return {name: [(i, p.leader, p.replicas, p.isr) for i, p in enumerate(t.partitions)]
            for name, t in cluster.controller.state.topic_registrations().items()}


def _serves_the_controllers_metadata(cluster: MiniCluster, broker_id: int) -> None:
    seen: list[object] = []

    def same() -> bool:
        cluster.wait_for_metadata(60)
        served, expected = _served_by(cluster, broker_id), _controllers(cluster)
        seen[:] = [{t: (served.get(t), expected.get(t)) for t in set(served) | set(expected)
                    if served.get(t) != expected.get(t)}]
        return served == expected

    try:
        wait_until(same, 60, f"broker {broker_id} to serve the controller's metadata")
    except AssertionError as e:
        raise AssertionError(f"{e}; (served, controller's) of the topics that differ: {seen}") from None


def _fenced(cluster: MiniCluster, broker_id: int) -> bool:
    assert cluster.controller is not None
    return cluster.controller.state.broker_registrations()[broker_id].fenced


def _wait_fenced(cluster: MiniCluster, broker_id: int) -> None:
    wait_until(lambda: _fenced(cluster, broker_id), 30, f"the controller to fence broker {broker_id}")


def _admin(cluster: MiniCluster) -> AdminClient:
    live = ",".join(b.bootstrap for i, b in cluster.brokers.items() if i != BEHIND)
    return AdminClient(bootstrap_servers=live, default_api_timeout_ms=60_000)


def test_a_restarted_broker_gets_the_image_and_serves_what_changed_while_it_was_down(cluster: MiniCluster) -> None:
    with AdminClient(bootstrap_servers=cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic("cu-keep", 2, 3), NewTopic("cu-doomed", 1, 3), NewTopic("cu-grow", 1, 3)],
                            timeout=30)
    cluster.wait_for_metadata(60)
    doomed_dir = os.path.join(cluster.brokers[BEHIND].data_dir, "cu-doomed-0")
    assert os.path.isdir(doomed_dir)
    cluster.kill(BEHIND)
    _wait_fenced(cluster, BEHIND)
    with _admin(cluster) as admin:
        admin.create_topics([NewTopic("cu-new", replica_assignments={0: [BEHIND, 0], 1: [0, 1]})], timeout=30)
        admin.delete_topics(["cu-doomed"], timeout=30)
        admin.create_partitions({"cu-grow": NewPartitions(3, [[BEHIND, 0, 1], [1, BEHIND, 0]])}, timeout=30)
    assert cluster.controller is not None
    images = cluster.controller.state.images_served
    cluster.restart(BEHIND)
    assert cluster.controller.state.images_served > images  # it started with no version: the image
    _serves_the_controllers_metadata(cluster, BEHIND)
    served = _served_by(cluster, BEHIND)
    assert "cu-doomed" not in served and len(served["cu-grow"]) == 3
    assert served["cu-new"][0][2] == [BEHIND, 0]
    assert not os.path.exists(doomed_dir)  # the deleted topic's log went at catch-up


def test_a_stalled_broker_catches_up_by_the_deltas_after_its_version(cluster: MiniCluster) -> None:
    assert cluster.controller is not None
    state = cluster.controller.state
    cluster.wait_for_metadata(60)
    pid = cluster.brokers[BEHIND].pid
    os.kill(pid, signal.SIGSTOP)
    try:
        _wait_fenced(cluster, BEHIND)
        with _admin(cluster) as admin:
            admin.create_topics([NewTopic("cu-late", replica_assignments={0: [BEHIND, 1], 1: [1, BEHIND]})],
                                timeout=30)
            admin.delete_topics(["cu-keep"], timeout=30)
            admin.create_partitions({"cu-new": NewPartitions(3, [[0, BEHIND]])}, timeout=30)
        images = state.images_served
    finally:
        os.kill(pid, signal.SIGCONT)
    wait_until(lambda: not _fenced(cluster, BEHIND), 60, f"broker {BEHIND} to register again")
    _serves_the_controllers_metadata(cluster, BEHIND)
    assert state.images_served == images  # deltas only
    served = _served_by(cluster, BEHIND)
    assert "cu-keep" not in served and len(served["cu-new"]) == 3 and "cu-late" in served
    assert not os.path.exists(os.path.join(cluster.brokers[BEHIND].data_dir, "cu-keep-0"))

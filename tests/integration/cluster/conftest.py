"""A 3-broker MiniCluster shared by the client failover tests of this package (the tests
kill and restart brokers; each should leave every broker running again, and the ``cluster`` fixture
starts any it left down)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mini_broker.cluster.mini_cluster import MiniCluster
from tests.integration.cluster.helpers import restored_after_each_test

#: Fast failure detection keeps the failovers short on a busy CI box; min.insync.replicas=2 makes
#: acks=all mean "on at least two brokers", so one SIGKILL cannot lose an acknowledged record. No automatic
#: preferred elections: the shared cluster outlives leader.imbalance.check.interval.seconds (300 s), and one
#: firing mid-test would move the leaderships (and coordinators) an earlier test's kill piled up under a test
#: that has just looked a leader or coordinator up (test_leader_balance.py covers the rebalance on a cluster
#: of its own).
CLUSTER_OVERRIDES = {
    "min.insync.replicas": 2,
    "group.initial.rebalance.delay.ms": 0,
    "auto.leader.rebalance.enable": False,
}


@pytest.fixture(scope="package")
def shared_cluster() -> Iterator[MiniCluster]:
    with MiniCluster(3, overrides=CLUSTER_OVERRIDES) as c:
        yield c


@pytest.fixture
def cluster(shared_cluster: MiniCluster) -> Iterator[MiniCluster]:
    """The shared cluster; a test that ends with a broker down (it failed before restarting it) has it
    started again, so the tests after it start with every broker running."""
    yield from restored_after_each_test(shared_cluster)

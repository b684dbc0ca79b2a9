"""A 3-broker MiniCluster shared by the client failover tests of this package (the tests
kill and restart brokers, and each leaves every broker running again)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mini_broker.cluster.mini_cluster import MiniCluster

#: Fast failure detection keeps the failovers short on a busy CI box; min.insync.replicas=2 makes
#: acks=all mean "on at least two brokers", so one SIGKILL cannot lose an acknowledged record.
CLUSTER_OVERRIDES = {
    "min.insync.replicas": 2,
    "group.initial.rebalance.delay.ms": 0,
}


@pytest.fixture(scope="package")
def cluster() -> Iterator[MiniCluster]:
    with MiniCluster(3, overrides=CLUSTER_OVERRIDES) as c:
        yield c

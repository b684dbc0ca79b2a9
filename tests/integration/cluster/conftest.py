"""A 3-broker MiniCluster shared by the client failover tests of this package (the tests
kill and restart brokers; each should leave every broker running again, and the ``cluster`` fixture
starts any it left down)."""

from __future__ import annotations

import warnings
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
def shared_cluster() -> Iterator[MiniCluster]:
    with MiniCluster(3, overrides=CLUSTER_OVERRIDES) as c:
        yield c


@pytest.fixture
def cluster(shared_cluster: MiniCluster) -> Iterator[MiniCluster]:
    """The shared cluster; a test that ends with a broker down (it failed before restarting it) has it
    started again, so the tests after it start with every broker running."""
    yield shared_cluster
    down = shared_cluster.restore()
    if down:
        warnings.warn(f"brokers {down} were down at the end of the test and were started again", stacklevel=1)

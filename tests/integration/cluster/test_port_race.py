"""MiniCluster chooses its brokers' ports before starting them; if another process takes one in between, the
broker fails to bind and the cluster starts it again on a fresh port instead of failing the whole start."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from mini_broker.cluster import mini_cluster
from mini_broker.cluster.mini_cluster import MiniCluster
from pykafka_client import AdminClient

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


def test_a_port_taken_before_the_broker_binds_it_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = int(taken.getsockname()[1])
        real_free_port = mini_cluster._free_port
        ports: Iterator[int] = iter([busy])

        def free_port() -> int:
            return next(ports, None) or real_free_port()

        monkeypatch.setattr(mini_cluster, "_free_port", free_port)
        with MiniCluster(1) as cluster:
            port = cluster.brokers[0].port
            assert port != busy
            with AdminClient(bootstrap_servers=cluster.bootstrap_servers) as admin:
                [node] = admin.describe_cluster(timeout=30).nodes
                assert node.port == port

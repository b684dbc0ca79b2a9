"""``txn_broker``: the broker the transaction tests run against, as a bootstrap address: an in-process
MiniBroker, a 3-broker MiniCluster (partitions led by brokers other than the coordinator's, so markers cross
brokers), and (marked interop) noida-db, an independent implementation of transactions the tests are
proven on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import _missing_peer
from tests.integration.noida import NoidaBroker, noida_binary


@pytest.fixture(params=["mini_broker", "mini_cluster", pytest.param("noida", marks=pytest.mark.interop)])
def txn_broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "noida":
        binary = noida_binary()
        if binary is None:
            _missing_peer("noida-db")
        noida = NoidaBroker(binary, tmp_path / "noida-data", log_path=tmp_path / "noida.log")
        noida.start()
        try:
            yield noida.bootstrap
        finally:
            noida.stop()
        return
    if request.param == "mini_cluster":
        if request.node.module.__name__.endswith("test_bad_input"):
            pytest.skip("client-side input checks do not depend on the broker count (single broker covers them)")
        from mini_broker.cluster.mini_cluster import MiniCluster

        with MiniCluster(3, data_dir=str(tmp_path / "cluster"), overrides={"group.initial.rebalance.delay.ms": 0}) as c:
            yield c.bootstrap_servers
        return
    from mini_broker.broker import MiniBroker

    with MiniBroker({"group.initial.rebalance.delay.ms": 0}) as broker:
        yield broker.bootstrap_servers

"""``txn_broker``: the broker the transaction tests run against, as a bootstrap address: an in-process
MiniBroker, a 3-broker MiniCluster (partitions led by brokers other than the coordinator's, so markers cross
brokers), and (marked interop) noida-db, an independent implementation of transactions the tests are
proven on."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import _missing_peer
from tests.integration.noida import NoidaBroker, noida_binary


@contextlib.contextmanager
def start_txn_broker(kind: str, tmp_path: Path) -> Iterator[str]:
    """Start the broker ``kind`` ("mini_broker", "mini_cluster" or "noida"); yield its bootstrap address."""
    if kind == "noida":
        binary = noida_binary()
        if binary is None:
            _missing_peer("noida-db")
        noida = NoidaBroker(binary, tmp_path / "noida-data", log_path=tmp_path / "noida.log")
        noida.start()
        try:
            yield noida.bootstrap
        finally:
            noida.stop()
    elif kind == "mini_cluster":
        from mini_broker.cluster.mini_cluster import MiniCluster

        with MiniCluster(3, data_dir=str(tmp_path / "cluster"), overrides={"group.initial.rebalance.delay.ms": 0}) as c:
            yield c.bootstrap_servers
    else:
        from mini_broker.broker import MiniBroker

        with MiniBroker({"group.initial.rebalance.delay.ms": 0}) as broker:
            yield broker.bootstrap_servers


#: the independent broker, marked interop
NOIDA = pytest.param("noida", marks=pytest.mark.interop)


@pytest.fixture(params=["mini_broker", "mini_cluster", NOIDA])
def txn_broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with start_txn_broker(request.param, tmp_path) as bootstrap:
        yield bootstrap

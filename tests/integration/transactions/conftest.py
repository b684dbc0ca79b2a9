"""``txn_broker``: the broker the transaction tests run against, as a bootstrap address: an in-process
MiniBroker, and (marked interop) noida-db, an independent implementation of transactions the tests are
proven on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import _missing_peer
from tests.integration.noida import NoidaBroker, noida_binary


@pytest.fixture(params=["mini_broker", pytest.param("noida", marks=pytest.mark.interop)])
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
    from mini_broker.broker import MiniBroker

    with MiniBroker({"group.initial.rebalance.delay.ms": 0}) as broker:
        yield broker.bootstrap_servers

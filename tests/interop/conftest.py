"""Fixtures for foreign clients against mini_broker: a MiniBroker per test module (port 0, temp data dir)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mini_broker.broker import MiniBroker


@pytest.fixture(scope="module")
def mini_broker() -> Iterator[MiniBroker]:
    with MiniBroker(num_network_threads=2, num_io_threads=4) as broker:
        yield broker

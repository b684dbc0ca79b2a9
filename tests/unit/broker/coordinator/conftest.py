"""Fixtures of the coordinator runtime's tests: a MockTime, a partition's log, and one broker's runtime."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mini_broker.log.log_config import LogConfig
from mini_broker.log.unified_log import Log
from pykafka_client.utils.time import MockTime
from tests.unit.broker.coordinator.test_coordinator_runtime import Broker


@pytest.fixture
def time() -> MockTime:
    return MockTime()


@pytest.fixture
def log(tmp_path: Path, time: MockTime) -> Iterator[Log]:
    lg = Log(str(tmp_path / "__kv-0"), LogConfig(), time=time)
    yield lg
    lg.close()


@pytest.fixture
def broker(time: MockTime) -> Iterator[Broker]:
    b = Broker(time)
    yield b
    b.close()

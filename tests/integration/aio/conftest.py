"""Shared fixtures of the async client tests: one MiniBroker per module, every test under asyncio and trio
(anyio's pytest plugin runs an ``async def`` test once per ``anyio_backend`` parameter)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from mini_broker.broker import MiniBroker


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def broker() -> Iterator[MiniBroker]:
    with MiniBroker({"num.partitions": 3, "group.initial.rebalance.delay.ms": 0}) as b:
        yield b


def topic_name(prefix: str = "aio") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def consumer_config(broker: MiniBroker, **extra: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "bootstrap.servers": broker.bootstrap_servers,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": 10000,
        "heartbeat.interval.ms": 500,
    }
    cfg.update({k.replace("_", "."): v for k, v in extra.items()})
    return cfg

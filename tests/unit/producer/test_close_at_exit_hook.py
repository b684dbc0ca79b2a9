"""The producer's interpreter-exit hook: registered by the constructor, removed by close(), and holding only
a weak reference (an unclosed producer can still be garbage-collected). The exit behaviour itself is
tested in a subprocess: tests/integration/producer/test_close_at_exit.py."""

from __future__ import annotations

import atexit
import gc
import weakref
from collections.abc import Callable

import pytest

from pykafka_client import KafkaProducer
from tests.unit.producer.test_kafka_producer_api import closed_port


def _new() -> KafkaProducer:
    return KafkaProducer({"bootstrap.servers": closed_port(), "max.block.ms": 0})


def test_close_removes_the_exit_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    registered: list[Callable[[], None]] = []
    monkeypatch.setattr(atexit, "register", registered.append)
    monkeypatch.setattr(atexit, "unregister", lambda f: registered.remove(f) if f in registered else None)
    producer = _new()
    assert registered == [producer._exit_hook]
    producer.close(0)
    assert registered == []
    producer.close(0)  # idempotent: nothing left to remove, no error


def test_the_exit_hook_does_not_keep_the_producer_alive() -> None:
    producer = _new()
    sender, hook = producer.sender, producer._exit_hook
    ref = weakref.ref(producer)
    del producer
    gc.collect()
    try:
        assert ref() is None
        hook()  # the producer is gone: the hook does nothing
    finally:
        atexit.unregister(hook)
        sender.force_close()

"""KafkaProducer checks that need no broker (bootstrap points at a closed port; the producer is closed at once)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from pykafka_client import KafkaProducer
from pykafka_client.errors import ConfigurationError, IllegalArgumentError, ProducerClosedError
from pykafka_client.producer.kafka_producer import _normalize_headers


def closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture
def producer() -> Iterator[KafkaProducer]:
    p = KafkaProducer({"bootstrap.servers": closed_port(), "max.block.ms": 0})
    try:
        yield p
    finally:
        p.close(0)


def test_headers_normalized() -> None:
    assert _normalize_headers(None) == ()
    assert _normalize_headers({"a": b"1", "b": "two", "c": None}) == [("a", b"1"), ("b", b"two"), ("c", None)]
    assert _normalize_headers([("a", bytearray(b"x"))]) == [("a", b"x")]
    with pytest.raises(IllegalArgumentError):
        _normalize_headers([("a", 1)])
    with pytest.raises(IllegalArgumentError):
        _normalize_headers([(1, b"x")])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("key", "value"),
    [("value.serializer", "avro"), ("partitioner.class", "murmur3"), ("partitioner.class", object()), ("interceptor.classes", "a.B")],
)
def test_bad_pluggable_classes(key: str, value: Any) -> None:
    with pytest.raises(ConfigurationError, match=key.replace(".", r"\.")):
        KafkaProducer({"bootstrap.servers": closed_port(), key: value})


def test_argument_checks_raise(producer: KafkaProducer) -> None:
    with pytest.raises(IllegalArgumentError):
        producer.send("", b"v")
    with pytest.raises(IllegalArgumentError):
        producer.send("t", b"v", partition=-1)
    with pytest.raises(IllegalArgumentError):
        producer.send("t", b"v", timestamp=-5)


def test_metadata_timeout_fails_the_future_and_calls_back(producer: KafkaProducer) -> None:
    seen: list[Any] = []
    f = producer.send("t", b"v", on_delivery=lambda md, e: seen.append((md, e)))
    exc = f.exception(1)
    assert exc is not None and "not present in metadata after 0 ms" in str(exc)
    assert seen == [(None, exc)]


def test_closed_producer(producer: KafkaProducer) -> None:
    producer.close(0)
    with pytest.raises(ProducerClosedError):
        producer.send("t", b"v")
    with pytest.raises(ProducerClosedError):
        producer.partitions_for("t")
    producer.flush(0.1)  # nothing buffered: returns

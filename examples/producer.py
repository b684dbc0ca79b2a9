"""Produce a few records with pykafka_client's KafkaProducer.

    .venv/bin/python -m examples.producer                          # against an embedded mini_broker
    .venv/bin/python -m examples.producer --bootstrap host:9092    # against a running cluster

Shows the Java-style configuration, keyed and unkeyed sends, headers, a delivery callback, waiting on a
future, flush and close (the context manager closes).
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator

from pykafka_client import KafkaProducer, RecordMetadata


@contextlib.contextmanager
def bootstrap_servers(given: str | None) -> Iterator[str]:
    if given:
        yield given
        return
    from mini_broker.broker import MiniBroker

    with MiniBroker({"num.partitions": 3}) as broker:
        yield broker.bootstrap_servers


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", help="host:port of a Kafka broker (default: start a mini_broker)")
    ap.add_argument("--topic", default="example-events")
    args = ap.parse_args()

    def on_delivery(metadata: RecordMetadata | None, error: BaseException | None) -> None:
        if error is not None:
            print(f"delivery failed: {error}")

    with bootstrap_servers(args.bootstrap) as servers:
        config = {
            "bootstrap.servers": servers,
            "key.serializer": "str",
            "value.serializer": "json",
            "linger.ms": 5,
            "compression.type": "lz4",
        }
        with KafkaProducer(config) as producer:
            first = producer.send(args.topic, {"event": "signup", "user": 1}, key="user-1", headers=[("source", b"example")])
            md = first.result(timeout=10)
            print(f"first record: partition {md.partition}, offset {md.offset}")
            for i in range(1000):
                producer.send(args.topic, {"event": "click", "n": i}, key=f"user-{i % 10}", on_delivery=on_delivery)
            producer.flush(timeout=30)
            print("metrics:", {k: v for k, v in producer.metrics().items() if k in ("record-send-total", "request-total")})


if __name__ == "__main__":
    main()

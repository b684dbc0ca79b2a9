"""Produce a few records with pykafka_client's KafkaProducer.

    .venv/bin/python examples/producer.py                          # against a local mini_broker process
    .venv/bin/python examples/producer.py --bootstrap host:9092    # against a running cluster

Shows the Java-style configuration, keyed and unkeyed sends, headers, a delivery callback, waiting on a
future, flush and close (the context manager closes).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))  # `python examples/x.py` too: the checkout holds `examples`

from examples.local_broker import bootstrap_servers
from pykafka_client import KafkaProducer, RecordMetadata


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", help="host:port of a Kafka broker (default: start a mini_broker)")
    ap.add_argument("--topic", default="example-events")
    args = ap.parse_args(argv)
    failed: list[BaseException] = []

    def on_delivery(metadata: RecordMetadata | None, error: BaseException | None) -> None:
        if error is not None:
            failed.append(error)
            print(f"delivery failed: {error}")

    with bootstrap_servers(args.bootstrap, {"num.partitions": 3}) as servers:
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
    print(f"1001 records sent, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

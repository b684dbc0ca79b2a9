"""Consume with a consumer group: subscribe, a rebalance listener, manual commits, resuming after a restart.

    .venv/bin/python examples/consumer_group.py                          # against a local mini_broker process
    .venv/bin/python examples/consumer_group.py --bootstrap host:9092    # against a running cluster

Produces ``--records`` keyed records to a 3-partition topic, then:

1. a first consumer in group ``example-group`` subscribes, processes about half of them, commits what it
   processed with ``commit_sync()`` and closes;
2. a second consumer in the same group subscribes and starts where the group committed (not at the
   beginning), reading the rest.

Every record is processed exactly once across the two. Offsets are committed by hand
(``enable.auto.commit=false``), the way to get at-least-once processing you control.

Run it again against the same broker: the topic is reused, and the group resumes after what the last run
committed, so it processes only the new run's records (each value names its run; records an interrupted
run left uncommitted are skipped, and committed, as stale).
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from collections.abc import Collection
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))  # `python examples/x.py` too: the checkout holds `examples`

from examples.local_broker import bootstrap_servers
from pykafka_client import AdminClient, ConsumerRebalanceListener, KafkaConsumer, KafkaProducer, TopicPartition
from pykafka_client.admin import NewTopic
from pykafka_client.errors import TopicExistsError

TOPIC = "example-orders"
GROUP = "example-group"


class PrintingListener(ConsumerRebalanceListener):
    """Shows what the group coordinator gives this member (runs inside poll(), in this thread)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def on_partitions_assigned(self, assigned: Collection[TopicPartition]) -> None:
        print(f"  {self.name}: assigned {sorted(p.partition for p in assigned)}")

    def on_partitions_revoked(self, revoked: Collection[TopicPartition]) -> None:
        if revoked:
            print(f"  {self.name}: revoked {sorted(p.partition for p in revoked)}")


def consumer_config(servers: str, name: str) -> dict[str, object]:
    return {
        "bootstrap.servers": servers,
        "group.id": GROUP,
        "client.id": name,
        "auto.offset.reset": "earliest",  # a group with no committed offset starts at the beginning
        "enable.auto.commit": False,  # we commit with commit_sync() after processing
        "key.deserializer": "str",
        "value.deserializer": "str",
        "max.poll.records": 100,  # at most this many records per poll()
    }


def consume(servers: str, name: str, run: str, processed: list[str], until: int, timeout_s: float = 60.0) -> None:
    """Poll until ``processed`` holds at least ``until`` values of this run, commit, close (leaving the group)."""
    # The config names the deserializers ("str"), which mypy cannot see: the annotation states the types.
    consumer: KafkaConsumer[str, str] = KafkaConsumer(consumer_config(servers, name))
    with consumer:
        consumer.subscribe([TOPIC], PrintingListener(name))
        deadline = time.monotonic() + timeout_s
        stale = 0
        while len(processed) < until and time.monotonic() < deadline:
            for record in consumer.poll(0.5):
                if record.value.startswith(run):
                    processed.append(record.value)
                else:
                    stale += 1
        if stale:
            print(f"  {name}: skipped {stale} records of an earlier run that had not committed them")
        consumer.commit_sync()  # the positions after every record poll() returned
        committed = consumer.committed([TopicPartition(TOPIC, p) for p in range(3)])
        print(f"  {name}: committed {dict(sorted((tp.partition, om.offset if om else None) for tp, om in committed.items()))}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", help="host:port of a Kafka broker (default: start a mini_broker)")
    ap.add_argument("--records", type=int, default=600)
    args = ap.parse_args(argv)

    run = f"run {uuid.uuid4().hex[:8]}"  # in every value, so a later run against the same broker tells its own apart
    with bootstrap_servers(args.bootstrap, {"group.initial.rebalance.delay.ms": 0}) as servers:
        with AdminClient({"bootstrap.servers": servers}) as admin:
            try:
                admin.create_topics([NewTopic(TOPIC, num_partitions=3, replication_factor=1)])
            except TopicExistsError:
                print(f"{TOPIC} exists (an earlier run): reusing it")
        with KafkaProducer({"bootstrap.servers": servers, "key.serializer": "str", "value.serializer": "str"}) as p:
            for i in range(args.records):
                p.send(TOPIC, f"{run}: order {i}", key=f"customer-{i % 7}")
            p.flush()
        print(f"produced {args.records} records to {TOPIC} ({run})")

        first: list[str] = []
        print("first consumer:")
        consume(servers, "consumer-1", run, first, until=args.records // 2)
        print(f"  consumer-1 processed {len(first)} records")

        second: list[str] = []
        print("second consumer (same group, resumes from the committed offsets):")
        consume(servers, "consumer-2", run, second, until=args.records - len(first))
        print(f"  consumer-2 processed {len(second)} records")

    everything = sorted(first + second)
    exactly_once = everything == sorted(f"{run}: order {i}" for i in range(args.records))
    print(f"every record processed exactly once across both consumers: {exactly_once}")
    return 0 if exactly_once else 1


if __name__ == "__main__":
    raise SystemExit(main())

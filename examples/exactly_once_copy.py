"""Exactly-once copy: read a topic, transform each record, write the results to another topic, with every
input record's result committed exactly once, even if the copier crashes and is restarted.

    .venv/bin/python examples/exactly_once_copy.py                          # against a local mini_broker process
    .venv/bin/python examples/exactly_once_copy.py --bootstrap host:9092    # against a running cluster

The consume-transform-produce loop: a ``read_committed`` consumer in a group polls; a transactional producer
sends the transformed records and the consumer's next offsets (``send_offsets_to_transaction`` with the
consumer's ``group_metadata()``) in one transaction, then commits. The output records and the group's
progress become visible together or not at all. To show it, the copier here "crashes" once after sending a
transaction it never commits; the restarted copier (same ``transactional.id``) fences the old one, the
broker aborts the open transaction, and the copy carries on from the last committed offsets. While the
transaction is open, a read_committed reader stops before it and a read_uncommitted one reads it.

Run it again against the same broker: the topics are reused, the group resumes after what the last run
committed, and the output is checked from where it ended when the run started.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))  # `python examples/x.py` too: the checkout holds `examples`

from examples.local_broker import bootstrap_servers
from pykafka_client import AdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from pykafka_client.admin import NewTopic, OffsetSpec
from pykafka_client.errors import TopicExistsError

INPUT, OUTPUT, GROUP, TRANSACTIONAL_ID = "example-words", "example-words-upper", "example-copier", "example-copier-1"


def copier(servers: str, batch: int) -> tuple[KafkaConsumer[str, str], KafkaProducer]:
    consumer: KafkaConsumer[str, str] = KafkaConsumer({
        "bootstrap.servers": servers,
        "group.id": GROUP,
        "isolation.level": "read_committed",  # never read another transaction's uncommitted records
        "enable.auto.commit": False,  # offsets are committed by the producer's transaction
        "auto.offset.reset": "earliest",
        "key.deserializer": "str",
        "value.deserializer": "str",
        "max.poll.records": batch,  # records per poll, so per transaction here
    })
    producer = KafkaProducer({
        "bootstrap.servers": servers,
        "transactional.id": TRANSACTIONAL_ID,  # the same id after a restart fences the previous incarnation
        "key.serializer": "str",
        "value.serializer": "str",
    })
    producer.init_transactions(timeout=30)  # aborts whatever the previous incarnation left open
    consumer.subscribe([INPUT])
    return consumer, producer


def copy_some(consumer: KafkaConsumer[str, str], producer: KafkaProducer, commit: bool = True) -> list[str]:
    """One poll copied in one transaction; returns the values it wrote."""
    records = consumer.poll(1.0)
    if records.is_empty():
        return []
    producer.begin_transaction()
    written: list[str] = []
    for record in records:
        written.append(record.value.upper())
        producer.send(OUTPUT, written[-1], key=record.key, partition=record.partition)
    producer.send_offsets_to_transaction(records.next_offsets(), consumer.group_metadata(), timeout=30)
    if commit:
        producer.commit_transaction(timeout=30)
    else:
        producer.flush(timeout=30)  # the records are in the log, but the transaction is left open: a "crash"
    return written


def read_output(servers: str, isolation: str, start: dict[TopicPartition, int]) -> list[str]:
    """The output from ``start`` to its end as a reader with ``isolation`` sees it: the last stable offset
    (before any open transaction) for read_committed, the high watermark for read_uncommitted."""
    tps = list(start)
    reader: KafkaConsumer[str, str]
    with KafkaConsumer({"bootstrap.servers": servers, "isolation.level": isolation,
                        "value.deserializer": "str"}) as reader:
        reader.assign(tps)
        for tp, offset in start.items():
            reader.seek(tp, offset)
        end = reader.end_offsets(tps, timeout=10)
        values: list[str] = []
        while any(reader.position(tp) < end[tp] for tp in tps):
            values += [r.value for r in reader.poll(0.5)]
        return values


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", help="host:port of a Kafka broker (default: start a mini_broker)")
    ap.add_argument("--records", type=int, default=1000)
    args = ap.parse_args(argv)
    # Every input value starts with this run's id, so a run against a broker that holds earlier runs' records
    # checks its own (the group resumes after what earlier runs committed; the output is read from where it
    # ended when this run started).
    run = uuid.uuid4().hex[:8].upper()
    deadline = time.monotonic() + 120

    def ours(values: list[str]) -> list[str]:
        return [v for v in values if v.startswith(run)]

    with bootstrap_servers(args.bootstrap, {"group.initial.rebalance.delay.ms": 0}) as servers:
        with AdminClient({"bootstrap.servers": servers}) as admin:
            try:
                admin.create_topics([NewTopic(t, num_partitions=3, replication_factor=1) for t in (INPUT, OUTPUT)])
            except TopicExistsError:
                print(f"{INPUT} and {OUTPUT} exist (an earlier run): reusing them")
            ends = admin.list_offsets({TopicPartition(OUTPUT, p): OffsetSpec.latest() for p in range(3)})
        start = {tp: info.offset for tp, info in ends.items()}
        with KafkaProducer({"bootstrap.servers": servers, "key.serializer": "str", "value.serializer": "str"}) as p:
            for i in range(args.records):
                p.send(INPUT, f"{run}-word-{i}", key=f"k{i % 30}")

        batch = max(1, min(100, args.records // 4))  # leaves input for the crashed transaction and the restart
        consumer, producer = copier(servers, batch)
        first_committed: list[str] = []
        while not ours(first_committed) and time.monotonic() < deadline:  # nothing is polled while the group forms
            first_committed += copy_some(consumer, producer)
        copied = len(ours(first_committed))  # this run's records in committed transactions
        crashed: list[str] = []
        while not crashed and time.monotonic() < deadline:
            crashed = copy_some(consumer, producer, commit=False)
        print(f"first copier: committed {copied} records, then crashed with {len(crashed)} records in an open transaction")
        visible = len(read_output(servers, "read_committed", start))
        isolated = visible == len(first_committed)  # the open transaction's records are not visible to read_committed
        in_log = len(read_output(servers, "read_uncommitted", start))
        print(f"while it is open, read_committed readers see {visible} output records (they stop before the open "
              f"transaction); read_uncommitted readers see {in_log}")
        consumer.close()
        producer.close(timeout=0)  # no graceful abort: the transaction stays open until the restart fences it

        consumer, producer = copier(servers, batch)  # init_transactions fences the first copier and aborts its transaction
        with consumer, producer:
            while copied < args.records and time.monotonic() < deadline:
                copied += len(ours(copy_some(consumer, producer)))
        print(f"restarted copier: {copied} records copied in all")

        committed = read_output(servers, "read_committed", start)
        everything = read_output(servers, "read_uncommitted", start)
        expected = sorted(f"{run}-WORD-{i}" for i in range(args.records))
        exactly_once = sorted(ours(committed)) == expected
        aborted = len(everything) - len(committed)
        print(f"read_committed sees every input record exactly once: {exactly_once}")
        print(f"read_uncommitted also sees the {aborted} records of the aborted transaction")
    return 0 if exactly_once and crashed and isolated and aborted == len(crashed) else 1


if __name__ == "__main__":
    raise SystemExit(main())

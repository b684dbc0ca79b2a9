"""Exactly-once copy: read a topic, transform each record, write the results to another topic, with every
input record's result committed exactly once, even if the copier crashes and is restarted.

    .venv/bin/python -m examples.exactly_once_copy                          # against a local mini_broker process
    .venv/bin/python -m examples.exactly_once_copy --bootstrap host:9092    # against a running cluster

The consume-transform-produce loop: a ``read_committed`` consumer in a group polls; a transactional producer
sends the transformed records and the consumer's next offsets (``send_offsets_to_transaction`` with the
consumer's ``group_metadata()``) in one transaction, then commits. The output records and the group's
progress become visible together or not at all. To show it, the copier here "crashes" once after sending a
transaction it never commits; the restarted copier (same ``transactional.id``) fences the old one, the
broker aborts the open transaction, and the copy carries on from the last committed offsets.
"""

from __future__ import annotations

import argparse

from examples.local_broker import bootstrap_servers
from pykafka_client import AdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from pykafka_client.admin import NewTopic

INPUT, OUTPUT, GROUP, TRANSACTIONAL_ID = "example-words", "example-words-upper", "example-copier", "example-copier-1"


def copier(servers: str) -> tuple[KafkaConsumer[str, str], KafkaProducer]:
    consumer: KafkaConsumer[str, str] = KafkaConsumer({
        "bootstrap.servers": servers,
        "group.id": GROUP,
        "isolation.level": "read_committed",  # never read another transaction's uncommitted records
        "enable.auto.commit": False,  # offsets are committed by the producer's transaction
        "auto.offset.reset": "earliest",
        "key.deserializer": "str",
        "value.deserializer": "str",
        "max.poll.records": 100,
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


def copy_some(consumer: KafkaConsumer[str, str], producer: KafkaProducer, commit: bool = True) -> int:
    """One poll copied in one transaction; returns how many records it held."""
    records = consumer.poll(1.0)
    if records.is_empty():
        return 0
    producer.begin_transaction()
    for record in records:
        producer.send(OUTPUT, record.value.upper(), key=record.key, partition=record.partition)
    producer.send_offsets_to_transaction(records.next_offsets(), consumer.group_metadata(), timeout=30)
    if commit:
        producer.commit_transaction(timeout=30)
    else:
        producer.flush(timeout=30)  # the records are in the log, but the transaction is left open: a "crash"
    return records.count()


def read_output(servers: str, isolation: str, partitions: int) -> list[str]:
    tps = [TopicPartition(OUTPUT, p) for p in range(partitions)]
    with KafkaConsumer({"bootstrap.servers": servers, "isolation.level": isolation,
                        "value.deserializer": "str"}) as reader:
        reader.assign(tps)
        reader.seek_to_beginning(tps)
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

    with bootstrap_servers(args.bootstrap, {"group.initial.rebalance.delay.ms": 0}) as servers:
        with AdminClient({"bootstrap.servers": servers}) as admin:
            admin.create_topics([NewTopic(t, num_partitions=3, replication_factor=1) for t in (INPUT, OUTPUT)])
        with KafkaProducer({"bootstrap.servers": servers, "key.serializer": "str", "value.serializer": "str"}) as p:
            for i in range(args.records):
                p.send(INPUT, f"word-{i}", key=f"k{i % 30}")

        consumer, producer = copier(servers)
        copied = copy_some(consumer, producer)
        crashed = copy_some(consumer, producer, commit=False)
        print(f"first copier: committed {copied} records, then crashed with {crashed} records in an open transaction")
        consumer.close()
        producer.close(timeout=0)  # no graceful abort: the transaction stays open until the restart fences it

        consumer, producer = copier(servers)
        with consumer, producer:
            while copied < args.records:
                copied += copy_some(consumer, producer)
        print(f"restarted copier: {copied} records copied in all")

        committed = read_output(servers, "read_committed", 3)
        everything = read_output(servers, "read_uncommitted", 3)
        expected = sorted(f"WORD-{i}" for i in range(args.records))
        exactly_once = sorted(committed) == expected
        print(f"read_committed sees every input record exactly once: {exactly_once}")
        print(f"read_uncommitted also sees the {len(everything) - len(committed)} records of the aborted transaction")
    return 0 if exactly_once and len(everything) - len(committed) == crashed else 1


if __name__ == "__main__":
    raise SystemExit(main())

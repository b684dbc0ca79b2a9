"""A transactional message copier (consume-transform-produce), run as a subprocess by test_eos_copier.

Modelled on Kafka's ``TransactionalMessageCopier``: a read_committed consumer in a group reads the input
topic; every poll's records are copied to the same partition of the output topic inside one transaction,
together with the consumer's next offsets (``send_offsets_to_transaction`` with the consumer's
``group_metadata()``); then the transaction commits. Every ``--abort-every``-th transaction is aborted on
purpose and the consumer rewound to the transaction's first offsets, so the output holds aborted records
for the read_uncommitted check whether or not a SIGKILL happens to land inside a transaction.

    python -m tests.integration.transactions.copier --client ours --bootstrap HOST:PORT --expect 100000

Prints ``committed N`` (N = the sum of the committed input positions, i.e. input records copied so far)
after every commit, ``done`` and exits 0 once every input partition is copied. Any error ends the process
with status 2 after printing it: the harness restarts the copier, as a supervisor would, and exactly-once
must survive that. ``--client confluent`` runs the same loop with confluent-kafka (the harness self-check).

``COPIER_DEBUG=cgrp,eos`` passes librdkafka's ``debug`` to the confluent consumer (with ``EOS_DUMP=FILE`` and
``EOS_BROKER_LOG_LEVEL=INFO`` for test_eos_copier: a stall's whole story in one file).
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import signal
import sys
import time
import traceback
from typing import Any


def log(line: str) -> None:
    print(line, flush=True)


def run_ours(args: argparse.Namespace) -> None:
    from pykafka_client import KafkaConsumer, KafkaProducer

    producer = KafkaProducer({
        "bootstrap.servers": args.bootstrap,
        "transactional.id": args.transactional_id,
        "transaction.timeout.ms": args.transaction_timeout_ms,
        "linger.ms": 5,
    })
    producer.init_transactions(args.timeout)  # fences an earlier incarnation and aborts its open transaction
    consumer: KafkaConsumer[bytes, bytes] = KafkaConsumer({
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "group.instance.id": args.instance_id,  # a restarted copier takes over its partitions at once
        "isolation.level": "read_committed",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "max.poll.records": args.txn_size,
        "session.timeout.ms": 10000,
    })
    consumer.subscribe([args.input])
    transactions = 0
    while True:
        records = consumer.poll(0.5)
        if records.is_empty():
            if _done_ours(consumer, args):
                break
            continue
        producer.begin_transaction()
        for record in records:
            producer.send(args.output, record.value, key=record.key, partition=record.partition)
        first = {tp: batch[0].offset for tp, batch in records.items()}
        nxt = records.next_offsets()  # the offset after the last record of each partition
        producer.send_offsets_to_transaction(nxt, consumer.group_metadata(), args.timeout)
        transactions += 1
        if args.abort_every and transactions % args.abort_every == 0:
            producer.flush(args.timeout)  # the records reach the log (abort would drop unsent ones)
            producer.abort_transaction(args.timeout)
            for tp, offset in first.items():
                consumer.seek(tp, offset)
            log(f"aborted {records.count()}")
            continue
        producer.commit_transaction(args.timeout)
        log(f"committed {_copied_ours(consumer)}")
    log("done")
    consumer.close()
    producer.close(args.timeout)


def _copied_ours(consumer: Any) -> int:
    return sum(consumer.position(tp) for tp in consumer.assignment())


def _done_ours(consumer: Any, args: argparse.Namespace) -> bool:
    assignment = consumer.assignment()
    return bool(len(assignment) == args.partitions and _copied_ours(consumer) >= args.expect)


#: librdkafka 2.16 "re-bootstraps" when every broker is down (the single broker's restart): it decommissions the
#: broker handle, which then hangs terminating, and a send_offsets_to_transaction in flight never returns (its
#: timeout is not honoured either; seen against mini_broker with debug=eos,broker). Without re-bootstrap it
#: reconnects to the restarted broker like any other client.
CONFLUENT_COMMON = {"metadata.recovery.strategy": "none"}


def run_confluent(args: argparse.Namespace) -> None:
    import confluent_kafka as ck

    producer = ck.Producer({
        **CONFLUENT_COMMON,
        "bootstrap.servers": args.bootstrap,
        "transactional.id": args.transactional_id,
        "transaction.timeout.ms": args.transaction_timeout_ms,
        "linger.ms": 5,
    })
    producer.init_transactions(args.timeout)
    consumer = ck.Consumer({
        **CONFLUENT_COMMON,
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "group.instance.id": args.instance_id,
        "isolation.level": "read_committed",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 10000,
        **({"debug": os.environ["COPIER_DEBUG"]} if os.environ.get("COPIER_DEBUG") else {}),
    })
    consumer.subscribe([args.input])
    transactions = 0
    while True:
        messages = []
        for m in consumer.consume(args.txn_size, 0.5):
            error = m.error()
            if error is None:
                messages.append(m)
            elif error.code() == ck.KafkaError._FATAL or error.fatal():
                # Say FENCED_INSTANCE_ID after the session timed out during the broker's restart: this incarnation
                # is over (librdkafka only clears its assignment and idles), the supervisor starts the next one.
                # The event's fatal() is False; its code says it.
                raise RuntimeError(f"fatal consumer error: {error}")
        if not messages:
            if _done_confluent(consumer, args):
                break
            continue
        producer.begin_transaction()
        first: dict[tuple[str, int], int] = {}
        nxt: dict[tuple[str, int], int] = {}
        for m in messages:
            topic, partition, offset = m.topic(), m.partition(), m.offset()
            assert topic is not None and partition is not None and offset is not None  # a message, not an error
            key = (topic, partition)
            first.setdefault(key, offset)
            nxt[key] = offset + 1
            while True:
                try:
                    producer.produce(args.output, m.value(), m.key(), partition=partition)
                    break
                except BufferError:
                    producer.poll(0.05)
        offsets = [ck.TopicPartition(t, p, o) for (t, p), o in nxt.items()]
        producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), args.timeout)
        transactions += 1
        if args.abort_every and transactions % args.abort_every == 0:
            producer.flush(args.timeout)
            producer.abort_transaction(args.timeout)
            for (t, p), o in first.items():
                consumer.seek(ck.TopicPartition(t, p, o))
            log(f"aborted {len(messages)}")
            continue
        producer.commit_transaction(args.timeout)
        log(f"committed {_copied_confluent(consumer)}")
    log("done")
    consumer.close()


def _copied_confluent(consumer: Any) -> int:
    """The group's committed offsets (positions are unknown for partitions not consumed in this run)."""
    return sum(max(tp.offset, 0) for tp in consumer.committed(consumer.assignment(), 10))


def _done_confluent(consumer: Any, args: argparse.Namespace) -> bool:
    return bool(len(consumer.assignment()) == args.partitions and _copied_confluent(consumer) >= args.expect)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--client", choices=["ours", "confluent"], default="ours")
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--input", default="copier-input")
    ap.add_argument("--output", default="copier-output")
    ap.add_argument("--group", default="copier-group")
    ap.add_argument("--transactional-id", default="copier-1")
    ap.add_argument("--instance-id", default="copier-instance-1")
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--expect", type=int, required=True, help="input records in all partitions")
    ap.add_argument("--txn-size", type=int, default=500)
    ap.add_argument("--abort-every", type=int, default=0, help="abort every Nth transaction on purpose (0: never)")
    ap.add_argument("--transaction-timeout-ms", type=int, default=15000)
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds for each transactional call")
    args = ap.parse_args(argv)
    faulthandler.register(signal.SIGUSR1, file=sys.stdout, all_threads=True)  # the harness asks on a stall
    started = time.monotonic()
    try:
        (run_ours if args.client == "ours" else run_confluent)(args)
    except Exception:
        log(f"copier failed after {time.monotonic() - started:.1f} s:")
        traceback.print_exc(file=sys.stdout)
        sys.stdout.flush()
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

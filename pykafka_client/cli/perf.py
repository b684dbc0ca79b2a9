"""``pykafka perf produce | consume`` (Kafka's kafka-producer-perf-test.sh and kafka-consumer-perf-test.sh).

perf produce sends ``--num-records`` records of ``--record-size`` bytes, at most ``--throughput``
records/s (-1: as fast as it can), and prints Kafka's lines: one per reporting window (records sent,
records/s, MB/s, average and max latency) and a final one with the 50th/95th/99th/99.9th latency
percentiles. perf consume reads ``--messages`` records in a new group and prints Kafka's consumer line:
MB and records consumed per second, and the rebalance time; it fails (exit 1) when no record arrives for
``--timeout`` seconds."""

from __future__ import annotations

import argparse
import random
import string
import sys
import time
import uuid
from collections.abc import Collection
from datetime import datetime
from typing import Any

from pykafka_client.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    add_command,
    auto_created_partition_counts,
    client_config,
    error_text,
    non_negative_int,
    open_admin,
    positive_float,
)
from pykafka_client.cli.perf_stats import ProducerStats, Throttle
from pykafka_client.consumer.kafka_consumer import KafkaConsumer
from pykafka_client.consumer.rebalance_listener import ConsumerRebalanceListener
from pykafka_client.producer.kafka_producer import KafkaProducer
from pykafka_client.producer.record_metadata import RecordMetadata
from pykafka_client.structs import TopicPartition


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    perf = add_command(subparsers, "perf", "producer and consumer performance tests", [],
                       description=__doc__.split("\n\n", 1)[1] if __doc__ else None)
    sub = perf.add_subparsers(dest="action", metavar="ACTION", required=True)

    p = add_command(sub, "produce", "send records as fast as allowed and report throughput and latency", [common],
                    epilog="example:\n  pykafka perf produce --topic bench --num-records 100000 --record-size 100 "
                           "--throughput 5000 -X acks=1")
    p.add_argument("--topic", required=True, help="the topic to write to (created on use if the broker allows it)")
    p.add_argument("--num-records", type=non_negative_int, required=True, metavar="N", help="records to send")
    p.add_argument("--record-size", type=non_negative_int, default=100, metavar="BYTES", help="bytes per record (default 100)")
    p.add_argument("--throughput", type=float, default=-1, metavar="PER_SECOND", help="records per second at most (-1: no limit, the default)")
    p.add_argument("--reporting-interval", type=positive_float, default=5.0, metavar="SECONDS",
                   help="seconds between progress lines (default 5)")
    p.set_defaults(run=run_produce)

    p = add_command(sub, "consume", "read records in a new group and report throughput and rebalance time", [common],
                    epilog="example:\n  pykafka perf consume --topic bench --messages 100000")
    p.add_argument("--topic", required=True, help="the topic to read")
    p.add_argument("--messages", type=non_negative_int, required=True, metavar="N", help="records to read")
    p.add_argument("--group", help="the group to read in (default: a new perf-consumer-<random> group)")
    p.set_defaults(run=run_consume)


def _now_ms() -> float:
    return time.monotonic() * 1000.0


def run_produce(args: argparse.Namespace) -> int:
    if args.throughput == 0:
        raise CliError("--throughput must be positive, or -1 for no limit", EXIT_USAGE)
    auto_created_partition_counts(args, [args.topic])  # as Kafka's perf test: created on use if the broker allows
    payload = "".join(random.choices(string.ascii_uppercase, k=args.record_size)).encode()
    producer = KafkaProducer(
        client_config("producer", args, {"max.block.ms": int(args.timeout * 1000)})
    )
    start = time.monotonic()
    stats = ProducerStats(start * 1000.0, args.reporting_interval * 1000.0, lambda line: print(line, flush=True))
    throttle = Throttle(args.throughput, start)

    def callback(sent_ms: float) -> Any:
        def on_delivery(metadata: RecordMetadata | None, exception: BaseException | None) -> None:
            now = _now_ms()
            if exception is not None:
                stats.failed(error_text(exception))
            else:
                stats.record(int(now - sent_ms), len(payload), now)

        return on_delivery

    try:
        for i in range(args.num_records):
            throttle.wait_for(i)
            producer.send(args.topic, payload, on_delivery=callback(_now_ms()))
    finally:
        producer.close(args.timeout)
    print(stats.total_line(_now_ms()), flush=True)
    if stats.errors:
        print(f"pykafka perf produce: {stats.errors} records failed; the first: {stats.first_error}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


class _JoinTimer(ConsumerRebalanceListener):
    """When the first assignment arrived (Kafka's rebalance time: subscribe to first assignment)."""

    def __init__(self) -> None:
        self.assigned_at: float | None = None

    def on_partitions_revoked(self, revoked: Collection[TopicPartition]) -> None:
        pass

    def on_partitions_assigned(self, assigned: Collection[TopicPartition]) -> None:
        if self.assigned_at is None:
            self.assigned_at = time.monotonic()


def _date(t: float) -> str:
    d = datetime.fromtimestamp(t)
    return d.strftime("%Y-%m-%d %H:%M:%S:") + f"{d.microsecond // 1000:03d}"


def run_consume(args: argparse.Namespace) -> int:
    with open_admin(args) as admin:
        admin.describe_topics([args.topic], timeout=args.timeout)
    group = args.group or f"perf-consumer-{uuid.uuid4().hex[:8]}"
    consumer = KafkaConsumer(client_config("consumer", args, {
        "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False,
    }))
    listener = _JoinTimer()
    count = size = 0
    wall_start = time.time()
    start = time.monotonic()
    last_record = start
    try:
        consumer.subscribe([args.topic], listener)
        while count < args.messages:
            for record in consumer.poll(0.5):
                count += 1
                size += (len(record.value) if record.value else 0) + (len(record.key) if record.key else 0)
                last_record = time.monotonic()
            if count < args.messages and time.monotonic() - last_record > args.timeout:
                raise CliError(f"exiting before consuming the expected number of messages: no record for "
                               f"{args.timeout:g} s after {count} of {args.messages} (raise --timeout?)", EXIT_FAILED)
    finally:
        consumer.close()
    end = time.monotonic()
    elapsed = max(end - start, 1e-9)
    joined = (listener.assigned_at or start) - start
    fetch = max(elapsed - joined, 1e-9)
    mb = size / (1024 * 1024)
    print("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, "
          "fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
    print(f"{_date(wall_start)}, {_date(wall_start + elapsed)}, {mb:.4f}, {mb / elapsed:.4f}, {count}, "
          f"{count / elapsed:.4f}, {int(joined * 1000)}, {int(fetch * 1000)}, {mb / fetch:.4f}, {count / fetch:.4f}")
    return EXIT_OK

"""``pykafka offsets TOPIC`` (Kafka's kafka-get-offsets.sh): the earliest, latest, max-timestamp or
for-a-time offset of each partition."""

from __future__ import annotations

import argparse
from typing import Any

from pykafka_client.admin.types import IsolationLevel, OffsetSpec
from pykafka_client.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    add_command,
    non_negative_int,
    open_admin,
    output_flag,
    topic_partitions,
)
from pykafka_client.cli.groups import DATETIME_FORMAT, parse_datetime_ms
from pykafka_client.cli.output import emit_rows
from pykafka_client.structs import TopicPartition


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    p = add_command(subparsers, "offsets", "earliest, latest or for-a-time offsets of a topic's partitions", [common],
                    epilog="examples:\n  pykafka offsets orders\n  pykafka offsets orders --time earliest --partition 0\n"
                           "  pykafka offsets orders --time 2024-05-01T00:00:00Z")
    p.add_argument("topic", metavar="TOPIC", help="the topic whose partitions to look up")
    p.add_argument("--partition", type=non_negative_int, action="append", metavar="N", help="only these partitions (repeatable)")
    p.add_argument("--time", default="latest", metavar="WHEN",
                   help="earliest, latest (default), max-timestamp, milliseconds since the epoch, or an ISO date-time")
    p.add_argument("--isolation-level", choices=("read_uncommitted", "read_committed"), default="read_uncommitted",
                   help="read_committed: latest is the last stable offset (default read_uncommitted)")
    output_flag(p)
    p.set_defaults(run=run)


def offset_spec(text: str) -> OffsetSpec:
    named = {"earliest": OffsetSpec.earliest, "latest": OffsetSpec.latest, "max-timestamp": OffsetSpec.max_timestamp}
    if text in named:
        return named[text]()
    if text.lstrip("-").isdigit():
        ms = int(text)
        if ms == OffsetSpec.LATEST_TIMESTAMP or ms == OffsetSpec.EARLIEST_TIMESTAMP or ms == OffsetSpec.MAX_TIMESTAMP:
            return OffsetSpec(ms)  # Kafka's -1 / -2 / -3
        if ms < 0:
            raise CliError(f"--time {text}: a time must not be negative", EXIT_USAGE)
        return OffsetSpec.for_timestamp(ms)
    expected = f"earliest, latest, max-timestamp, milliseconds since the epoch or a date-time {DATETIME_FORMAT}"
    return OffsetSpec.for_timestamp(parse_datetime_ms(text, "--time", expected))


def run(args: argparse.Namespace) -> int:
    spec = offset_spec(args.time)
    with open_admin(args) as admin:
        parts = topic_partitions(admin, args.topic, args.partition, args.timeout)
        found = admin.list_offsets(
            {TopicPartition(args.topic, p): spec for p in parts}, timeout=args.timeout,
            isolation_level=IsolationLevel[args.isolation_level.upper()],
        )
    rows = [(args.topic, p, found[TopicPartition(args.topic, p)].offset, found[TopicPartition(args.topic, p)].timestamp) for p in parts]
    emit_rows(args.output, ("TOPIC", "PARTITION", "OFFSET", "TIMESTAMP"), rows)
    return EXIT_OK

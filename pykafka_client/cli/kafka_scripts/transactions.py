"""``kafka-transactions.sh``: list, describe, describe-producers, find-hanging and abort, with Kafka's flags and
tables, on the ``pykafka transactions`` functions."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

from pykafka_client.cli.common import open_admin
from pykafka_client.cli.kafka_scripts.base import ToolParser, cli_args, connection_flags, failure_text, run_tool
from pykafka_client.cli.transactions import (
    DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN,
    OPEN_STATES,
    abort_spec,
    describe_partition_producers,
    hanging_transactions,
)
from pykafka_client.structs import TopicPartition


def build_parser() -> ToolParser:
    p = ToolParser("kafka-transactions.sh", "This tool is used to analyze the transactional state of producers in "
                                            "the cluster. It can be used to detect and recover from hanging "
                                            "transactions.")
    connection_flags(p)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=argparse.ArgumentParser)
    sub.add_parser("list", help="list transactions")
    d = sub.add_parser("describe", help="describe the state of an active transactional-id")
    d.add_argument("--transactional-id", required=True, metavar="ID", help="transactional id")
    dp = sub.add_parser("describe-producers", help="describe the states of active producers for a topic partition")
    dp.add_argument("--topic", required=True, help="topic name")
    dp.add_argument("--partition", required=True, type=int, help="partition number")
    dp.add_argument("--broker-id", type=int, help="accepted (the partition's leader answers)")
    a = sub.add_parser("abort", help="abort a hanging transaction (requires administrative privileges)")
    a.add_argument("--topic", required=True, help="topic name")
    a.add_argument("--partition", required=True, type=int, help="partition number")
    a.add_argument("--start-offset", type=int, help="start offset of the transaction to abort")
    a.add_argument("--producer-id", type=int, help="producer id of the transaction to abort")
    a.add_argument("--producer-epoch", type=int, help="producer epoch of the transaction to abort")
    a.add_argument("--coordinator-epoch", type=int, help="coordinator epoch of the transaction to abort")
    f = sub.add_parser("find-hanging", help="find hanging transactions of a topic's partitions")
    f.add_argument("--topic", required=True, help="topic name")
    f.add_argument("--partition", type=int, help="partition number (default: all)")
    f.add_argument("--max-transaction-timeout", type=int, default=DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN,
                   help=f"transaction.max.timeout.ms of the brokers, in minutes (default {DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN})")
    for child in (*sub.choices.values(),):
        child.error = p.error  # type: ignore[method-assign]
        # also after the command (Kafka takes them before it); not given there, they keep the value given before
        child.add_argument("--bootstrap-server", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        child.add_argument("--command-config", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return p


def pretty_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Kafka's tool table: each value left-aligned in its column's width and followed by a tab."""
    cells = [[("None" if v is None else str(v)) for v in row] for row in [headers, *rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for r in cells:
        print("".join(v.ljust(w) + "\t" for v, w in zip(r, widths, strict=True)))


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    opts = parser.parse_args(argv)
    parser.required(opts, "bootstrap_server")
    if opts.command is None:
        parser.error("too few arguments: give a command (list, describe, describe-producers, abort, find-hanging)")
    args = cli_args(opts.bootstrap_server, opts.command_config)

    def on_error(e: BaseException) -> None:
        print(f"ERROR {failure_text(e, args)} (kafka-transactions.sh {opts.command})", file=sys.stderr)

    def body() -> int:
        with open_admin(args) as admin:
            if opts.command == "list":
                listed = admin.list_transactions(timeout=args.timeout)
                ids = [t.transactional_id for t in listed]
                described = admin.describe_transactions(ids, timeout=args.timeout) if ids else {}
                pretty_table(("TransactionalId", "Coordinator", "ProducerId", "TransactionState"),
                             [(t.transactional_id, getattr(described.get(t.transactional_id), "coordinator_id", None),
                               t.producer_id, t.state.value) for t in listed])
            elif opts.command == "describe":
                d = admin.describe_transactions([opts.transactional_id], timeout=args.timeout)[opts.transactional_id]
                start = d.transaction_start_time_ms if d.state in OPEN_STATES else None
                duration = None if start is None else max(0, int(time.time() * 1000) - start)
                pretty_table(("CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                              "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                              "TopicPartitions"),
                             [(d.coordinator_id, opts.transactional_id, d.producer_id, d.producer_epoch, d.state.value,
                               d.transaction_timeout_ms, start, duration,
                               ",".join(f"{t}-{p}" for t, p in sorted(d.topic_partitions)))])
            elif opts.command == "describe-producers":
                found = describe_partition_producers(admin, opts.topic, [opts.partition], args.timeout)
                pretty_table(("ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
                              "CurrentTransactionStartOffset"),
                             [(s.producer_id, s.producer_epoch, -1 if s.coordinator_epoch is None else s.coordinator_epoch,
                               s.last_sequence, s.last_timestamp, s.current_transaction_start_offset)
                              for states in found.values() for s in states])
            elif opts.command == "find-hanging":
                _find_hanging(admin, opts, args)
            else:
                tp = TopicPartition(opts.topic, opts.partition)
                states = None
                if opts.start_offset is not None:
                    states = admin.describe_producers([tp], timeout=args.timeout).get(tp, [])
                admin.abort_transaction(abort_spec(tp, opts.start_offset, opts.producer_id, opts.producer_epoch,
                                                   opts.coordinator_epoch, states), timeout=args.timeout)
        return 0

    return run_tool(body, on_error)


def _find_hanging(admin: Any, opts: argparse.Namespace, args: argparse.Namespace) -> None:
    partitions = None if opts.partition is None else [opts.partition]
    found = hanging_transactions(admin, opts.topic, partitions, opts.max_transaction_timeout, args.timeout)
    now_ms = int(time.time() * 1000)
    rows = [(tp.topic, tp.partition, s.producer_id, s.producer_epoch,
             -1 if s.coordinator_epoch is None else s.coordinator_epoch, s.current_transaction_start_offset,
             s.last_timestamp, (now_ms - s.last_timestamp) // 60_000)
            for tp in sorted(found) for s in found[tp]]
    if not rows:
        print("No hanging transactions found")
        return
    pretty_table(("Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
                  "LastTimestamp", "Duration(min)"), rows)

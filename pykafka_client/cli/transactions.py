"""``pykafka transactions list | describe | find-hanging | abort`` and ``pykafka producers describe`` (Kafka's
kafka-transactions.sh): the transactional ids the coordinators know, one id's open transaction, the active
producers of a topic's partitions, the partitions whose transaction no coordinator is finishing, and the abort
of such a hanging transaction (an ABORT marker written to the partition's leader, ``AdminClient.abort_transaction``)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from pykafka_client.admin.admin_client import AdminClient
from pykafka_client.admin.types import AbortTransactionSpec, ProducerState, TransactionDescription, TransactionState
from pykafka_client.cli.common import (
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    add_command,
    non_negative_int,
    open_admin,
    output_flag,
    topic_partitions,
)
from pykafka_client.cli.output import emit_rows
from pykafka_client.structs import TopicPartition

#: Kafka's default for find-hanging: a transaction open longer than the broker's largest allowed timeout
#: (transaction.max.timeout.ms, 15 minutes) is one no producer can still be finishing.
DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN = 15

#: The states in which the coordinator still has to write the transaction's markers.
OPEN_STATES = (TransactionState.ONGOING, TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT)

STATE_NAMES = [s.value for s in TransactionState if s is not TransactionState.UNKNOWN]

PRODUCER_COLUMNS = ("TOPIC", "PARTITION", "PRODUCER-ID", "PRODUCER-EPOCH", "COORDINATOR-EPOCH", "LAST-SEQUENCE",
                    "LAST-TIMESTAMP", "CURRENT-TRANSACTION-START-OFFSET")


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    txns = add_command(subparsers, "transactions", "list, describe, find hanging and abort transactions", [],
                       description="The transactional ids the coordinators know (list), one id's transaction "
                                   "(describe),\nopen transactions no coordinator is finishing (find-hanging) and the "
                                   "abort of one of them\n(abort), as Kafka's kafka-transactions.sh.")
    sub = txns.add_subparsers(dest="action", metavar="ACTION", required=True)

    p = add_command(sub, "list", "transactional ids with their producer id and state, from every broker", [common],
                    epilog="examples:\n  pykafka transactions list\n  pykafka transactions list --state Ongoing --output json")
    p.add_argument("--state", action="append", choices=STATE_NAMES, metavar="STATE",
                   help=f"only ids in this state (repeatable): {', '.join(STATE_NAMES)}")
    p.add_argument("--producer-id", action="append", type=non_negative_int, metavar="ID",
                   help="only the ids of this producer id (repeatable)")
    p.add_argument("--duration-ms", type=non_negative_int, metavar="MS",
                   help="only transactions started more than MS ago (pair it with --state Ongoing)")
    output_flag(p)
    p.set_defaults(run=run_list)

    p = add_command(sub, "describe", "state, producer, timeout, start time and partitions of a transactional id",
                    [common], epilog="example:\n  pykafka transactions describe --transactional-id payments-1")
    p.add_argument("--transactional-id", action="append", required=True, metavar="ID",
                   help="the transactional id to describe (repeatable)")
    output_flag(p)
    p.set_defaults(run=run_describe)

    p = add_command(
        sub, "find-hanging", "partitions with a transaction open longer than any producer may keep one", [common],
        description="Open transactions on a topic's partitions that no coordinator is finishing (Kafka's find-hanging):\n"
                    "the producer's last write is older than --max-transaction-timeout, and no transactional id of\n"
                    "that producer has an open transaction over the partition. Such a transaction holds the\n"
                    "partition's last stable offset back, so read_committed consumers stop there.",
        epilog="example:\n  pykafka transactions find-hanging --topic payments --max-transaction-timeout 15",
    )
    _partitions_flags(p)
    p.add_argument("--max-transaction-timeout", type=non_negative_int, default=DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN,
                   metavar="MINUTES",
                   help="the brokers' transaction.max.timeout.ms in minutes: older open transactions are "
                        f"candidates (default {DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN})")
    output_flag(p)
    p.set_defaults(run=run_find_hanging)

    p = add_command(
        sub, "abort", "abort a partition's open transaction (a hanging one) by writing an ABORT marker", [common],
        description="Write an ABORT marker for one producer's open transaction on a partition to its leader, as\n"
                    "the transaction coordinator would (Kafka's kafka-transactions.sh abort). Use it for a hanging\n"
                    "transaction (see find-hanging): its records become aborted and read_committed consumers move\n"
                    "past it. Name the transaction by the offset it starts at (--start-offset, the\n"
                    "CURRENT-TRANSACTION-START-OFFSET of `pykafka producers describe`), or by its producer\n"
                    "(--producer-id, --producer-epoch and --coordinator-epoch). The leader refuses a stale epoch.",
        epilog="examples:\n  pykafka transactions abort --topic payments --partition 0 --start-offset 1042\n"
               "  pykafka transactions abort --topic payments --partition 0 --producer-id 7 --producer-epoch 0 "
               "--coordinator-epoch 0",
    )
    p.add_argument("--topic", required=True, metavar="TOPIC", help="the topic of the partition")
    p.add_argument("--partition", type=non_negative_int, required=True, metavar="N", help="the partition")
    p.add_argument("--start-offset", type=non_negative_int, metavar="OFFSET",
                   help="the offset the open transaction starts at (finds its producer with describe producers)")
    p.add_argument("--producer-id", type=non_negative_int, metavar="ID", help="the producer id of the transaction")
    p.add_argument("--producer-epoch", type=non_negative_int, metavar="EPOCH", help="its producer epoch")
    p.add_argument("--coordinator-epoch", type=non_negative_int, metavar="EPOCH",
                   help="the coordinator epoch to write the marker with")
    p.set_defaults(run=run_abort)

    producers = add_command(subparsers, "producers", "describe the active producers of a topic's partitions", [],
                            description="The idempotent and transactional producers each partition's leader "
                                        "remembers,\nwith the start offset of their open transaction.")
    psub = producers.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = add_command(psub, "describe", "producer id, epoch, last sequence and timestamp, open transaction offset",
                    [common], epilog="examples:\n  pykafka producers describe --topic payments\n"
                                     "  pykafka producers describe --topic payments --partition 0 --output json")
    _partitions_flags(p)
    output_flag(p)
    p.set_defaults(run=run_producers)


def _partitions_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--topic", required=True, metavar="TOPIC", help="the topic whose partitions to look at")
    p.add_argument("--partition", type=non_negative_int, action="append", metavar="N",
                   help="only these partitions (repeatable; default all)")


def run_list(args: argparse.Namespace) -> int:
    states = [TransactionState(s) for s in args.state or ()]
    duration = -1 if args.duration_ms is None else args.duration_ms
    with open_admin(args) as admin:
        listed = admin.list_transactions(states, args.producer_id or (), duration, timeout=args.timeout)
    rows = [(t.transactional_id, t.producer_id, t.state.value) for t in listed]
    emit_rows(args.output, ("TRANSACTIONAL-ID", "PRODUCER-ID", "STATE"), rows)
    return EXIT_OK


def run_describe(args: argparse.Namespace) -> int:
    ids = list(dict.fromkeys(args.transactional_id))
    with open_admin(args) as admin:
        found = admin.describe_transactions(ids, timeout=args.timeout)
    now_ms = int(time.time() * 1000)
    columns = ("TRANSACTIONAL-ID", "COORDINATOR", "PRODUCER-ID", "PRODUCER-EPOCH", "STATE", "TIMEOUT-MS",
               "START-TIME-MS", "DURATION-MS", "PARTITIONS")
    rows = [_describe_row(tid, found[tid], now_ms) for tid in ids]
    if args.output == "json":
        for row in rows:
            row[-1] = [{"topic": t, "partition": p} for t, p in row[-1]]
    else:
        for row in rows:
            row[-1] = ",".join(f"{t}-{p}" for t, p in row[-1]) or None
    emit_rows(args.output, columns, rows)
    return EXIT_OK


def _describe_row(tid: str, d: TransactionDescription, now_ms: int) -> list[Any]:
    """DURATION-MS only while the transaction is open: a finished one keeps its start time on the coordinator."""
    start = d.transaction_start_time_ms
    duration = None if start is None or d.state not in OPEN_STATES else max(0, now_ms - start)
    return [tid, d.coordinator_id, d.producer_id, d.producer_epoch, d.state.value, d.transaction_timeout_ms, start,
            duration, sorted(d.topic_partitions)]


def _producer_rows(found: dict[TopicPartition, list[ProducerState]]) -> list[tuple[Any, ...]]:
    return [(tp.topic, tp.partition, s.producer_id, s.producer_epoch, s.coordinator_epoch, s.last_sequence,
             s.last_timestamp, s.current_transaction_start_offset)
            for tp in sorted(found) for s in sorted(found[tp], key=lambda s: s.producer_id)]


def describe_partition_producers(admin: AdminClient, topic: str, partitions: list[int] | None,
                                 timeout: float) -> dict[TopicPartition, list[ProducerState]]:
    """The active producers of ``topic``'s ``partitions`` (None: all)."""
    parts = topic_partitions(admin, topic, partitions, timeout)
    return admin.describe_producers([TopicPartition(topic, p) for p in parts], timeout=timeout)


def run_producers(args: argparse.Namespace) -> int:
    with open_admin(args) as admin:
        found = describe_partition_producers(admin, args.topic, args.partition, args.timeout)
    emit_rows(args.output, PRODUCER_COLUMNS, _producer_rows(found))
    return EXIT_OK


def run_find_hanging(args: argparse.Namespace) -> int:
    with open_admin(args) as admin:
        found = hanging_transactions(admin, args.topic, args.partition, args.max_transaction_timeout, args.timeout)
    emit_rows(args.output, PRODUCER_COLUMNS, _producer_rows(found))
    return EXIT_OK


def hanging_transactions(admin: AdminClient, topic: str, partitions: list[int] | None, max_minutes: int,
                         timeout: float) -> dict[TopicPartition, list[ProducerState]]:
    """The producers of ``topic``'s ``partitions`` (None: all) with a transaction open longer than
    ``max_minutes`` that no coordinator is finishing (:func:`hanging`)."""
    now_ms = int(time.time() * 1000)
    ids_of: dict[int, list[str]] = {}
    described: dict[str, TransactionDescription] = {}
    found = open_too_long(describe_partition_producers(admin, topic, partitions, timeout), now_ms, max_minutes * 60_000)
    pids = sorted({s.producer_id for states in found.values() for s in states})
    if pids:
        for t in admin.list_transactions(producer_ids=pids, timeout=timeout):
            ids_of.setdefault(t.producer_id, []).append(t.transactional_id)
        wanted = sorted({tid for ids in ids_of.values() for tid in ids})
        if wanted:
            described = admin.describe_transactions(wanted, timeout=timeout)
    return hanging(found, ids_of, described)


def open_too_long(found: dict[TopicPartition, list[ProducerState]], now_ms: int,
                  max_ms: int) -> dict[TopicPartition, list[ProducerState]]:
    """The candidates of find-hanging: producers with an open transaction whose last write is ``max_ms`` or
    more before ``now_ms``."""
    return {tp: [s for s in states if s.current_transaction_start_offset is not None
                 and now_ms - s.last_timestamp >= max_ms]
            for tp, states in found.items()}


def hanging(candidates: dict[TopicPartition, list[ProducerState]], ids_of: dict[int, list[str]],
            described: dict[str, TransactionDescription]) -> dict[TopicPartition, list[ProducerState]]:
    """The candidates no coordinator is finishing: none of the producer's transactional ids (``ids_of``, from
    list_transactions) is, as ``described``, an open transaction of that producer id over that partition; so
    no coordinator will ever write the partition's marker."""

    def being_finished(tp: TopicPartition, s: ProducerState) -> bool:
        return any(
            d is not None and d.producer_id == s.producer_id and d.state in OPEN_STATES
            and (tp.topic, tp.partition) in d.topic_partitions
            for d in (described.get(tid) for tid in ids_of.get(s.producer_id, ())))

    return {tp: [s for s in states if not being_finished(tp, s)] for tp, states in candidates.items()}


def abort_spec(tp: TopicPartition, start_offset: int | None, producer_id: int | None, producer_epoch: int | None,
               coordinator_epoch: int | None, states: list[ProducerState] | None) -> AbortTransactionSpec:
    """The transaction ``transactions abort`` names: by ``start_offset`` (the producer of ``states`` whose open
    transaction starts there; an unknown coordinator epoch is 0, as in Kafka) or by the three producer flags."""
    by_producer = (producer_id, producer_epoch, coordinator_epoch)
    if start_offset is not None:
        if any(v is not None for v in by_producer):
            raise CliError("give either --start-offset or --producer-id/--producer-epoch/--coordinator-epoch, "
                           "not both", EXIT_USAGE)
        match = [s for s in states or () if s.current_transaction_start_offset == start_offset]
        if not match:
            raise CliError(f"no open transaction starts at offset {start_offset} of {tp.topic}-{tp.partition}; "
                           f"see `pykafka producers describe --topic {tp.topic} --partition {tp.partition}`",
                           EXIT_NOT_FOUND)
        s = match[0]
        return AbortTransactionSpec(tp, s.producer_id, s.producer_epoch, s.coordinator_epoch or 0)
    if producer_id is None or producer_epoch is None or coordinator_epoch is None:
        raise CliError("name the transaction: --start-offset, or all of --producer-id, --producer-epoch and "
                       "--coordinator-epoch", EXIT_USAGE)
    return AbortTransactionSpec(tp, producer_id, producer_epoch, coordinator_epoch)


def run_abort(args: argparse.Namespace) -> int:
    tp = TopicPartition(args.topic, args.partition)
    with open_admin(args) as admin:
        states = None
        if args.start_offset is not None:
            states = admin.describe_producers([tp], timeout=args.timeout).get(tp, [])
        spec = abort_spec(tp, args.start_offset, args.producer_id, args.producer_epoch, args.coordinator_epoch,
                          states)
        admin.abort_transaction(spec, timeout=args.timeout)
    print(f"aborted the transaction of producer {spec.producer_id} (epoch {spec.producer_epoch}) on "
          f"{tp.topic}-{tp.partition}")
    return EXIT_OK

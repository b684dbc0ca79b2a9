"""``pykafka leaders elect`` (Kafka's kafka-leader-election.sh): move partition leadership back to the preferred
replica, or give a leaderless partition any alive replica (unclean)."""

from __future__ import annotations

import argparse
from typing import Any

from pykafka_client.admin.types import ElectionType
from pykafka_client.cli.common import EXIT_OK, CliError, add_command, open_admin, output_flag
from pykafka_client.cli.output import emit_rows
from pykafka_client.errors import ElectionNotNeededError
from pykafka_client.structs import TopicPartition


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    leaders = add_command(subparsers, "leaders", "elect partition leaders", [])
    sub = leaders.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = add_command(
        sub, "elect", "elect leaders now (preferred: the first replica; unclean: any alive replica)", [common],
        epilog="examples:\n  pykafka leaders elect orders:0 orders:1\n  pykafka leaders elect --type unclean orders:3\n"
               "  pykafka leaders elect --all-partitions",
    )
    p.add_argument("partitions", nargs="*", metavar="TOPIC:PARTITION", help="the partitions (TOPIC alone: all of it)")
    p.add_argument("--type", choices=["preferred", "unclean"], default="preferred", help="the kind of election")
    p.add_argument("--all-partitions", action="store_true", help="every partition of the cluster")
    output_flag(p)
    p.set_defaults(run=run_elect)


def _partitions(args: argparse.Namespace, describe: Any) -> list[TopicPartition] | None:
    if args.all_partitions:
        if args.partitions:
            raise CliError("give TOPIC:PARTITION arguments or --all-partitions, not both")
        return None
    if not args.partitions:
        raise CliError("name the partitions (TOPIC:PARTITION or TOPIC) or give --all-partitions")
    out: list[TopicPartition] = []
    for spec in args.partitions:
        topic, sep, p = spec.rpartition(":")
        if sep and p.isdigit():
            out.append(TopicPartition(topic, int(p)))
        else:
            out.extend(TopicPartition(spec, i) for i in range(len(describe(spec).partitions)))
    return out


def run_elect(args: argparse.Namespace) -> int:
    with open_admin(args) as admin:
        wanted = _partitions(args, lambda t: admin.describe_topics([t], timeout=args.timeout)[t])
        kind = ElectionType.UNCLEAN if args.type == "unclean" else ElectionType.PREFERRED
        results = admin.elect_leaders(kind, wanted, timeout=args.timeout)
    rows = []
    failed = False
    for tp, err in sorted(results.items()):
        if err is None:
            outcome = "elected"
        elif isinstance(err, ElectionNotNeededError):
            outcome = "not needed"
        else:
            outcome, failed = f"failed: {err}", True
        rows.append([tp.topic, tp.partition, outcome])
    emit_rows(args.output, ["topic", "partition", "result"], rows)
    if failed:
        raise CliError("some elections failed (see the result column)")
    return EXIT_OK

"""``pykafka topics list | describe | create | delete | alter | reassign`` (Kafka's kafka-topics.sh, and
kafka-reassign-partitions.sh for ``reassign``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from pykafka_client.admin.admin_client import AdminClient
from pykafka_client.admin.types import (
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    NewPartitions,
    NewTopic,
)
from pykafka_client.cli.common import EXIT_OK, CliError, add_command, key_value, open_admin, output_flag
from pykafka_client.cli.output import emit, emit_rows, info, kv, table
from pykafka_client.errors import TopicExistsError
from pykafka_client.structs import TopicPartition


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    topics = add_command(subparsers, "topics", "list, describe, create, delete and grow topics", [])
    sub = topics.add_subparsers(dest="action", metavar="ACTION", required=True)

    p = add_command(sub, "list", "list topic names", [common], epilog="example:\n  pykafka topics list --output json")
    output_flag(p)
    p.set_defaults(run=run_list)

    p = add_command(
        sub, "describe", "partitions, leader, replicas, ISR and config overrides of topics", [common],
        epilog="example:\n  pykafka topics describe orders",
    )
    p.add_argument("topics", nargs="*", metavar="TOPIC", help="topics to describe (default: all)")
    output_flag(p)
    p.set_defaults(run=run_describe)

    p = add_command(
        sub, "create", "create a topic", [common],
        epilog="example:\n  pykafka topics create orders --partitions 3 --config retention.ms=86400000",
    )
    p.add_argument("topic", metavar="TOPIC", help="the topic to create")
    p.add_argument("--partitions", type=int, default=-1, metavar="N", help="partition count (default: the broker's num.partitions)")
    p.add_argument("--replication-factor", type=int, default=-1, metavar="N", help="replicas per partition (default: the broker's)")
    p.add_argument("--config", type=key_value, action="append", default=[], metavar="KEY=VALUE",
                   help="a topic config override (repeatable)")
    p.add_argument("--if-not-exists", action="store_true", help="succeed when the topic already exists")
    p.set_defaults(run=run_create)

    p = add_command(sub, "delete", "delete topics", [common], epilog="example:\n  pykafka topics delete orders")
    p.add_argument("topics", nargs="+", metavar="TOPIC", help="topics to delete")
    p.set_defaults(run=run_delete)

    p = add_command(
        sub, "alter", "add partitions to a topic", [common], epilog="example:\n  pykafka topics alter orders --partitions 6"
    )
    p.add_argument("topic", metavar="TOPIC", help="the topic to grow")
    p.add_argument("--partitions", type=int, required=True, metavar="N", help="the new (larger) partition count")
    p.set_defaults(run=run_alter)

    p = add_command(
        sub, "reassign", "move a partition to other brokers, cancel a move, or list the moves in progress", [common],
        epilog="examples:\n  pykafka topics reassign orders --partition 0 --replicas 2,1\n"
               "  pykafka topics reassign orders --partition 0 --cancel\n  pykafka topics reassign --list",
    )
    p.add_argument("topic", nargs="?", metavar="TOPIC", help="the topic whose partition moves")
    p.add_argument("--partition", type=int, action="append", default=[], metavar="N",
                   help="the partition to move (repeatable; default: every partition of TOPIC)")
    p.add_argument("--replicas", metavar="IDS", help="the new replicas, comma-separated broker ids, preferred first")
    p.add_argument("--cancel", action="store_true", help="cancel the partition's move in progress")
    p.add_argument("--list", action="store_true", help="list the moves in progress (of TOPIC, or all)")
    output_flag(p)
    p.set_defaults(run=run_reassign)


def run_list(args: argparse.Namespace) -> int:
    with open_admin(args) as admin:
        names = sorted(admin.list_topics(timeout=args.timeout))
    if args.output == "json":
        emit("json", names, [], [])
    else:
        for name in names:
            print(name)
    return EXIT_OK


def topic_details(admin: AdminClient, names: list[str], timeout: float,
                  shown: Callable[[ConfigEntry], bool]) -> list[dict[str, Any]]:
    """Each topic's id, partition count, replication factor, the configs ``shown`` keeps, and per partition
    its leader, replicas and ISR (ids); an unknown topic raises UnknownTopicOrPartitionError."""
    described = admin.describe_topics(names, timeout=timeout)
    resources = [ConfigResource(ConfigResourceType.TOPIC, n) for n in names]
    configs = admin.describe_configs(resources, timeout=timeout) if resources else {}
    out: list[dict[str, Any]] = []
    for name in names:
        d = described[name]
        entries = configs.get(ConfigResource(ConfigResourceType.TOPIC, name), {})
        out.append({
            "name": name,
            "topic_id": str(d.topic_id) if d.topic_id else None,
            "partition_count": len(d.partitions),
            "replication_factor": len(d.partitions[0].replicas) if d.partitions else 0,
            "configs": {e.name: e.value for e in entries.values() if shown(e)},
            "partitions": [
                {
                    "partition": p.partition,
                    "leader": p.leader.id if p.leader else None,
                    "replicas": [r.id for r in p.replicas],
                    "isr": [r.id for r in p.isr],
                }
                for p in d.partitions
            ],
        })
    return out


def run_describe(args: argparse.Namespace) -> int:
    with open_admin(args) as admin:
        names = args.topics or sorted(admin.list_topics(timeout=args.timeout))
        out = topic_details(admin, names, args.timeout, lambda e: e.source is ConfigSource.DYNAMIC_TOPIC_CONFIG)
    if args.output == "json":
        emit("json", out, [], [])
        return EXIT_OK
    for i, t in enumerate(out):
        if i:
            print()
        print(f"Topic: {t['name']}  TopicId: {t['topic_id'] or '-'}  PartitionCount: {t['partition_count']}  "
              f"ReplicationFactor: {t['replication_factor']}  Configs: {kv(t['configs']) or '-'}")
        rows = [
            (p["partition"], p["leader"], ",".join(map(str, p["replicas"])), ",".join(map(str, p["isr"])))
            for p in t["partitions"]
        ]
        print(table(("PARTITION", "LEADER", "REPLICAS", "ISR"), rows))
    return EXIT_OK


def run_create(args: argparse.Namespace) -> int:
    topic = NewTopic(args.topic, args.partitions, args.replication_factor, configs=dict(args.config))
    with open_admin(args) as admin:
        try:
            result = admin.create_topics([topic], timeout=args.timeout)[args.topic]
        except TopicExistsError as e:
            if not args.if_not_exists:
                raise CliError(f"topic {args.topic!r} already exists (add --if-not-exists to accept that)") from e
            info(f"Topic {args.topic} already exists.")
            return EXIT_OK
    info(f"Created topic {args.topic} ({result.num_partitions} partitions, replication factor {result.replication_factor}).")
    return EXIT_OK


def run_delete(args: argparse.Namespace) -> int:
    with open_admin(args) as admin:
        admin.delete_topics(args.topics, timeout=args.timeout)
    info(f"Deleted topic{'s' if len(args.topics) > 1 else ''} {', '.join(args.topics)}.")
    return EXIT_OK


def run_alter(args: argparse.Namespace) -> int:
    with open_admin(args) as admin:
        admin.create_partitions({args.topic: NewPartitions(args.partitions)}, timeout=args.timeout)
    info(f"Topic {args.topic} now has {args.partitions} partitions.")
    return EXIT_OK


def _broker_ids(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError as e:
        raise CliError(f"--replicas takes comma-separated broker ids (e.g. 2,1), not {text!r}") from e


def run_reassign(args: argparse.Namespace) -> int:
    with open_admin(args) as admin:
        if args.list:
            wanted = None if args.topic is None else [
                TopicPartition(args.topic, p) for p in args.partition] or None
            ongoing = admin.list_partition_reassignments(wanted, timeout=args.timeout)
            if args.topic is not None:
                ongoing = {tp: r for tp, r in ongoing.items() if tp.topic == args.topic}
            emit_rows(args.output, ["topic", "partition", "replicas", "adding", "removing"],
                      [[tp.topic, tp.partition, r.replicas, r.adding_replicas, r.removing_replicas]
                       for tp, r in sorted(ongoing.items())])
            return EXIT_OK
        if args.topic is None or (args.replicas is None) == (not args.cancel):
            raise CliError("give TOPIC and either --replicas IDS or --cancel (or --list)")
        partitions = args.partition or list(range(len(
            admin.describe_topics([args.topic], timeout=args.timeout)[args.topic].partitions)))
        target = None if args.cancel else _broker_ids(args.replicas)
        admin.alter_partition_reassignments({TopicPartition(args.topic, p): target for p in partitions},
                                            timeout=args.timeout)
    what = "Cancelled the reassignment of" if args.cancel else f"Reassigning to {target}:"
    info(f"{what} {', '.join(f'{args.topic}-{p}' for p in partitions)}.")
    return EXIT_OK

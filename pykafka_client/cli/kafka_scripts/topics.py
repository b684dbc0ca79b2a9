"""``kafka-topics.sh``: --list, --describe (with Kafka's partition filters), --create, --alter (partitions) and
--delete, with Kafka's flags and output, on the ``pykafka topics`` functions; ``--replica-assignment`` places the
replicas by hand on --create and on --alter (Kafka's format: partitions separated by ``,``, a partition's broker
ids by ``:``)."""

from __future__ import annotations

import argparse
import base64
import re
import uuid
from collections.abc import Sequence

from pykafka_client.admin.admin_client import AdminClient
from pykafka_client.admin.types import ConfigSource, NewPartitions, NewTopic
from pykafka_client.cli.common import CliError, open_admin
from pykafka_client.cli.kafka_scripts.base import (
    ToolParser,
    cli_args,
    connection_flags,
    failure_text,
    one_action,
    run_tool,
    usage_exit,
)
from pykafka_client.cli.topics import topic_details
from pykafka_client.errors import IllegalArgumentError, TopicExistsError, UnknownTopicOrPartitionError

ACTIONS = ("list", "describe", "create", "alter", "delete")
#: --describe's partition filters (Kafka's TopicCommand): only the partitions they match are printed, without
#: the topic's summary line
PARTITION_FILTERS = ("under_replicated_partitions", "under_min_isr_partitions", "at_min_isr_partitions",
                     "unavailable_partitions")


def kafka_uuid(text: str | None) -> str:
    """A UUID as Kafka prints it: its 16 bytes in URL-safe base64 without padding (None: the zero UUID)."""
    raw = uuid.UUID(text).bytes if text else bytes(16)
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


class TopicNotFound(IllegalArgumentError):
    """No topic matches --topic (Kafka's IllegalArgumentException ``Topic 'x' does not exist as expected``)."""


def build_parser() -> ToolParser:
    p = ToolParser("kafka-topics.sh", "Create, delete, describe, or change a topic.")
    connection_flags(p)
    for action, text in zip(ACTIONS, ("List all available topics.", "List details for the given topics.",
                                      "Create a new topic.", "Alter the number of partitions of a topic.",
                                      "Delete a topic"), strict=True):
        p.add_argument(f"--{action}", action="store_true", help=text)
    p.add_argument("--topic", metavar="TOPIC", help="The topic to create, alter, describe or delete; a regular "
                                                     "expression, except with --create")
    p.add_argument("--partitions", type=int, metavar="N", help="The number of partitions (--create, --alter)")
    p.add_argument("--replication-factor", type=int, metavar="N", help="The replication factor (--create)")
    p.add_argument("--config", action="append", default=[], metavar="NAME=VALUE",
                   help="A topic configuration override for the topic being created (repeatable)")
    p.add_argument("--if-exists", action="store_true", help="Only act if the topic exists (--alter, --delete, "
                                                             "--describe)")
    p.add_argument("--if-not-exists", action="store_true", help="Only create the topic if it does not exist")
    p.add_argument("--replica-assignment", metavar="BROKER_IDS",
                   help="A list of manual partition-to-broker assignments (--create, --alter): "
                        "broker_id_for_part1_replica1:broker_id_for_part1_replica2,"
                        "broker_id_for_part2_replica1:broker_id_for_part2_replica2, ...")
    for name, text in (("under-replicated-partitions", "only partitions whose ISR is smaller than their replicas"),
                       ("under-min-isr-partitions", "only partitions whose ISR is below min.insync.replicas"),
                       ("at-min-isr-partitions", "only partitions whose ISR is exactly min.insync.replicas"),
                       ("unavailable-partitions", "only partitions without a live leader"),
                       ("topics-with-overrides", "only topics with configs overridden (no partition lines)")):
        p.add_argument(f"--{name}", action="store_true", help=f"With --describe: {text}")
    p.add_argument("--exclude-internal", action="store_true", help="Leave internal topics out of --list and "
                                                                  "--describe (they are always left out here)")
    return p


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    opts = parser.parse_args(argv)
    action = one_action(parser, opts, ACTIONS)
    parser.required(opts, "bootstrap_server")
    if action in ("create", "alter", "delete"):
        parser.required(opts, "topic")
    if action == "alter":
        parser.required(opts, "partitions")
        if opts.config:
            usage_exit(parser, 'Option "[config]" can\'t be used with option "[alter]"; use kafka-configs.sh')
    elif opts.config and action != "create":
        usage_exit(parser, f'Option "[config]" can\'t be used with option "[{action}]"')
    if opts.replica_assignment is not None:
        if action not in ("create", "alter"):
            usage_exit(parser, f'Option "[replica-assignment]" can\'t be used with option "[{action}]"')
        for clash in ("partitions", "replication_factor") if action == "create" else ():
            if getattr(opts, clash) is not None:
                usage_exit(parser, f'Option "[replica-assignment]" can\'t be used with option '
                                   f'"[{clash.replace("_", "-")}]"')
    for name in (*PARTITION_FILTERS, "topics_with_overrides"):
        if getattr(opts, name) and action != "describe":
            usage_exit(parser, f'Option "[{name.replace("_", "-")}]" can\'t be used with option "[{action}]"')
    args = cli_args(opts.bootstrap_server, opts.command_config)

    def on_error(e: BaseException) -> None:
        if isinstance(e, TopicNotFound):
            text = str(e)
        elif isinstance(e, TopicExistsError):
            text = f"Topic '{opts.topic}' already exists."
        else:
            text = failure_text(e, args)
        print(f"Error while executing topic command : {text}", flush=True)

    def body() -> int:
        with open_admin(args) as admin:
            if action == "list":
                print("\n".join(_matching(admin, opts.topic, args.timeout, must_match=False)), flush=True)
            elif action == "create":
                _create(admin, opts, args.timeout)
            else:
                names = _matching(admin, opts.topic, args.timeout, must_match=not opts.if_exists)
                if action == "describe":
                    _describe(admin, names, args.timeout, opts)
                elif action == "alter":
                    _alter(admin, names, opts, args.timeout)
                else:
                    if names:
                        admin.delete_topics(names, timeout=args.timeout)
        return 0

    return run_tool(body, on_error)


_LITERAL = re.compile(r"[\w.-]+")


def _matching(admin: AdminClient, topic: str | None, timeout: float, must_match: bool) -> list[str]:
    """The topics --topic names (a regular expression, as in Kafka; a plain name is looked up as it is, so an
    internal topic can be named), sorted; all topics without --topic. No match is TopicNotFound when
    ``must_match``."""
    if topic is not None and _LITERAL.fullmatch(topic):
        try:
            admin.describe_topics([topic], timeout=timeout)
            return [topic]
        except UnknownTopicOrPartitionError:
            names: list[str] = []
    else:
        every = sorted(admin.list_topics(timeout=timeout))
        names = every if topic is None else [n for n in every if re.fullmatch(topic, n)]
    if not names and topic is not None and must_match:
        raise TopicNotFound(f"Topic '{topic}' does not exist as expected")
    return names


def parse_replica_assignment(text: str) -> dict[int, list[int]]:
    """Kafka's ``--replica-assignment``: ``0:1,1:2`` is partition 0 on brokers 0 and 1, partition 1 on 1 and 2.
    A partition naming a broker twice, or a replica count that differs from the first partition's, is refused
    as Kafka refuses it."""
    assignment: dict[int, list[int]] = {}
    for partition, replicas in enumerate(text.split(",")):
        try:
            brokers = [int(b.strip()) for b in replicas.split(":")]
        except ValueError:
            raise CliError(f"Invalid --replica-assignment {text!r}: partition {partition} names {replicas!r}, "
                           f"expected broker ids separated by ':'") from None
        if len(set(brokers)) != len(brokers):
            raise CliError(f"Partition replica lists may not contain duplicate entries: {replicas}")
        if assignment and len(brokers) != len(assignment[0]):
            raise CliError(f"Partition {partition} has different replication factor: {replicas}")
        assignment[partition] = brokers
    return assignment


def _alter(admin: AdminClient, names: list[str], opts: argparse.Namespace, timeout: float) -> None:
    """More partitions; with --replica-assignment the new ones placed as it says (it lists every partition,
    the existing ones first, as in Kafka: those are left as they are)."""
    if opts.replica_assignment is None:
        admin.create_partitions({n: NewPartitions(opts.partitions) for n in names}, timeout=timeout)
        return
    assignment = parse_replica_assignment(opts.replica_assignment)
    if len(assignment) != opts.partitions:
        raise CliError(f"The --replica-assignment names {len(assignment)} partitions but --partitions is "
                       f"{opts.partitions}; list every partition, the existing ones first")
    described = admin.describe_topics(names, timeout=timeout)
    admin.create_partitions({n: NewPartitions(opts.partitions, [assignment[p] for p in sorted(assignment)
                                                                 if p >= len(described[n].partitions)])
                             for n in names}, timeout=timeout)


def _create(admin: AdminClient, opts: argparse.Namespace, timeout: float) -> None:
    configs = {}
    for item in opts.config:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CliError(f"Invalid topic config {item!r}: expected NAME=VALUE")
        configs[key.strip()] = value
    if "." in opts.topic or "_" in opts.topic:
        print("WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could "
              "collide. To avoid issues it is best to use either, but not both.")
    if opts.replica_assignment is not None:
        topic = NewTopic(opts.topic, replica_assignments=parse_replica_assignment(opts.replica_assignment),
                         configs=configs)
    else:
        topic = NewTopic(opts.topic, -1 if opts.partitions is None else opts.partitions,
                         -1 if opts.replication_factor is None else opts.replication_factor, configs=configs)
    try:
        admin.create_topics([topic], timeout=timeout)
    except TopicExistsError:
        if opts.if_not_exists:
            return
        raise
    print(f"Created topic {opts.topic}.", flush=True)


def _describe(admin: AdminClient, names: list[str], timeout: float, opts: argparse.Namespace) -> None:
    """Kafka's lines: one for the topic, one (tab-indented) per partition; configs not at their default. A
    partition filter prints only the partitions it matches and no topic line; --topics-with-overrides only the
    topic lines of topics with overrides (Kafka's TopicCommand)."""
    filters = [f for f in PARTITION_FILTERS if getattr(opts, f)]
    live = {n.id for n in admin.describe_cluster(timeout=timeout).nodes} if opts.unavailable_partitions else set()
    for t in topic_details(admin, names, timeout, lambda e: e.source is not ConfigSource.DEFAULT_CONFIG):
        if opts.topics_with_overrides and not t["configs"]:
            continue
        configs = ",".join(f"{k}={v}" for k, v in sorted(t["configs"].items()))
        if not filters:
            print(f"Topic: {t['name']}\tTopicId: {kafka_uuid(t['topic_id'])}\tPartitionCount: "
                  f"{t['partition_count']}\tReplicationFactor: {t['replication_factor']}\tConfigs: {configs}")
        if opts.topics_with_overrides:
            continue
        # a min.insync.replicas at Kafka's default (1) is not among the configs shown
        min_isr = int(t["configs"].get("min.insync.replicas", 1))
        for p in t["partitions"]:
            isr, replicas = len(p["isr"]), len(p["replicas"])
            matched = {"under_replicated_partitions": isr < replicas, "under_min_isr_partitions": isr < min_isr,
                       "at_min_isr_partitions": isr == min_isr,
                       "unavailable_partitions": p["leader"] is None or p["leader"] not in live}
            if filters and not any(matched[f] for f in filters):
                continue
            leader = "none" if p["leader"] is None else p["leader"]
            print(f"\tTopic: {t['name']}\tPartition: {p['partition']}\tLeader: {leader}\t"
                  f"Replicas: {','.join(map(str, p['replicas']))}\tIsr: {','.join(map(str, p['isr']))}")

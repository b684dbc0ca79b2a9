"""``kafka-topics.sh``: --list, --describe, --create, --alter (partitions) and --delete, with Kafka's flags and
output, on the ``pykafka topics`` functions."""

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
                    _describe(admin, names, args.timeout)
                elif action == "alter":
                    admin.create_partitions({n: NewPartitions(opts.partitions) for n in names}, timeout=args.timeout)
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
    topic = NewTopic(opts.topic, -1 if opts.partitions is None else opts.partitions,
                     -1 if opts.replication_factor is None else opts.replication_factor, configs=configs)
    try:
        admin.create_topics([topic], timeout=timeout)
    except TopicExistsError:
        if opts.if_not_exists:
            return
        raise
    print(f"Created topic {opts.topic}.", flush=True)


def _describe(admin: AdminClient, names: list[str], timeout: float) -> None:
    """Kafka's lines: one for the topic, one (tab-indented) per partition; configs not at their default."""
    for t in topic_details(admin, names, timeout, lambda e: e.source is not ConfigSource.DEFAULT_CONFIG):
        configs = ",".join(f"{k}={v}" for k, v in sorted(t["configs"].items()))
        print(f"Topic: {t['name']}\tTopicId: {kafka_uuid(t['topic_id'])}\tPartitionCount: "
              f"{t['partition_count']}\tReplicationFactor: {t['replication_factor']}\tConfigs: {configs}")
        for p in t["partitions"]:
            leader = "none" if p["leader"] is None else p["leader"]
            print(f"\tTopic: {t['name']}\tPartition: {p['partition']}\tLeader: {leader}\t"
                  f"Replicas: {','.join(map(str, p['replicas']))}\tIsr: {','.join(map(str, p['isr']))}")

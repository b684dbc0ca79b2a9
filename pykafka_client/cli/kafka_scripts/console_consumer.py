"""``kafka-console-consumer.sh``: records printed as Kafka's console consumer prints them (``--property
print.key=true``, ``print.timestamp``, ``print.partition``, ``print.offset``, ``print.headers``,
``print.value``, ``key.separator``, ``line.separator``, ``headers.separator``, ``null.literal``), read by the
``pykafka consume`` function; ``Processed a total of N messages`` on stderr at the end."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence

from pykafka_client.cli.common import open_admin
from pykafka_client.cli.consume import consume
from pykafka_client.cli.kafka_scripts.base import (
    ToolParser,
    cli_args,
    failure_text,
    file_properties,
    properties,
    property_flag,
    run_tool,
    usage_exit,
)
from pykafka_client.cli.record_format import MessageFormat

#: The formatter class names Kafka's --formatter takes for the format this script prints.
DEFAULT_FORMATTERS = ("kafka.tools.DefaultMessageFormatter", "org.apache.kafka.tools.consumer.DefaultMessageFormatter")

#: What Kafka's console consumer logs when --timeout-ms passes without a record (it then exits 0).
TIMEOUT_NOTE = ("ERROR Error processing message, terminating consumer process: "
                "org.apache.kafka.common.errors.TimeoutException")


def build_parser() -> ToolParser:
    p = ToolParser("kafka-console-consumer.sh", "Consume messages from Kafka topics and print them to standard "
                                                "output.")
    p.add_argument("--bootstrap-server", metavar="HOST:PORT", help="the brokers to connect to (required)")
    p.add_argument("--topic", metavar="TOPIC", help="The topic to consume")
    p.add_argument("--include", "--whitelist", dest="include", metavar="REGEX",
                   help="A regular expression: consume every topic whose name matches it")
    p.add_argument("--group", metavar="GROUP", help="The consumer group to consume in (commits what it printed)")
    p.add_argument("--from-beginning", action="store_true", help="Start with the earliest message (without a "
                                                                  "committed offset)")
    p.add_argument("--partition", type=int, metavar="N", help="Consume only this partition")
    p.add_argument("--offset", metavar="OFFSET", help="With --partition: earliest, latest (default) or an offset")
    p.add_argument("--max-messages", type=int, metavar="N", help="Exit after this many messages")
    p.add_argument("--timeout-ms", type=int, metavar="MS", help="Exit when no message arrives for this long")
    property_flag(p, "--property", "A property of the formatter: print.timestamp, print.key, print.offset, "
                                   "print.partition, print.headers, print.value, key.separator, line.separator, "
                                   "headers.separator, null.literal (repeatable)")
    property_flag(p, "--consumer-property", "A consumer config (repeatable)")
    p.add_argument("--consumer.config", dest="consumer_config", metavar="FILE", help="A properties file of consumer "
                                                                                      "configs")
    p.add_argument("--command-config", metavar="FILE", help="A properties file of consumer configs")
    p.add_argument("--isolation-level", choices=("read_uncommitted", "read_committed"), default="read_uncommitted",
                   help="read_committed skips aborted transactional messages (default read_uncommitted)")
    p.add_argument("--formatter", metavar="CLASS", help="Only Kafka's DefaultMessageFormatter")
    p.add_argument("--key-deserializer", metavar="CLASS", help="Accepted; keys are printed as their bytes")
    p.add_argument("--value-deserializer", metavar="CLASS", help="Accepted; values are printed as their bytes")
    p.add_argument("--skip-message-on-error", action="store_true", help="Accepted (no effect)")
    return p


def _flag(props: dict[str, str], name: str, default: bool) -> bool:
    return props.get(name, str(default)).strip().lower() == "true"


def message_format(props: dict[str, str]) -> MessageFormat:
    def text(name: str, default: str) -> bytes:
        return props.get(name, default).encode("utf-8")

    return MessageFormat(
        print_timestamp=_flag(props, "print.timestamp", False), print_partition=_flag(props, "print.partition", False),
        print_offset=_flag(props, "print.offset", False), print_headers=_flag(props, "print.headers", False),
        print_key=_flag(props, "print.key", False), print_value=_flag(props, "print.value", True),
        key_separator=text("key.separator", "\t"), line_separator=text("line.separator", "\n"),
        headers_separator=text("headers.separator", ","), null_literal=text("null.literal", "null"),
    )


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    opts = parser.parse_args(argv)
    parser.required(opts, "bootstrap_server")
    if (opts.topic is None) == (opts.include is None):
        usage_exit(parser, "Exactly one of include/topic is required.")
    if opts.partition is not None and opts.topic is None:
        usage_exit(parser, "The topic is required when partition is specified.")
    if opts.offset is not None and opts.partition is None:
        usage_exit(parser, "The partition is required when offset is specified.")
    if opts.offset is not None and opts.from_beginning:
        usage_exit(parser, "Options from-beginning and offset cannot be specified together.")
    if opts.group is not None and opts.partition is not None:
        usage_exit(parser, "Options group and partition cannot be specified together.")
    if opts.formatter is not None and opts.formatter not in DEFAULT_FORMATTERS:
        usage_exit(parser, f"--formatter {opts.formatter} is not supported here: only {DEFAULT_FORMATTERS[0]}")
    fmt = message_format(properties(parser, "--property", opts.property))
    settings = file_properties(opts.consumer_config)
    settings.update(properties(parser, "--consumer-property", opts.consumer_property))
    group = opts.group or settings.pop("group.id", None)
    offset = opts.offset
    if opts.partition is not None and offset is None and not opts.from_beginning:
        offset = "latest"
    args = cli_args(opts.bootstrap_server, opts.command_config, settings, topics=[opts.topic] if opts.topic else [],
                    group=group, partition=opts.partition, offset=offset, from_beginning=opts.from_beginning,
                    isolation_level=opts.isolation_level, max_messages=opts.max_messages,
                    idle_timeout=None if opts.timeout_ms is None else max(opts.timeout_ms, 1) / 1000.0)

    def on_error(e: BaseException) -> None:
        print(f"ERROR {failure_text(e, args)} (kafka-console-consumer.sh)", file=sys.stderr)

    def body() -> int:
        if opts.include is not None:
            with open_admin(args) as admin:
                args.topics = sorted(t for t in admin.list_topics(timeout=args.timeout) if re.fullmatch(opts.include, t))
            if not args.topics:
                print(f"ERROR no topic matches --include {opts.include!r} (kafka-console-consumer.sh)", file=sys.stderr)
                return 1
        consume(args, fmt, idle_note=TIMEOUT_NOTE)
        return 0

    return run_tool(body, on_error)

"""``kafka-consumer-groups.sh``: --list, --describe (offsets, --members, --state), --reset-offsets and --delete,
with Kafka's flags and output, on the ``pykafka groups`` functions."""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

from pykafka_client.admin.admin_client import AdminClient
from pykafka_client.admin.group_types import EMPTY, ConsumerGroupDescription
from pykafka_client.cli.common import EXIT_NOT_FOUND, CliError, open_admin
from pykafka_client.cli.groups import commit_plan, group_offsets, reset_plan, reset_time_ms
from pykafka_client.cli.kafka_scripts.base import (
    ToolParser,
    cli_args,
    connection_flags,
    failure_text,
    one_action,
    run_tool,
    usage_exit,
)
from pykafka_client.errors import GroupIdNotFoundError, GroupNotEmptyError, UnknownTopicOrPartitionError
from pykafka_client.structs import TopicPartition

ACTIONS = ("list", "describe", "delete", "reset_offsets", "delete_offsets")
STRATEGIES = ("to_datetime", "by_duration", "to_earliest", "to_latest", "shift_by", "to_current", "to_offset")

DRY_RUN_WARNING = ("WARN: No action will be performed as the --execute option is missing. In a future major "
                   "release, the default behavior of this command will be to prompt the user before executing the "
                   "reset rather than doing a dry run. You should add the --dry-run option explicitly if you are "
                   "scripting this command and want to keep the current default behavior without prompting.")


def build_parser() -> ToolParser:
    p = ToolParser("kafka-consumer-groups.sh", "List all consumer groups, describe a consumer group, delete "
                                               "consumer group info, or reset consumer group offsets.")
    connection_flags(p)
    p.add_argument("--list", action="store_true", help="List all consumer groups.")
    p.add_argument("--describe", action="store_true", help="Describe consumer group and list offset lag.")
    p.add_argument("--delete", action="store_true", help="Delete consumer groups (they must have no members).")
    p.add_argument("--reset-offsets", action="store_true", help="Reset offsets of a consumer group (inactive).")
    p.add_argument("--delete-offsets", action="store_true",
                   help="Delete the committed offsets of a consumer group for the topics (partitions) --topic names.")
    p.add_argument("--export", action="store_true",
                   help="With --reset-offsets: print the new offsets as CSV (topic,partition,offset; with several "
                        "groups group,topic,partition,offset)")
    p.add_argument("--group", action="append", default=[], metavar="GROUP", help="The consumer group (repeatable)")
    p.add_argument("--all-groups", action="store_true", help="Every consumer group")
    p.add_argument("--topic", action="append", default=[], metavar="TOPIC[:P,P]",
                   help="The topic whose offsets to reset, optionally some partitions (repeatable)")
    p.add_argument("--all-topics", action="store_true", help="Every topic the group has committed offsets for")
    p.add_argument("--to-earliest", action="store_true", help="Reset offsets to the earliest offset.")
    p.add_argument("--to-latest", action="store_true", help="Reset offsets to the latest offset.")
    p.add_argument("--to-current", action="store_true", help="Reset offsets to the committed offset.")
    p.add_argument("--to-offset", type=int, metavar="OFFSET", help="Reset offsets to this offset.")
    p.add_argument("--shift-by", type=int, metavar="N", help="Shift the committed offsets by N (may be negative).")
    p.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss", help="Reset offsets to the offsets of this time.")
    p.add_argument("--by-duration", metavar="PnDTnHnMnS", help="Reset offsets to those of this long ago.")
    p.add_argument("--execute", action="store_true", help="Commit the new offsets.")
    p.add_argument("--dry-run", action="store_true", help="Only show the new offsets (the default).")
    p.add_argument("--members", action="store_true", help="Describe the group's members.")
    p.add_argument("--offsets", action="store_true", help="Describe the group's offsets and lag (the default).")
    p.add_argument("--state", action="store_true", help="Describe the group's state.")
    p.add_argument("--verbose", action="store_true", help="Accepted (no effect)")
    p.add_argument("--timeout", type=int, metavar="MS", help="How long to wait for the cluster (default 30000)")
    return p


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    opts = parser.parse_args(argv)
    action = one_action(parser, opts, ACTIONS)
    parser.required(opts, "bootstrap_server")
    if action != "list" and not opts.group and not opts.all_groups:
        usage_exit(parser, 'Missing required argument "[group]"')
    if action == "reset_offsets":
        _check_reset(parser, opts)
    if action == "delete_offsets":
        if len(opts.group) != 1:
            usage_exit(parser, "Option [delete-offsets] takes exactly one --group")
        parser.required(opts, "topic")
    if opts.export and action != "reset_offsets":
        usage_exit(parser, f'Option "[export]" can\'t be used with option "[{action.replace("_", "-")}]"')
    args = cli_args(opts.bootstrap_server, opts.command_config)
    if opts.timeout is not None:
        args.timeout = max(opts.timeout, 1) / 1000.0

    def on_error(e: BaseException) -> None:
        if isinstance(e, CliError):
            print(f"\nError: {e}", flush=True)
        else:
            print(f"\nError: Executing consumer group command failed due to {failure_text(e, args)}", flush=True)

    def body() -> int:
        with open_admin(args) as admin:
            groups = opts.group or [g.group_id for g in admin.list_consumer_groups(timeout=args.timeout)]
            if action == "list":
                for g in admin.list_consumer_groups(timeout=args.timeout):
                    print(g.group_id)
                return 0
            if action == "delete":
                return _delete(admin, groups, args.timeout)
            if action == "reset_offsets":
                return _reset(admin, groups, opts, args)
            if action == "delete_offsets":
                return _delete_offsets(admin, groups[0], opts.topic, args.timeout)
            return _describe(admin, groups, opts, args.timeout)

    return run_tool(body, on_error)


def _check_reset(parser: ToolParser, opts: argparse.Namespace) -> None:
    # `0 in (None, False)` is True: --to-offset 0 and --shift-by 0 are given all the same
    given = [s for s in STRATEGIES if getattr(opts, s) is not None and getattr(opts, s) is not False]
    if len(given) != 1:
        usage_exit(parser, "One of the reset options should be defined: " +
                   ", ".join(f"--{s.replace('_', '-')}" for s in STRATEGIES) + ".")
    if not opts.topic and not opts.all_topics:
        usage_exit(parser, "One of the reset scopes should be defined: --all-topics, --topic.")
    if opts.execute and opts.dry_run:
        usage_exit(parser, "Option [reset-offsets] only accepts one of --execute and --dry-run")


def _row(widths: Sequence[int], values: Sequence[Any]) -> str:
    """Kafka's table row: each value left-aligned in its width, one space apart ("-" for none)."""
    cells = ["-" if v is None else str(v) for v in values]
    return " ".join(c.ljust(w) for c, w in zip(cells[:-1], widths, strict=False)) + " " + cells[-1]


def _widths(columns: Sequence[str], rows: Sequence[Sequence[Any]], fixed: dict[int, int]) -> list[int]:
    """Widths of all but the last column: ``fixed`` ones as given, the others the longest value, at least 15."""
    return [fixed.get(i, max([15, len(c)] + [len("-" if r[i] is None else str(r[i])) for r in rows]))
            for i, c in enumerate(columns[:-1])]


def _note_state(d: ConsumerGroupDescription, group: str) -> None:
    """Kafka's note before a group's table: no members, or a rebalance under way."""
    if d.state == EMPTY:
        print(f"\nConsumer group '{group}' has no active members.")
    elif d.state != "Stable":
        print(f"\nWarning: Consumer group '{group}' is rebalancing.")


def _describe(admin: AdminClient, groups: list[str], opts: argparse.Namespace, timeout: float) -> int:
    for group in groups:
        try:
            d, offsets = group_offsets(admin, group, timeout)
        except CliError as e:
            if e.exit_code == EXIT_NOT_FOUND:
                raise CliError(f"Consumer group '{group}' does not exist.") from e
            raise
        _note_state(d, group)
        if opts.state:
            where = "-" if d.coordinator is None else f"{d.coordinator.host}:{d.coordinator.port} ({d.coordinator.id})"
            columns: tuple[str, ...] = ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")
            rows: list[tuple[Any, ...]] = [(group, where, d.partition_assignor or "", d.state, len(d.members))]
        elif opts.members:
            columns = ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS")
            rows = [(group, m.member_id, m.host, m.client_id, len(m.assignment)) for m in d.members]
        else:
            columns = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
                       "CLIENT-ID")
            rows = [(group, *row) for row in offsets]
        if rows or not opts.members:
            fixed = {2: 10, 3: 15, 4: 15, 5: 15} if columns[2] == "PARTITION" else {}
            widths = _widths(columns, rows, fixed)
            print()
            print(_row(widths, columns))
            for row in rows:
                print(_row(widths, row))
        print()
    return 0


def _reset(admin: AdminClient, groups: list[str], opts: argparse.Namespace, args: argparse.Namespace) -> int:
    if not opts.execute and not opts.dry_run:
        print(DRY_RUN_WARNING)
    for group in groups:
        d = admin.describe_consumer_groups([group], timeout=args.timeout)[group]
        if d.is_active:
            print(f"\nError: Assignments can only be reset if the group '{group}' is inactive, but the current "
                  f"state is {d.state}.")
            return 1
        reset_args = argparse.Namespace(**vars(args), group=group, topic=opts.topic, all_topics=opts.all_topics,
                                        to_earliest=opts.to_earliest, to_latest=opts.to_latest,
                                        to_offset=opts.to_offset, to_datetime=opts.to_datetime,
                                        by_duration=opts.by_duration, shift_by=0 if opts.to_current else opts.shift_by)
        plan, _ = reset_plan(admin, reset_args, reset_time_ms(reset_args, int(time.time() * 1000)))
        if opts.export:
            prefix = f"{group}," if len(groups) > 1 else ""
            print("\n".join(f"{prefix}{tp.topic},{tp.partition},{plan[tp]}" for tp in sorted(plan)))
            if opts.execute:
                commit_plan(admin, group, plan, args.timeout)
            continue
        line = "%-30s %-30s %-10s %-15s"
        print("\n" + line % ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"))
        for tp in sorted(plan):
            print(line % (group, tp.topic, tp.partition, plan[tp]))
        print()
        if opts.execute:
            commit_plan(admin, group, plan, args.timeout)
    return 0


def _delete_offsets(admin: AdminClient, group: str, topics: list[str], timeout: float) -> int:
    """Kafka's ConsumerGroupCommand.deleteOffsets: a group-level line, then a TOPIC PARTITION STATUS table; a
    topic without partitions means all of them, an unknown topic is its row's error (partition -1)."""
    wanted: list[TopicPartition] = []
    unknown: dict[TopicPartition, BaseException] = {}
    for item in topics:
        topic, _, parts = item.partition(":")
        if parts:
            try:
                wanted += [TopicPartition(topic, int(p)) for p in parts.split(",")]
            except ValueError:
                raise CliError(f"--topic {item!r}: expected TOPIC or TOPIC:P,P (partition numbers)") from None
            continue
        try:
            count = len(admin.describe_topics([topic], timeout=timeout)[topic].partitions)
        except UnknownTopicOrPartitionError as e:
            unknown[TopicPartition(topic, -1)] = e
            continue
        wanted += [TopicPartition(topic, p) for p in range(count)]
    status = 0
    try:
        results: dict[TopicPartition, BaseException | None] = dict(
            admin.delete_consumer_group_offsets(group, wanted, timeout=timeout) if wanted else {})
    except GroupIdNotFoundError:
        print(f"\nError: Executing consumer group command failed due to '{group}' does not exist.")
        return 1
    except GroupNotEmptyError:
        print(f"\nError: Executing consumer group command failed due to Deleting offsets of a consumer group "
              f"'{group}' is forbidden if the group is not empty.")
        return 1
    results.update(unknown)
    if any(e is not None for e in results.values()):
        print("\nError: Encounter some partition level error, see the follow-up details:")
        status = 1
    else:
        print(f"Request succeed for deleting offsets with topic {', '.join(t.split(':')[0] for t in topics)} "
              f"group {group}")
    line = "%-30s %-15s %-15s"
    print("\n" + line % ("TOPIC", "PARTITION", "STATUS"))
    for tp in sorted(results, key=lambda t: (t.topic, t.partition)):
        error = results[tp]
        print(line % (tp.topic, tp.partition,
                      "Successful" if error is None else f"Error: {error}"))
    return status


def _delete(admin: AdminClient, groups: list[str], timeout: float) -> int:
    failed: dict[str, str] = {}
    for group in groups:
        try:
            admin.delete_consumer_groups([group], timeout=timeout)
        except GroupNotEmptyError:
            failed[group] = "org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty."
        except Exception as e:
            failed[group] = failure_text(e, argparse.Namespace(bootstrap_server="", timeout=timeout))
    deleted = [g for g in groups if g not in failed]
    if deleted:
        print(f"Deletion of requested consumer groups ({', '.join(repr(g) for g in deleted)}) was successful.")
    if failed:
        print("Error: Deletion of some consumer groups failed:")
        for group, why in failed.items():
            print(f"* Group '{group}' could not be deleted due to: {why}")
        return 1
    return 0

"""``pykafka groups list | describe | reset-offsets | delete`` (Kafka's kafka-consumer-groups.sh).

reset-offsets follows Kafka's rule: it prints the plan and changes nothing unless ``--execute`` is
given, and it refuses while the group has active members (exit code 5)."""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from pykafka_client.admin.admin_client import AdminClient
from pykafka_client.admin.group_types import DEAD, ConsumerGroupDescription
from pykafka_client.admin.types import OffsetSpec, TopicDescription
from pykafka_client.cli.common import (
    EXIT_FAILED,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_USAGE,
    CliError,
    add_command,
    check_partition,
    open_admin,
    output_flag,
)
from pykafka_client.cli.output import emit, emit_rows, info, records, table
from pykafka_client.errors import UnknownTopicOrPartitionError
from pykafka_client.structs import OffsetAndMetadata, TopicPartition


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    groups = add_command(subparsers, "groups", "list, describe, reset the offsets of and delete consumer groups", [],
                         description=__doc__.split("\n\n", 1)[1] if __doc__ else None)
    sub = groups.add_subparsers(dest="action", metavar="ACTION", required=True)

    p = add_command(sub, "list", "list consumer groups with their state", [common],
                    epilog="example:\n  pykafka groups list --output json\n  pykafka groups list --type consumer")
    p.add_argument("--type", dest="types", action="append", choices=("classic", "consumer", "share"),
                   help="only groups of this type (repeatable): classic, consumer (KIP-848) or share (KIP-932)")
    output_flag(p)
    p.set_defaults(run=run_list)

    p = add_command(
        sub, "describe", "state, protocol, members and per-partition committed offset, end offset and lag", [common],
        epilog="example:\n  pykafka groups describe billing",
    )
    p.add_argument("groups", nargs="+", metavar="GROUP", help="groups to describe")
    output_flag(p)
    p.set_defaults(run=run_describe)

    p = add_command(
        sub, "reset-offsets", "plan (and with --execute, commit) new offsets for an inactive group", [common],
        epilog="examples:\n  pykafka groups reset-offsets --group billing --topic orders --to-earliest\n"
               "  pykafka groups reset-offsets --group billing --all-topics --shift-by -10 --execute",
    )
    p.add_argument("--group", required=True, metavar="GROUP", help="the consumer group (it must have no active members)")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--topic", action="append", metavar="TOPIC[:P,P...]", help="a topic, optionally some partitions (repeatable)")
    which.add_argument("--all-topics", action="store_true", help="every topic the group has committed offsets for")
    to = p.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true", help="the earliest offset still in the log")
    to.add_argument("--to-latest", action="store_true", help="the end of the log")
    to.add_argument("--to-offset", type=int, metavar="OFFSET", help="this offset (kept within the log)")
    to.add_argument("--to-datetime", metavar="DATETIME",
                    help="the first offset at or after YYYY-MM-DDTHH:MM:SS[.sss][Z|+HH:MM] (no zone: local time)")
    to.add_argument("--shift-by", type=int, metavar="N", help="the committed offset plus N (may be negative)")
    to.add_argument("--by-duration", metavar="PnDTnHnMnS", help="the first offset at or after now minus this duration")
    p.add_argument("--execute", action="store_true", help="commit the plan (without it nothing changes)")
    p.add_argument("--dry-run", action="store_true", help="only print the plan (the default)")
    output_flag(p)
    p.set_defaults(run=run_reset)

    p = add_command(sub, "delete", "delete empty groups and their committed offsets", [common],
                    epilog="example:\n  pykafka groups delete --group billing")
    p.add_argument("--group", action="append", required=True, metavar="GROUP", help="a group to delete (repeatable)")
    p.set_defaults(run=run_delete)


def run_list(args: argparse.Namespace) -> int:
    with open_admin(args) as admin:
        listing = admin.list_consumer_groups(timeout=args.timeout, types=args.types)
    emit_rows(args.output, ("GROUP", "STATE", "PROTOCOL-TYPE", "TYPE"),
              [(g.group_id, g.state, g.protocol_type, g.type or "-") for g in listing])
    return EXIT_OK


def _describe(admin: AdminClient, group: str, timeout: float) -> ConsumerGroupDescription:
    d = admin.describe_consumer_groups([group], timeout=timeout)[group]
    if d.state == DEAD:
        raise CliError(f"consumer group {group!r} does not exist; see `pykafka groups list`", EXIT_NOT_FOUND)
    return d


def _end_offsets(admin: AdminClient, tps: list[TopicPartition], timeout: float, spec: OffsetSpec) -> dict[TopicPartition, int]:
    found = admin.list_offsets(dict.fromkeys(tps, spec), timeout=timeout) if tps else {}
    return {TopicPartition(tp[0], tp[1]): info.offset for tp, info in found.items()}


def _topics_if_they_exist(admin: AdminClient, names: list[str], timeout: float) -> dict[str, TopicDescription]:
    """The descriptions of ``names`` that still exist (a group may keep offsets of a deleted topic)."""
    out: dict[str, TopicDescription] = {}
    for name in names:
        try:
            out.update(admin.describe_topics([name], timeout=timeout))
        except UnknownTopicOrPartitionError:
            pass
    return out


OFFSET_COLUMNS = ("TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID")


def group_offsets(admin: AdminClient, group: str, timeout: float) -> tuple[ConsumerGroupDescription, list[tuple[Any, ...]]]:
    """The group's description and a row of OFFSET_COLUMNS per partition it owns or has committed (and
    every other partition of those topics); an unknown group is a CliError with EXIT_NOT_FOUND."""
    d = _describe(admin, group, timeout)
    committed = admin.list_consumer_group_offsets(group, timeout=timeout)
    owner = {tp: m for m in d.members for tp in m.assignment}
    known = set(committed) | set(owner)
    # every partition of the topics the group reads, also those it has not committed yet
    topics = _topics_if_they_exist(admin, sorted({tp.topic for tp in known}), timeout)
    tps = sorted(known | {TopicPartition(t, p.partition) for t, desc in topics.items() for p in desc.partitions})
    ends = _end_offsets(admin, [tp for tp in tps if tp.topic in topics], timeout, OffsetSpec.latest())
    rows = []
    for tp in tps:
        current = committed[tp].offset if tp in committed else None
        end = ends.get(tp)
        member = owner.get(tp)
        rows.append((
            tp.topic, tp.partition, current, end,
            None if current is None or end is None else max(0, end - current),
            member.member_id if member else None, member.host if member else None,
            member.client_id if member else None,
        ))
    return d, rows


def run_describe(args: argparse.Namespace) -> int:
    out: list[dict[str, Any]] = []
    with open_admin(args) as admin:
        for group in args.groups:
            d, rows = group_offsets(admin, group, args.timeout)
            columns = OFFSET_COLUMNS
            out.append({
                "group": group, "state": d.state, "protocol_type": "" if d.is_simple_consumer_group else "consumer",
                "protocol": d.partition_assignor, "type": d.type, "group_epoch": d.group_epoch,
                "coordinator": None if d.coordinator is None else {"id": d.coordinator.id, "host": d.coordinator.host,
                                                                   "port": d.coordinator.port},
                "members": [
                    {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "client_id": m.client_id,
                     "host": m.host, "assignment": [f"{tp.topic}-{tp.partition}" for tp in m.assignment],
                     "member_epoch": m.member_epoch}
                    for m in d.members
                ],
                "offsets": records(columns, rows),
                "_table": (columns, rows),
            })
    if args.output == "json":
        emit("json", [{k: v for k, v in g.items() if k != "_table"} for g in out], [], [])
        return EXIT_OK
    for i, g in enumerate(out):
        if i:
            print()
        coordinator = g["coordinator"]
        where = f"{coordinator['host']}:{coordinator['port']} (id: {coordinator['id']})" if coordinator else "-"
        epoch = f"  Epoch: {g['group_epoch']}" if g["group_epoch"] is not None else ""
        print(f"Group: {g['group']}  State: {g['state']}  Type: {g['type']}  Protocol: {g['protocol'] or '-'}{epoch}  "
              f"Members: {len(g['members'])}  Coordinator: {where}")
        if g["members"] and g["type"] == "consumer":
            print()
            print(table(("MEMBER-ID", "CLIENT-ID", "HOST", "EPOCH", "ASSIGNMENT"), [
                (m["member_id"], m["client_id"], m["host"], m["member_epoch"], ",".join(m["assignment"]) or "-")
                for m in g["members"]
            ]))
        elif g["members"]:
            print()
            print(table(("MEMBER-ID", "CLIENT-ID", "HOST", "ASSIGNMENT"), [
                (m["member_id"], m["client_id"], m["host"], ",".join(m["assignment"]) or "-") for m in g["members"]
            ]))
        print()
        print(table(*g["_table"]))
    return EXIT_OK


_DURATION = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$")


def parse_duration_ms(text: str) -> int:
    """An ISO-8601 duration (``PnDTnHnMnS``, as Kafka's --by-duration) in milliseconds."""
    m = _DURATION.match(text.strip().upper())
    if not m or text.strip().upper() in ("P", "PT"):
        raise CliError(f"--by-duration {text!r}: expected an ISO-8601 duration such as PT1H30M or P1DT12H", EXIT_USAGE)
    days, hours, minutes, seconds = (float(g) if g else 0.0 for g in m.groups())
    return int((((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000)


DATETIME_FORMAT = "YYYY-MM-DDTHH:MM:SS[.sss][Z|+HH:MM]"


def parse_datetime_ms(text: str, flag: str = "--to-datetime", expected: str = DATETIME_FORMAT) -> int:
    """``YYYY-MM-DDTHH:MM:SS[.sss][Z|+HH:MM]`` in milliseconds since the epoch; no offset means local time.
    Not a date-time: a usage error naming ``flag`` (the flag the user typed) and what it ``expected``."""
    cleaned = text.strip()
    if cleaned.endswith(("Z", "z")):
        cleaned = cleaned[:-1] + "+00:00"
    try:
        return int(datetime.fromisoformat(cleaned).timestamp() * 1000)
    except ValueError:
        raise CliError(f"{flag} {text!r}: expected {expected}", EXIT_USAGE) from None


def wanted_partitions(args: argparse.Namespace) -> dict[str, list[int] | None]:
    """The --topic TOPIC[:P,P...] flags (None: every partition); a bad one is a usage error."""
    wanted: dict[str, list[int] | None] = {}
    for item in args.topic or ():
        topic, _, parts = item.partition(":")
        try:
            wanted[topic] = [int(p) for p in parts.split(",")] if parts else None
        except ValueError:
            raise CliError(f"--topic {item!r}: expected TOPIC or TOPIC:P,P (partition numbers)", EXIT_USAGE) from None
    return wanted


def _partitions(admin: AdminClient, args: argparse.Namespace, wanted: dict[str, list[int] | None],
                committed: Mapping[TopicPartition, OffsetAndMetadata]) -> list[TopicPartition]:
    if args.all_topics:
        if not committed:
            raise CliError(f"group {args.group!r} has no committed offsets; name the topics with --topic", EXIT_NOT_FOUND)
        return sorted(committed)
    described = admin.describe_topics(list(wanted), timeout=args.timeout)
    out: list[TopicPartition] = []
    for topic, parts in wanted.items():
        count = len(described[topic].partitions)
        for p in parts if parts is not None else range(count):
            check_partition(topic, p, count)
            out.append(TopicPartition(topic, p))
    return sorted(set(out))


def reset_time_ms(args: argparse.Namespace, now_ms: int) -> int | None:
    """The time --to-datetime or --by-duration (before ``now_ms``) asks for, None for the other strategies; a
    bad value is a usage error, raised before anything connects."""
    if args.to_datetime is not None:
        return parse_datetime_ms(args.to_datetime)
    if args.by_duration is not None:
        return now_ms - parse_duration_ms(args.by_duration)
    return None


def plan_offsets(admin: AdminClient, args: argparse.Namespace, tps: list[TopicPartition],
                 committed: Mapping[TopicPartition, OffsetAndMetadata], when: int | None) -> dict[TopicPartition, int]:
    """The new offset of each partition under the chosen strategy (``when``: :func:`reset_time_ms`), kept
    between earliest and latest."""
    earliest = _end_offsets(admin, tps, args.timeout, OffsetSpec.earliest())
    latest = _end_offsets(admin, tps, args.timeout, OffsetSpec.latest())
    if args.to_earliest:
        return dict(earliest)
    if args.to_latest:
        return dict(latest)
    if when is not None:
        found = _end_offsets(admin, tps, args.timeout, OffsetSpec.for_timestamp(max(0, when)))
        return {tp: latest[tp] if found.get(tp, -1) < 0 else found[tp] for tp in tps}
    plan: dict[TopicPartition, int] = {}
    for tp in tps:
        if args.to_offset is not None:
            target = args.to_offset
        else:
            if tp not in committed:
                raise CliError(f"cannot shift {tp.topic}-{tp.partition}: group {args.group!r} has no committed offset "
                               "there; use --to-earliest, --to-latest or --to-offset", EXIT_FAILED)
            target = committed[tp].offset + args.shift_by
        plan[tp] = min(max(target, earliest[tp]), latest[tp])
    return plan


def reset_plan(admin: AdminClient, args: argparse.Namespace,
               when: int | None) -> tuple[dict[TopicPartition, int], Mapping[TopicPartition, OffsetAndMetadata]]:
    """The new offset of each partition --topic/--all-topics names under the chosen strategy, and the group's
    committed offsets; a group with active members is a CliError with EXIT_REFUSED."""
    wanted = wanted_partitions(args)
    d = admin.describe_consumer_groups([args.group], timeout=args.timeout)[args.group]
    if d.is_active:
        raise CliError(
            f"group {args.group!r} has {len(d.members)} active member(s) (state {d.state}): stop its consumers "
            "before resetting offsets", EXIT_REFUSED,
        )
    committed = admin.list_consumer_group_offsets(args.group, timeout=args.timeout)
    tps = _partitions(admin, args, wanted, committed)
    return plan_offsets(admin, args, tps, committed, when), committed


def commit_plan(admin: AdminClient, group: str, plan: Mapping[TopicPartition, int], timeout: float) -> None:
    admin.alter_consumer_group_offsets(group, {tp: OffsetAndMetadata(o) for tp, o in plan.items()}, timeout=timeout)


def run_reset(args: argparse.Namespace) -> int:
    if args.execute and args.dry_run:
        raise CliError("use either --execute or --dry-run", EXIT_USAGE)
    when = reset_time_ms(args, int(time.time() * 1000))
    wanted_partitions(args)  # a bad --topic is a usage error before anything connects
    with open_admin(args) as admin:
        plan, committed = reset_plan(admin, args, when)
        rows = [(args.group, tp.topic, tp.partition, committed[tp].offset if tp in committed else None, plan[tp])
                for tp in sorted(plan)]
        emit_rows(args.output, ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"), rows)
        if not args.execute:
            info("Dry run: nothing changed. Add --execute to commit these offsets.")
            return EXIT_OK
        commit_plan(admin, args.group, plan, args.timeout)
    info(f"Offsets of group {args.group} reset for {len(plan)} partition(s).")
    return EXIT_OK


def run_delete(args: argparse.Namespace) -> int:
    return delete_groups(args, "group", AdminClient.delete_consumer_groups)


def delete_groups(args: argparse.Namespace, noun: str,
                  delete: Callable[[AdminClient, list[str], float], None]) -> int:
    """Delete the --group groups with ``delete(admin, group ids, timeout)`` and say so (``noun``: what they are)."""
    with open_admin(args) as admin:
        delete(admin, args.group, args.timeout)
    info(f"Deleted {noun}{'s' if len(args.group) > 1 else ''} {', '.join(args.group)}.")
    return EXIT_OK

"""``pykafka share-groups list | describe | reset-offsets | delete-offsets | delete`` (Kafka's
kafka-share-groups.sh) for share groups (KIP-932).

describe shows each group's state, epochs and members with their assignments, and per share partition its start
offset and lag (the records from the start offset to the end of the log not yet delivered for good); --offsets shows
only those. reset-offsets prints the plan and changes nothing unless --execute is given (a group id no group holds
yet becomes a share group with those offsets); it, delete-offsets and delete refuse a group with members (exit code
5)."""

from __future__ import annotations

import argparse
from typing import Any

from pykafka_client.admin.admin_client import AdminClient
from pykafka_client.admin.group_types import SHARE, ShareGroupDescription
from pykafka_client.admin.types import OffsetSpec
from pykafka_client.cli.common import (
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
from pykafka_client.cli.groups import delete_groups, parse_datetime_ms, plan_offsets, wanted_partitions
from pykafka_client.cli.output import emit, emit_rows, info, table
from pykafka_client.errors import GroupIdNotFoundError
from pykafka_client.structs import TopicPartition


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    groups = add_command(subparsers, "share-groups", "list, describe, reset the offsets of and delete share groups (KIP-932)", [],
                         description=__doc__.split("\n\n", 1)[1] if __doc__ else None)
    sub = groups.add_subparsers(dest="action", metavar="ACTION", required=True)

    p = add_command(sub, "list", "list share groups with their state", [common],
                    epilog="example:\n  pykafka share-groups list --output json")
    output_flag(p)
    p.set_defaults(run=run_list)

    p = add_command(sub, "describe", "state, epochs, assignor and members with their assigned partitions", [common],
                    epilog="example:\n  pykafka share-groups describe orders-queue")
    p.add_argument("groups", nargs="+", metavar="GROUP", help="share groups to describe")
    p.add_argument("--offsets", action="store_true",
                   help="only the share partitions' start offsets and lag (GROUP TOPIC PARTITION START-OFFSET LAG)")
    output_flag(p)
    p.set_defaults(run=run_describe)

    p = add_command(
        sub, "reset-offsets", "plan (and with --execute, set) new start offsets for an empty share group", [common],
        epilog="examples:\n  pykafka share-groups reset-offsets --group orders-queue --topic orders --to-earliest\n"
               "  pykafka share-groups reset-offsets --group orders-queue --all-topics --to-latest --execute")
    p.add_argument("--group", required=True, metavar="GROUP", help="the share group (it must have no members)")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--topic", action="append", metavar="TOPIC[:P,P...]",
                       help="a topic, optionally some partitions (repeatable)")
    which.add_argument("--all-topics", action="store_true", help="every topic the group has share partitions of")
    to = p.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true", help="the earliest offset still in the log")
    to.add_argument("--to-latest", action="store_true", help="the end of the log")
    to.add_argument("--to-offset", type=int, metavar="OFFSET", help="this offset (kept within the log; KIP-1323)")
    to.add_argument("--to-datetime", metavar="DATETIME",
                    help="the first offset at or after YYYY-MM-DDTHH:MM:SS[.sss][Z|+HH:MM] (no zone: local time)")
    p.add_argument("--execute", action="store_true", help="set the plan's start offsets (without it nothing changes)")
    p.add_argument("--dry-run", action="store_true", help="only print the plan (the default)")
    output_flag(p)
    p.set_defaults(run=run_reset)

    p = add_command(sub, "delete-offsets", "delete a share group's state of whole topics (they restart at "
                    "share.auto.offset.reset)", [common],
                    epilog="example:\n  pykafka share-groups delete-offsets --group orders-queue --topic orders")
    p.add_argument("--group", required=True, metavar="GROUP", help="the share group (it must have no members)")
    p.add_argument("--topic", action="append", required=True, metavar="TOPIC", help="a topic (repeatable)")
    p.set_defaults(run=run_delete_offsets)

    p = add_command(sub, "delete", "delete empty share groups", [common],
                    epilog="example:\n  pykafka share-groups delete --group orders-queue")
    p.add_argument("--group", action="append", required=True, metavar="GROUP",
                   help="a share group to delete (repeatable)")
    p.set_defaults(run=run_delete)


def run_list(args: argparse.Namespace) -> int:
    with open_admin(args) as admin:
        listing = admin.list_groups(timeout=args.timeout, types=[SHARE])
    emit_rows(args.output, ("GROUP", "STATE"), [(g.group_id, g.state) for g in listing])
    return EXIT_OK


MEMBER_COLUMNS = ("MEMBER-ID", "CLIENT-ID", "HOST", "EPOCH", "ASSIGNMENT")


OFFSET_COLUMNS = ("GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG")


def _latest(admin: AdminClient, tps: list[TopicPartition], timeout: float) -> dict[TopicPartition, int]:
    """Each partition's end of the log."""
    found = admin.list_offsets(dict.fromkeys(tps, OffsetSpec.latest()), timeout=timeout) if tps else {}
    return {TopicPartition(tp[0], tp[1]): o.offset for tp, o in found.items()}


def share_offsets(admin: AdminClient, d: ShareGroupDescription, timeout: float) -> list[dict[str, Any]]:
    """Per share partition of the group (those it has state for and those its members are assigned) its start
    offset (None: not initialized yet) and lag: the records from the start offset to the end of the log not yet
    delivered for good, as the broker counts it (Kafka 4.2, KIP-1226; from an older broker, the end of the log
    minus the start offset)."""
    starts = admin.list_share_group_offsets(d.group_id, timeout=timeout)
    tps = sorted(set(starts) | {tp for m in d.members for tp in m.assignment})
    unmeasured = [tp for tp in tps if (info := starts.get(tp)) is not None and info.lag is None]
    ends = _latest(admin, unmeasured, timeout)
    out = []
    for tp in tps:
        info = starts.get(tp)
        lag = None if info is None else info.lag
        if info is not None and lag is None and tp in ends:
            lag = max(0, ends[tp] - info.start_offset)
        out.append({"topic": tp.topic, "partition": tp.partition,
                    "start_offset": None if info is None else info.start_offset, "lag": lag})
    return out


def run_describe(args: argparse.Namespace) -> int:
    with open_admin(args) as admin:
        described = admin.describe_share_groups(args.groups, timeout=args.timeout)
        offsets = {g: share_offsets(admin, described[g], args.timeout) for g in args.groups}
    if args.offsets:
        emit_rows(args.output, OFFSET_COLUMNS, [(g, o["topic"], o["partition"], o["start_offset"], o["lag"])
                                                for g in args.groups for o in offsets[g]])
        return EXIT_OK
    out: list[dict[str, Any]] = []
    for group in args.groups:
        d = described[group]
        out.append({
            "group": d.group_id, "state": d.state, "assignor": d.partition_assignor, "group_epoch": d.group_epoch,
            "assignment_epoch": d.target_assignment_epoch,
            "coordinator": None if d.coordinator is None else {"id": d.coordinator.id, "host": d.coordinator.host,
                                                               "port": d.coordinator.port},
            "members": [
                {"member_id": m.member_id, "client_id": m.client_id, "host": m.host, "member_epoch": m.member_epoch,
                 "rack_id": m.rack_id, "subscribed_topics": m.subscribed_topic_names,
                 "assignment": [f"{tp.topic}-{tp.partition}" for tp in m.assignment]}
                for m in d.members
            ],
            "offsets": offsets[group],
        })
    if args.output == "json":
        emit("json", out, [], [])
        return EXIT_OK
    for i, g in enumerate(out):
        if i:
            print()
        coordinator = g["coordinator"]
        where = f"{coordinator['host']}:{coordinator['port']} (id: {coordinator['id']})" if coordinator else "-"
        print(f"Group: {g['group']}  State: {g['state']}  Assignor: {g['assignor']}  Epoch: {g['group_epoch']}  "
              f"Assignment epoch: {g['assignment_epoch']}  Members: {len(g['members'])}  Coordinator: {where}")
        if g["members"]:
            print()
            print(table(MEMBER_COLUMNS, [
                (m["member_id"], m["client_id"], m["host"], m["member_epoch"], ",".join(m["assignment"]) or "-")
                for m in g["members"]
            ]))
        if g["offsets"]:
            print()
            print(table(OFFSET_COLUMNS, [(g["group"], o["topic"], o["partition"], o["start_offset"], o["lag"])
                                         for o in g["offsets"]]))
    return EXIT_OK


def _reset_partitions(admin: AdminClient, args: argparse.Namespace,
                      starts: dict[TopicPartition, Any]) -> list[TopicPartition]:
    if args.all_topics:
        if not starts:
            raise CliError(f"share group {args.group!r} has no share partitions (or does not exist yet); name the "
                           f"topics with --topic", EXIT_NOT_FOUND)
        return sorted(starts)
    wanted = wanted_partitions(args)
    described = admin.describe_topics(list(wanted), timeout=args.timeout)
    out: set[TopicPartition] = set()
    for topic, parts in wanted.items():
        count = len(described[topic].partitions)
        for p in parts if parts is not None else range(count):
            check_partition(topic, p, count)
            out.add(TopicPartition(topic, p))
    return sorted(out)


def _refuse_members(admin: AdminClient, group: str, timeout: float, doing: str) -> None:
    d = admin.describe_share_groups([group], timeout=timeout)[group]
    if d.members:
        raise CliError(f"share group {group!r} has {len(d.members)} member(s) (state {d.state}): stop its consumers "
                       f"before {doing}", EXIT_REFUSED)


def run_reset(args: argparse.Namespace) -> int:
    if args.execute and args.dry_run:
        raise CliError("use either --execute or --dry-run", EXIT_USAGE)
    when = None if args.to_datetime is None else parse_datetime_ms(args.to_datetime)
    wanted_partitions(args)  # a bad --topic is a usage error before anything connects
    with open_admin(args) as admin:
        try:
            _refuse_members(admin, args.group, args.timeout, "resetting its offsets")
            starts = admin.list_share_group_offsets(args.group, timeout=args.timeout)
        except GroupIdNotFoundError:  # a new group: --execute creates it with these offsets (Kafka 4.2)
            starts = {}
        tps = _reset_partitions(admin, args, starts)
        # the consumer groups' strategies (no --shift-by here: a share group has no committed offset to shift)
        plan = plan_offsets(admin, args, tps, {}, when)
        rows = []
        for tp in tps:
            start = starts.get(tp)
            rows.append((args.group, tp.topic, tp.partition, None if start is None else start.start_offset, plan[tp]))
        emit_rows(args.output, ("GROUP", "TOPIC", "PARTITION", "START-OFFSET", "NEW-START-OFFSET"), rows)
        if not args.execute:
            info("Dry run: nothing changed. Add --execute to set these start offsets.")
            return EXIT_OK
        admin.alter_share_group_offsets(args.group, {(tp.topic, tp.partition): o for tp, o in plan.items()},
                                        timeout=args.timeout)
    info(f"Start offsets of share group {args.group} reset for {len(plan)} partition(s).")
    return EXIT_OK


def run_delete_offsets(args: argparse.Namespace) -> int:
    with open_admin(args) as admin:
        _refuse_members(admin, args.group, args.timeout, "deleting its offsets")
        admin.delete_share_group_offsets(args.group, args.topic, timeout=args.timeout)
    info(f"Deleted the offsets of topic{'s' if len(args.topic) > 1 else ''} {', '.join(args.topic)} from share "
         f"group {args.group}.")
    return EXIT_OK


def run_delete(args: argparse.Namespace) -> int:
    return delete_groups(args, "share group", AdminClient.delete_share_groups)

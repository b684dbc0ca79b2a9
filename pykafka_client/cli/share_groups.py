"""``pykafka share-groups list | describe | delete`` (Kafka's kafka-share-groups.sh) for share groups (KIP-932).

describe shows each group's state, epochs and members with their assignments; the share-partition offsets
(start offset, lag) and reset-offsets need the share-partition state persisted, which the broker does not do
yet. delete refuses a group with members (exit code 5)."""

from __future__ import annotations

import argparse
from typing import Any

from pykafka_client.admin.admin_client import AdminClient
from pykafka_client.admin.group_types import SHARE
from pykafka_client.cli.common import EXIT_OK, add_command, open_admin, output_flag
from pykafka_client.cli.groups import delete_groups
from pykafka_client.cli.output import emit, emit_rows, table


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    groups = add_command(subparsers, "share-groups", "list, describe and delete share groups (KIP-932)", [],
                         description=__doc__.split("\n\n", 1)[1] if __doc__ else None)
    sub = groups.add_subparsers(dest="action", metavar="ACTION", required=True)

    p = add_command(sub, "list", "list share groups with their state", [common],
                    epilog="example:\n  pykafka share-groups list --output json")
    output_flag(p)
    p.set_defaults(run=run_list)

    p = add_command(sub, "describe", "state, epochs, assignor and members with their assigned partitions", [common],
                    epilog="example:\n  pykafka share-groups describe orders-queue")
    p.add_argument("groups", nargs="+", metavar="GROUP", help="share groups to describe")
    output_flag(p)
    p.set_defaults(run=run_describe)

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


def run_describe(args: argparse.Namespace) -> int:
    with open_admin(args) as admin:
        described = admin.describe_share_groups(args.groups, timeout=args.timeout)
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
    return EXIT_OK


def run_delete(args: argparse.Namespace) -> int:
    return delete_groups(args, "share group", AdminClient.delete_share_groups)

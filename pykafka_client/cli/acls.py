"""``pykafka acls add | list | remove`` (Kafka's kafka-acls.sh): ACL bindings on topics, groups, transactional ids
and the cluster, with Kafka's flags (``--allow-principal``, ``--deny-principal``, ``--allow-host``, ``--deny-host``,
``--operation``, ``--resource-pattern-type``)."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import Any

from pykafka_client.cli.common import EXIT_OK, EXIT_USAGE, CliError, add_command, open_admin, output_flag
from pykafka_client.cli.output import emit_rows, info
from pykafka_client.protocol.acl import (
    CLUSTER_NAME,
    WILDCARD_HOST,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)

COLUMNS = ("RESOURCE-TYPE", "PATTERN-TYPE", "NAME", "PRINCIPAL", "HOST", "OPERATION", "PERMISSION")
_OPERATIONS = {op.name.replace("_", ""): op for op in AclOperation if op not in (AclOperation.UNKNOWN, AclOperation.ANY)}


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    acls = add_command(subparsers, "acls", "add, list and remove ACLs", [],
                       description="Add, list and remove the ACL bindings of a broker with an authorizer "
                                   "(authorizer.class.name).")
    sub = acls.add_subparsers(dest="action", metavar="ACTION", required=True)

    p = add_command(sub, "add", "add ACLs: each principal x host x operation on each resource", [common],
                    epilog="examples:\n  pykafka acls add --allow-principal User:alice --operation Read --operation Describe "
                           "--topic orders\n  pykafka acls add --allow-principal User:app --operation All --topic app- "
                           "--resource-pattern-type prefixed\n  pykafka acls add --deny-principal User:* "
                           "--deny-host 10.0.0.9 --operation Write --topic orders")
    _resources(p, ("literal", "prefixed"))
    _principals(p)
    p.set_defaults(run=run_add)

    p = add_command(sub, "list", "the ACLs of the named resources (all when none is named)", [common],
                    epilog="examples:\n  pykafka acls list\n  pykafka acls list --topic orders --resource-pattern-type match"
                           "\n  pykafka acls list --principal User:alice")
    _resources(p, ("literal", "prefixed", "any", "match"), default=None)
    p.add_argument("--principal", metavar="PRINCIPAL", help="only the ACLs of this principal (User:<name>)")
    output_flag(p)
    p.set_defaults(run=run_list)

    p = add_command(sub, "remove", "remove the ACLs of the named resources that match the given flags", [common],
                    epilog="examples:\n  pykafka acls remove --allow-principal User:alice --operation Read --topic orders"
                           "\n  pykafka acls remove --topic orders   (every ACL of the literal pattern orders)")
    _resources(p, ("literal", "prefixed", "any", "match"))
    _principals(p, hosts_default=None)
    p.set_defaults(run=run_remove)


def _resources(p: argparse.ArgumentParser, pattern_types: tuple[str, ...], default: str | None = "literal") -> None:
    p.add_argument("--topic", action="append", default=[], metavar="TOPIC", help="a topic (repeatable; * for all)")
    p.add_argument("--group", action="append", default=[], metavar="GROUP", help="a consumer group (repeatable)")
    p.add_argument("--transactional-id", action="append", default=[], metavar="ID",
                   help="a transactional id (repeatable)")
    p.add_argument("--cluster", action="store_true", help="the cluster resource")
    p.add_argument("--resource-pattern-type", choices=pattern_types, default=default, type=str.lower,
                   help=f"how the names match (default: {default or 'any pattern of the named resources'}); match "
                        "selects every pattern that applies to the named resource")


def _principals(p: argparse.ArgumentParser, hosts_default: str | None = WILDCARD_HOST) -> None:
    p.add_argument("--allow-principal", action="append", default=[], metavar="PRINCIPAL",
                   help="principal to allow, User:<name> or User:* (repeatable)")
    p.add_argument("--deny-principal", action="append", default=[], metavar="PRINCIPAL",
                   help="principal to deny (repeatable)")
    p.add_argument("--allow-host", action="append", default=[], metavar="HOST",
                   help=f"host the allow applies to (repeatable; default {hosts_default or 'any'})")
    p.add_argument("--deny-host", action="append", default=[], metavar="HOST",
                   help=f"host the deny applies to (repeatable; default {hosts_default or 'any'})")
    p.add_argument("--operation", action="append", default=[], metavar="OPERATION",
                   help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, "
                        "IdempotentWrite or All (repeatable)")
    p.set_defaults(hosts_default=hosts_default)


def parse_operation(text: str) -> AclOperation:
    """``Read``, ``IdempotentWrite``, ``describe-configs``, ``DESCRIBE_CONFIGS`` -> the AclOperation."""
    op = _OPERATIONS.get(text.replace("-", "").replace("_", "").upper())
    if op is None:
        names = ", ".join(o.name.title().replace("_", "") for o in _OPERATIONS.values())
        raise CliError(f"unknown --operation {text!r}: expected one of {names}", EXIT_USAGE)
    return op


def _named(args: argparse.Namespace) -> list[tuple[ResourceType, str]]:
    named = [(ResourceType.TOPIC, n) for n in args.topic] + [(ResourceType.GROUP, n) for n in args.group]
    named += [(ResourceType.TRANSACTIONAL_ID, n) for n in args.transactional_id]
    if args.cluster:
        named.append((ResourceType.CLUSTER, CLUSTER_NAME))
    return named


def _pattern_type(args: argparse.Namespace) -> PatternType:
    return PatternType[args.resource_pattern_type.upper()] if args.resource_pattern_type else PatternType.ANY


Entry = tuple["str | None", "str | None", "AclOperation | None", AclPermissionType]


def entries_from_args(args: argparse.Namespace, operations: list[AclOperation | None]) -> list[Entry]:
    """(principal, host, operation, permission) for every flag combination; hosts default to ``hosts_default``."""
    out: list[Entry] = []
    for principals, hosts, perm in ((args.allow_principal, args.allow_host, AclPermissionType.ALLOW),
                                    (args.deny_principal, args.deny_host, AclPermissionType.DENY)):
        for principal in principals:
            _check_principal(principal)
            for host in hosts or [args.hosts_default]:
                out.extend((principal, host, op, perm) for op in operations)
    return out


def _check_principal(principal: str) -> None:
    kind, sep, name = principal.partition(":")
    if not sep or not kind or not name:
        raise CliError(f"principal {principal!r} is not <type>:<name>, e.g. User:alice (User:* for everyone)",
                       EXIT_USAGE)


def _rows(bindings: Iterable[AclBinding]) -> list[tuple[str, str, str, str, str, str, str]]:
    return [(b.pattern.resource_type.name, b.pattern.pattern_type.name, b.pattern.name, b.entry.principal,
             b.entry.host, b.entry.operation.name, b.entry.permission_type.name) for b in bindings]


def run_add(args: argparse.Namespace) -> int:
    named = _named(args)
    if not named:
        raise CliError("name a resource: --topic, --group, --transactional-id or --cluster", EXIT_USAGE)
    if not args.operation:
        raise CliError("give at least one --operation", EXIT_USAGE)
    if not args.allow_principal and not args.deny_principal:
        raise CliError("give --allow-principal and/or --deny-principal", EXIT_USAGE)
    operations: list[AclOperation | None] = [parse_operation(o) for o in args.operation]
    pattern = _pattern_type(args)
    entries = entries_from_args(args, operations)
    bindings = [AclBinding(ResourcePattern(rtype, name, pattern),
                           AccessControlEntry(principal or "", host or WILDCARD_HOST, op, perm))
                for rtype, name in named for principal, host, op, perm in entries if op is not None]
    with open_admin(args) as admin:
        admin.create_acls(bindings, timeout=args.timeout)
    info(f"Added {len(bindings)} ACL{'' if len(bindings) == 1 else 's'}:")
    for b in bindings:
        info(f"  {b}")
    return EXIT_OK


def filters_from_args(args: argparse.Namespace, principals: list[Entry] | None) -> list[AclBindingFilter]:
    named: list[tuple[ResourceType, str | None]] = list(_named(args)) or [(ResourceType.ANY, None)]
    pattern = _pattern_type(args) if _named(args) else PatternType.ANY
    entries = ([AccessControlEntryFilter(p, h, op or AclOperation.ANY, perm) for p, h, op, perm in principals]
               if principals else [AccessControlEntryFilter()])
    return [AclBindingFilter(ResourcePatternFilter(rtype, name, pattern), e) for rtype, name in named for e in entries]


def run_list(args: argparse.Namespace) -> int:
    principal: list[Entry] | None = [(args.principal, None, None, AclPermissionType.ANY)] if args.principal else None
    if args.principal:
        _check_principal(args.principal)
    found: dict[AclBinding, None] = {}
    with open_admin(args) as admin:
        for f in filters_from_args(args, principal):
            for b in admin.describe_acls(f, timeout=args.timeout):
                found[b] = None
    emit_rows(args.output, COLUMNS, _rows(found))
    return EXIT_OK


def run_remove(args: argparse.Namespace) -> int:
    if not _named(args):
        raise CliError("name the resources whose ACLs to remove: --topic, --group, --transactional-id or --cluster",
                       EXIT_USAGE)
    operations: list[AclOperation | None] = [parse_operation(o) for o in args.operation] or [None]
    entries = entries_from_args(args, operations)
    if args.operation and not entries:
        raise CliError("--operation needs --allow-principal or --deny-principal to say whose ACLs to remove", EXIT_USAGE)
    for hosts, flag in ((args.allow_host, "allow"), (args.deny_host, "deny")):
        if hosts and not getattr(args, f"{flag}_principal"):  # else the filter would match every ACL of the resource
            raise CliError(f"--{flag}-host needs --{flag}-principal to say whose ACLs to remove", EXIT_USAGE)
    with open_admin(args) as admin:
        removed = admin.delete_acls(filters_from_args(args, list(entries)), timeout=args.timeout)
    gone = list(dict.fromkeys(b for bs in removed.values() for b in bs))
    info(f"Removed {len(gone)} ACL{'' if len(gone) == 1 else 's'}:")
    for b in gone:
        info(f"  {b}")
    return EXIT_OK

"""``kafka-acls.sh``: ``--add``, ``--remove`` and ``--list`` with Kafka's flags (``--topic``, ``--group``,
``--transactional-id``, ``--cluster``, ``--resource-pattern-type``, ``--allow-principal``/``--deny-principal``,
``--allow-host``/``--deny-host``, ``--operation`` (default All), ``--principal``, the ``--producer`` /
``--consumer`` / ``--idempotent`` conveniences and ``--force``) and Kafka's output: each resource's
``Current ACLs for resource `ResourcePattern(...)`:`` followed by its entries, on the ``pykafka acls``
functions."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence

from pykafka_client.admin import AdminClient
from pykafka_client.cli.acls import entries_from_args, filters_from_args, parse_operation
from pykafka_client.cli.common import open_admin
from pykafka_client.cli.kafka_scripts.base import (
    ToolParser,
    cli_args,
    connection_flags,
    failure_text,
    one_action,
    run_tool,
    usage_exit,
)
from pykafka_client.protocol.acl import (
    CLUSTER_NAME,
    WILDCARD_HOST,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)

PATTERN_TYPES = ("ANY", "MATCH", "LITERAL", "PREFIXED")


def build_parser() -> ToolParser:
    p = ToolParser("kafka-acls.sh", "This tool helps to manage acls on kafka.")
    connection_flags(p)
    for action, text in (("add", "Indicates you are trying to add ACLs."),
                         ("remove", "Indicates you are trying to remove ACLs."),
                         ("list", "List ACLs for the specified resource, use --topic <topic> or --group <group> or "
                                  "--cluster to specify a resource.")):
        p.add_argument(f"--{action}", action="store_true", help=text)
    p.add_argument("--topic", action="append", default=[], help="topic to which ACLs should be added or removed. A "
                   "value of '*' indicates ACL should apply to all topics.")
    p.add_argument("--group", action="append", default=[], help="Consumer Group to which the ACLs should be added or "
                   "removed. A value of '*' indicates the ACLs should apply to all groups.")
    p.add_argument("--transactional-id", action="append", default=[], help="The transactionalId to which ACLs should "
                   "be added or removed. A value of '*' indicates the ACLs should apply to all transactionalIds.")
    p.add_argument("--cluster", action="store_true", help="Add/Remove cluster ACLs.")
    p.add_argument("--resource-pattern-type", default="LITERAL", type=str.upper, metavar="ANY|MATCH|LITERAL|PREFIXED",
                   help="The type of the resource pattern or pattern filter. When adding acls, this should be a "
                        "specific pattern type, e.g. 'literal' or 'prefixed'. When listing or removing acls, a "
                        "specific pattern type can be used to list or remove acls from specific resource patterns, "
                        "or use the filter values of 'any' or 'match'. (default: LITERAL)")
    p.add_argument("--operation", action="append", default=[], help="Operation that is being allowed or denied "
                   "(Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, "
                   "IdempotentWrite, All). (default: All)")
    p.add_argument("--allow-principal", action="append", default=[], help="principal is in principalType:name "
                   "format. For example, User:* is the wild card indicating all users.")
    p.add_argument("--deny-principal", action="append", default=[], help="principal is in principalType:name "
                   "format. Deny rules take precedence over allow rules.")
    p.add_argument("--principal", action="append", default=[], help="List ACLs for the specified principal. "
                   "principal is in principalType:name format. Multiple --principal option can be passed.")
    p.add_argument("--allow-host", action="append", default=[], help="Host from which principals listed in "
                   "--allow-principal will have access. (default: * when --allow-principal is given)")
    p.add_argument("--deny-host", action="append", default=[], help="Host from which principals listed in "
                   "--deny-principal will be denied access. (default: * when --deny-principal is given)")
    p.add_argument("--producer", action="store_true", help="Convenience option to add/remove ACLs for producer role. "
                   "This will generate ACLs that allows WRITE,DESCRIBE and CREATE on topic.")
    p.add_argument("--idempotent", action="store_true", help="Enable idempotence for the producer. This should be "
                   "used in combination with the --producer option.")
    p.add_argument("--consumer", action="store_true", help="Convenience option to add/remove ACLs for consumer "
                   "role. This will generate ACLs that allows READ,DESCRIBE on topic and READ on group.")
    p.add_argument("--force", action="store_true", help="Assume Yes to all queries and do not prompt.")
    return p


def pattern_text(p: ResourcePattern | ResourcePatternFilter) -> str:
    """Kafka's ``ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)``."""
    return f"ResourcePattern(resourceType={p.resource_type.name}, name={p.name}, patternType={p.pattern_type.name})"


def entry_text(e: AccessControlEntry) -> str:
    """Kafka's ``(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)``."""
    return (f"(principal={e.principal}, host={e.host}, operation={e.operation.name}, "
            f"permissionType={e.permission_type.name})")


def _block(title: str, entries: Iterable[AccessControlEntry]) -> str:
    lines = "\n".join("\t" + entry_text(e) for e in entries)
    return f"{title}: \n {lines} \n"


def _check(parser: ToolParser, opts: argparse.Namespace, action: str) -> None:
    if opts.resource_pattern_type not in PATTERN_TYPES:
        usage_exit(parser, f"Unknown --resource-pattern-type {opts.resource_pattern_type!r}: expected one of "
                           f"{', '.join(PATTERN_TYPES)}")
    if action == "add" and opts.resource_pattern_type in ("ANY", "MATCH"):
        usage_exit(parser, f"A '--resource-pattern-type' value of '{opts.resource_pattern_type}' is not valid when "
                           "adding acls.")
    if action == "list":
        given = [f for f in ("producer", "consumer", "allow_host", "allow_principal", "deny_host", "deny_principal")
                 if getattr(opts, f)]
        if given:
            usage_exit(parser, f"Option \"[list]\" can't be used with option \"[{given[0].replace('_', '-')}]\"")
    elif opts.principal:
        usage_exit(parser, "Option \"[principal]\" can only be used with \"[list]\"")
    if opts.producer or opts.consumer:
        if opts.operation or opts.deny_principal or opts.deny_host:
            usage_exit(parser, "With --producer or --consumer, --operation, --deny-principal and --deny-host are "
                               "inferred: do not give them")
        if opts.producer and not opts.topic:
            usage_exit(parser, "With --producer you must specify a --topic")
        if opts.consumer and (not opts.topic or not opts.group or (not opts.producer and opts.cluster)):
            usage_exit(parser, "With --consumer you must specify a --topic and a --group and no --cluster option "
                               "should be specified.")
    if opts.idempotent and not opts.producer:
        usage_exit(parser, "The --idempotent option is only available if --producer is set")


def _bindings(opts: argparse.Namespace) -> dict[ResourcePattern, list[AccessControlEntry]]:
    """The entries to add or remove, by resource pattern (Kafka's resource -> ACLs)."""
    pattern_type = PatternType[opts.resource_pattern_type]

    def patterns(kind: ResourceType, names: list[str]) -> list[ResourcePattern]:
        return [ResourcePattern(kind, n.strip(), pattern_type) for n in names]

    cluster = [ResourcePattern(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL)]
    topics, groups = patterns(ResourceType.TOPIC, opts.topic), patterns(ResourceType.GROUP, opts.group)
    txn_ids = patterns(ResourceType.TRANSACTIONAL_ID, opts.transactional_id)
    out: dict[ResourcePattern, list[AccessControlEntry]] = {}

    def grant(resources: list[ResourcePattern], operations: list[AclOperation]) -> None:
        for resource in resources:
            have = out.setdefault(resource, [])
            have.extend(e for e in _entries(opts, operations) if e not in have)

    if opts.producer or opts.consumer:
        if opts.producer:
            grant(topics, [AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE])
            grant(txn_ids, [AclOperation.WRITE, AclOperation.DESCRIBE])
            if opts.idempotent:
                grant(cluster, [AclOperation.IDEMPOTENT_WRITE])
        if opts.consumer:
            grant(topics, [AclOperation.READ, AclOperation.DESCRIBE])
            grant(groups, [AclOperation.READ])
        return out
    operations = [parse_operation(o) for o in opts.operation] or [AclOperation.ALL]
    grant(topics + groups + txn_ids + (cluster if opts.cluster else []), operations)
    return out


def _entries(opts: argparse.Namespace, operations: list[AclOperation]) -> list[AccessControlEntry]:
    found = entries_from_args(opts, list(operations))
    return [AccessControlEntry(principal or "", host or WILDCARD_HOST, op, perm)
            for principal, host, op, perm in found if op is not None]


def _list(admin: AdminClient, opts: argparse.Namespace, timeout: float) -> None:
    """Kafka's listing: per resource pattern its entries (those of ``--principal`` only, when given)."""
    filters = filters_from_args(opts, None)
    found: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for f in filters:
        for b in admin.describe_acls(f, timeout=timeout):
            entries = found.setdefault(b.pattern, [])
            if b.entry not in entries:
                entries.append(b.entry)
    principals = opts.principal or [None]
    for principal in principals:
        if principal is not None:
            print(f"ACLs for principal `{principal}`")
        for pattern, entries in found.items():
            shown = [e for e in entries if principal is None or e.principal == principal]
            if shown:
                print(_block(f"Current ACLs for resource `{pattern_text(pattern)}`", shown))


def _confirm(opts: argparse.Namespace, question: str) -> bool:
    if opts.force:
        return True
    print(question, flush=True)
    return sys.stdin.readline().strip().lower() == "y"


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    opts = parser.parse_args(argv)
    parser.required(opts, "bootstrap_server")
    action = one_action(parser, opts, ("add", "remove", "list"))
    _check(parser, opts, action)
    # what pykafka acls' helpers read from its own flags
    opts.hosts_default = WILDCARD_HOST
    args = cli_args(opts.bootstrap_server, opts.command_config)
    named = opts.topic or opts.group or opts.transactional_id or opts.cluster

    def on_error(e: BaseException) -> None:
        print(f"Error while executing ACL command: {failure_text(e, args)}")

    def body() -> int:
        if action in ("add", "remove") and not named:
            usage_exit(parser, "You must provide at least one resource: --topic <topic> or --cluster or "
                               "--group <group> or --transactional-id <transactionalId>")
        with open_admin(args) as admin:
            if action == "add":
                bindings = _bindings(opts)
                if not any(bindings.values()):
                    usage_exit(parser, "You must specify one of: --allow-principal, --deny-principal when trying "
                                       "to add ACLs.")
                for pattern, entries in bindings.items():
                    print(_block(f"Adding ACLs for resource `{pattern_text(pattern)}`", entries))
                    admin.create_acls([AclBinding(pattern, e) for e in entries], timeout=args.timeout)
            elif action == "remove":
                _remove(admin, opts, args.timeout)
            _list(admin, opts, args.timeout)
        return 0

    return run_tool(body, on_error)


def _remove(admin: AdminClient, opts: argparse.Namespace, timeout: float) -> None:
    if opts.allow_principal or opts.deny_principal:
        for pattern, entries in _bindings(opts).items():
            question = ("Are you sure you want to remove ACLs: \n "
                        + "\n".join("\t" + entry_text(e) for e in entries)
                        + f" \n from resource filter `{pattern_text(pattern.to_filter())}`? (y/n)")
            if _confirm(opts, question):
                admin.delete_acls([AclBindingFilter(pattern.to_filter(), e.to_filter()) for e in entries],
                                  timeout=timeout)
        return
    for f in filters_from_args(opts, None):
        if _confirm(opts, f"Are you sure you want to delete all ACLs for resource filter "
                          f"`{pattern_text(f.pattern)}`? (y/n)"):
            admin.delete_acls([f], timeout=timeout)


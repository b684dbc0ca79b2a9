"""``pykafka configs describe | alter`` (Kafka's kafka-configs.sh) for a topic or a broker; alter is
incremental (IncrementalAlterConfigs): ``--add-config`` sets keys, ``--delete-config`` removes overrides."""

from __future__ import annotations

import argparse
from typing import Any

from pykafka_client.admin.admin_client import AdminClient
from pykafka_client.admin.group_types import AlterConfigOp, AlterConfigOpType
from pykafka_client.admin.types import ConfigResource, ConfigResourceType, ConfigSource
from pykafka_client.cli.common import (
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    add_command,
    open_admin,
    output_flag,
    split_csv,
)
from pykafka_client.cli.output import emit_rows, info


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    configs = add_command(subparsers, "configs", "describe and alter topic and broker configs", [],
                          description="Describe and incrementally alter the configs of a topic or a broker.")
    sub = configs.add_subparsers(dest="action", metavar="ACTION", required=True)

    p = add_command(sub, "describe", "config overrides (or --all configs) of a topic or broker", [common],
                    epilog="examples:\n  pykafka configs describe --topic orders\n  pykafka configs describe --broker 1 --all")
    _entity(p)
    p.add_argument("--all", action="store_true", help="every config, defaults included (default: overrides only)")
    output_flag(p)
    p.set_defaults(run=run_describe)

    p = add_command(sub, "alter", "set or delete config overrides of a topic or broker", [common],
                    epilog="example:\n  pykafka configs alter --topic orders --add-config retention.ms=60000,cleanup.policy=compact "
                           "--delete-config segment.bytes")
    _entity(p)
    p.add_argument("--add-config", action="append", default=[], metavar="K=V[,K=V...]",
                   help="configs to set; a value with commas goes in brackets: k=[a,b] (repeatable)")
    p.add_argument("--delete-config", action="append", default=[], metavar="K[,K...]",
                   help="overrides to remove (repeatable)")
    p.set_defaults(run=run_alter)


def _entity(p: argparse.ArgumentParser) -> None:
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--topic", metavar="TOPIC")
    which.add_argument("--broker", metavar="BROKER_ID", type=int)


def _resource(args: argparse.Namespace) -> ConfigResource:
    if args.topic is not None:
        return ConfigResource(ConfigResourceType.TOPIC, args.topic)
    return ConfigResource(ConfigResourceType.BROKER, str(args.broker))


def check_broker(admin: AdminClient, broker: int | None, timeout: float) -> None:
    """``broker`` (None: no broker asked for) is a broker of the cluster (a request to any other would wait
    --timeout for it to appear)."""
    if broker is None:
        return
    ids = sorted(n.id for n in admin.describe_cluster(timeout=timeout).nodes)
    if broker not in ids:
        raise CliError(f"broker {broker} is not in the cluster (its brokers: {', '.join(map(str, ids))}); "
                       "see `pykafka configs describe --help`", EXIT_NOT_FOUND)


def run_describe(args: argparse.Namespace) -> int:
    resource = _resource(args)
    with open_admin(args) as admin:
        check_broker(admin, args.broker, args.timeout)
        entries = admin.describe_configs([resource], timeout=args.timeout)[resource]
    rows = [
        (e.name, "(sensitive)" if e.is_sensitive else e.value, e.source.name, e.is_read_only)
        for e in sorted(entries.values(), key=lambda e: e.name)
        if args.all or e.source not in (ConfigSource.DEFAULT_CONFIG, ConfigSource.STATIC_BROKER_CONFIG)
    ]
    emit_rows(args.output, ("NAME", "VALUE", "SOURCE", "READ-ONLY"), rows)
    return EXIT_OK


def parse_add_config(values: list[str]) -> dict[str, str]:
    """``k=v,k2=[a,b]`` (repeatable) -> {k: v, k2: "a,b"}; commas inside brackets belong to the value."""
    out: dict[str, str] = {}
    for text in values:
        items: list[str] = []
        depth, current = 0, ""
        for c in text:
            if c == "," and depth == 0:
                items.append(current)
                current = ""
                continue
            depth += c == "["
            depth -= c == "]"
            current += c
        items.append(current)
        for item in filter(None, (i.strip() for i in items)):
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise CliError(f"--add-config {item!r} is not KEY=VALUE", EXIT_USAGE)
            if value.startswith("[") and value.endswith("]"):
                value = value[1:-1]
            out[key.strip()] = value
    return out


def alter_configs(admin: AdminClient, resource: ConfigResource, add: dict[str, str], delete: list[str],
                  timeout: float) -> None:
    """Set ``add`` and remove the overrides in ``delete`` (IncrementalAlterConfigs); nothing to change, or a key
    both added and deleted, is a usage error."""
    if not add and not delete:
        raise CliError("nothing to change: give --add-config and/or --delete-config", EXIT_USAGE)
    both = set(add) & set(delete)
    if both:
        raise CliError(f"{', '.join(sorted(both))} both added and deleted", EXIT_USAGE)
    ops = [AlterConfigOp(k, v) for k, v in add.items()]
    ops += [AlterConfigOp(k, None, AlterConfigOpType.DELETE) for k in delete]
    admin.incremental_alter_configs({resource: ops}, timeout=timeout)


def run_alter(args: argparse.Namespace) -> int:
    add = parse_add_config(args.add_config)
    delete = split_csv(args.delete_config)
    with open_admin(args) as admin:
        check_broker(admin, args.broker, args.timeout)
        alter_configs(admin, _resource(args), add, delete, args.timeout)
    what = f"topic {args.topic}" if args.topic is not None else f"broker {args.broker}"
    info(f"Altered the configs of {what}: {len(add)} set, {len(delete)} deleted.")
    return EXIT_OK

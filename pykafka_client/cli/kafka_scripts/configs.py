"""``kafka-configs.sh``: --describe and --alter (--add-config / --delete-config) of topics and brokers, with
Kafka's flags and output, on the ``pykafka configs`` functions; users, clients and IPs (quotas, SCRAM
credentials) in :mod:`~pykafka_client.cli.kafka_scripts.client_configs`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pykafka_client.admin.admin_client import AdminClient
from pykafka_client.admin.types import (
    ClientQuotaEntity,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
)
from pykafka_client.cli.common import CliError, open_admin, split_csv
from pykafka_client.cli.configs import alter_configs, check_broker, parse_add_config
from pykafka_client.cli.kafka_scripts import client_configs
from pykafka_client.cli.kafka_scripts.base import (
    ToolParser,
    cli_args,
    connection_flags,
    failure_text,
    one_action,
    run_tool,
    usage_exit,
)

ACTIONS = ("describe", "alter")

#: Kafka's entity types this script handles, by the name Kafka's --entity-type takes.
ENTITY_TYPES = {"topics": ConfigResourceType.TOPIC, "brokers": ConfigResourceType.BROKER}

#: The config sources a describe without --all shows, per entity type (Kafka's "dynamic configs").
DYNAMIC = {
    ConfigResourceType.TOPIC: (ConfigSource.DYNAMIC_TOPIC_CONFIG,),
    ConfigResourceType.BROKER: (ConfigSource.DYNAMIC_BROKER_CONFIG, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
}


def build_parser() -> ToolParser:
    p = ToolParser("kafka-configs.sh", "Add, remove and describe the configs of topics and brokers.")
    connection_flags(p)
    p.add_argument("--describe", action="store_true", help="List configs for the given entity.")
    p.add_argument("--alter", action="store_true", help="Alter the configuration for the entity.")
    p.add_argument("--entity-type", metavar="TYPE", action="append", default=[],
                   help="Type of entity: topics, brokers, users, clients or ips (users and clients together "
                        "name a user's quota for one client)")
    p.add_argument("--entity-name", metavar="NAME", action="append", default=[],
                   help="Name of entity: a topic name, a broker id, a user, a client id or an IP (one per "
                        "--entity-type, in the same order)")
    p.add_argument("--entity-default", action="store_true",
                   help="The cluster-wide default for brokers, or the default user / client-id / IP")
    p.add_argument("--user", metavar="NAME", help="The user (--entity-type users --entity-name NAME)")
    p.add_argument("--client", metavar="ID", help="The client id (--entity-type clients --entity-name ID)")
    p.add_argument("--ip", metavar="IP", help="The IP (--entity-type ips --entity-name IP)")
    p.add_argument("--user-defaults", action="store_true", help="The default user's quotas")
    p.add_argument("--client-defaults", action="store_true", help="The default client id's quotas")
    p.add_argument("--topic", metavar="TOPIC", help="The topic's name (--entity-type topics --entity-name TOPIC)")
    p.add_argument("--broker", metavar="ID", help="The broker's id (--entity-type brokers --entity-name ID)")
    p.add_argument("--broker-defaults", action="store_true", help="The brokers' cluster-wide default configs")
    p.add_argument("--add-config", metavar="K=V,K=[V1,V2]", help="Configs to add or update, comma-separated; a value "
                                                                 "with commas goes in square brackets")
    p.add_argument("--delete-config", metavar="K,K", help="Config overrides to remove, comma-separated")
    p.add_argument("--all", action="store_true", help="Every config of the entity, defaults included (--describe)")
    p.add_argument("--force", action="store_true", help="Accepted for Kafka's compatibility (no effect)")
    return p


def _client_entity(parser: ToolParser, opts: argparse.Namespace) -> client_configs.Selection | None:
    """The user / client / IP the flags name (None: the flags name a topic or a broker)."""
    selection: client_configs.Selection = {}
    for flag, kind in (("user", ClientQuotaEntity.USER), ("client", ClientQuotaEntity.CLIENT_ID),
                       ("ip", ClientQuotaEntity.IP)):
        if getattr(opts, flag) is not None:
            selection[kind] = getattr(opts, flag)
    if opts.user_defaults:
        selection[ClientQuotaEntity.USER] = None
    if opts.client_defaults:
        selection[ClientQuotaEntity.CLIENT_ID] = None
    typed = [t for t in opts.entity_type if t in client_configs.ENTITY_TYPES]
    if typed and len(typed) != len(opts.entity_type):
        usage_exit(parser, "Only users and clients can be named together")
    if typed and (len(opts.entity_name) > len(typed) or (opts.entity_default and len(opts.entity_name) >= len(typed))):
        usage_exit(parser, "An entity name or --entity-default is given for each --entity-type, in order")
    for i, t in enumerate(typed):
        kind = client_configs.ENTITY_TYPES[t]
        selection[kind] = opts.entity_name[i] if i < len(opts.entity_name) else (
            None if opts.entity_default else client_configs.Every.EVERY)
    if len(selection) > 1 and ClientQuotaEntity.IP in selection:
        usage_exit(parser, "An IP can not be combined with a user or a client")
    return selection or None


def _entity(parser: ToolParser, opts: argparse.Namespace) -> tuple[ConfigResourceType, str | None]:
    """The entity type and name (None: every entity of the type) the flags name; '' is the brokers' default."""
    if len(opts.entity_type) > 1 or len(opts.entity_name) > 1:
        usage_exit(parser, "Only users and clients can be named together")
    entity_type = opts.entity_type[0] if opts.entity_type else None
    entity_name = opts.entity_name[0] if opts.entity_name else None
    if opts.topic is not None:
        return ConfigResourceType.TOPIC, opts.topic
    if opts.broker is not None:
        return ConfigResourceType.BROKER, opts.broker
    if opts.broker_defaults:
        return ConfigResourceType.BROKER, ""
    if entity_type is None:
        usage_exit(parser, "At least one entity type must be specified")
    kind = ENTITY_TYPES.get(entity_type)
    if kind is None:
        usage_exit(parser, f"Invalid entity type {entity_type}, the entity type must be one of "
                           f"{', '.join([*ENTITY_TYPES, *client_configs.ENTITY_TYPES])} (the ones this "
                           f"kafka-configs.sh handles)")
    if opts.entity_default:
        if kind is not ConfigResourceType.BROKER:
            usage_exit(parser, "--entity-default is only valid with --entity-type brokers here")
        return kind, ""
    return kind, entity_name


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    opts = parser.parse_args(argv)
    action = one_action(parser, opts, ACTIONS)
    parser.required(opts, "bootstrap_server")
    client_entity = _client_entity(parser, opts)
    kind, name = (ConfigResourceType.UNKNOWN, "") if client_entity is not None else _entity(parser, opts)
    if action == "alter":
        if name is None or (client_entity is not None and client_configs.Every.EVERY in client_entity.values()):
            usage_exit(parser, "An entity name must be specified with --alter")
        if opts.add_config is None and opts.delete_config is None:
            usage_exit(parser, "At least one of --add-config or --delete-config must be specified with --alter")
    elif opts.add_config is not None or opts.delete_config is not None:
        usage_exit(parser, "--add-config and --delete-config are only valid with --alter")
    args = cli_args(opts.bootstrap_server, opts.command_config)

    def on_error(e: BaseException) -> None:
        print(f"Error while executing config command with args '{' '.join(argv)}'", file=sys.stderr)
        print(failure_text(e, args), file=sys.stderr)

    def body() -> int:
        with open_admin(args) as admin:
            if client_entity is not None:
                _client_body(admin, action, client_entity, opts, args.timeout)
            elif action == "alter":
                assert name is not None
                _alter(admin, kind, name, opts, args.timeout)
            else:
                names = [name] if name is not None else _every(admin, kind, args.timeout)
                for n in names:
                    _describe(admin, kind, n, opts.all, args.timeout)
        return 0

    return run_tool(body, on_error)


def _client_body(admin: AdminClient, action: str, entity: client_configs.Selection, opts: argparse.Namespace,
                 timeout: float) -> None:
    if action == "describe":
        client_configs.describe(admin, entity, timeout)
        return
    named = {k: v for k, v in entity.items() if not isinstance(v, client_configs.Every)}
    add = parse_add_config([opts.add_config] if opts.add_config else [])
    delete = split_csv([opts.delete_config] if opts.delete_config else [])
    client_configs.alter(admin, named, add, delete, timeout)
    kind, name = next(iter(named.items()))
    plural = {v: k for k, v in client_configs.ENTITY_TYPES.items()}[kind]
    if name is None:
        print(f"Completed updating default config for {plural} in the cluster.", flush=True)
    else:
        print(f"Completed updating config for {plural[:-1]} {name}.", flush=True)


def _every(admin: AdminClient, kind: ConfigResourceType, timeout: float) -> list[str]:
    if kind is ConfigResourceType.TOPIC:
        return sorted(admin.list_topics(timeout=timeout))
    return [str(n.id) for n in sorted(admin.describe_cluster(timeout=timeout).nodes, key=lambda n: n.id)]


def _what(kind: ConfigResourceType, name: str) -> str:
    if kind is ConfigResourceType.BROKER and name == "":
        return "default config for brokers in the cluster"
    return f"config for {'topic' if kind is ConfigResourceType.TOPIC else 'broker'} {name}"


def _broker_id(name: str) -> int | None:
    if name == "":
        return None
    try:
        return int(name)
    except ValueError:
        raise CliError(f"The broker's id must be an integer, got {name!r}") from None


def _alter(admin: AdminClient, kind: ConfigResourceType, name: str, opts: argparse.Namespace, timeout: float) -> None:
    if kind is ConfigResourceType.BROKER:
        check_broker(admin, _broker_id(name), timeout)
    add = parse_add_config([opts.add_config] if opts.add_config else [])
    delete = split_csv([opts.delete_config] if opts.delete_config else [])
    alter_configs(admin, ConfigResource(kind, name), add, delete, timeout)
    print(f"Completed updating {_what(kind, name)}.", flush=True)


def _line(e: ConfigEntry) -> str:
    value = "null" if e.is_sensitive else e.value
    return f"  {e.name}={value} sensitive={str(e.is_sensitive).lower()} synonyms={{{e.source.name}:{e.name}={value}}}"


def _describe(admin: AdminClient, kind: ConfigResourceType, name: str, every: bool, timeout: float) -> None:
    if kind is ConfigResourceType.BROKER:
        check_broker(admin, _broker_id(name), timeout)
    resource = ConfigResource(kind, name)
    entries = sorted(admin.describe_configs([resource], timeout=timeout)[resource].values(), key=lambda e: e.name)
    shown = [e for e in entries if every or e.source in DYNAMIC[kind]]
    if kind is ConfigResourceType.BROKER and name == "":
        print("Default configs for brokers in the cluster are:")
    else:
        print(f"{'All' if every else 'Dynamic'} configs for {'topic' if kind is ConfigResourceType.TOPIC else 'broker'} "
              f"{name} are:")
    for e in shown:
        print(_line(e))

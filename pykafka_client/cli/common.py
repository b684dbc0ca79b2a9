"""What every subcommand shares: the exit codes, the common flags, and the client configuration they
build (``--bootstrap-server``, ``--command-config`` properties file, ``-X key=value``, ``--timeout``)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable, Mapping
from typing import Any

from pykafka_client.admin.admin_client import AdminClient
from pykafka_client.admin.config import ADMIN_CONFIG
from pykafka_client.config import ConfigDef
from pykafka_client.consumer.config import CONSUMER_CONFIG
from pykafka_client.consumer.kafka_consumer import KafkaConsumer
from pykafka_client.errors_base import BrokerResponseError, KafkaError
from pykafka_client.producer.config import PRODUCER_CONFIG_DEF

#: Exit codes (documented in ``pykafka --help`` and the README).
EXIT_OK = 0
EXIT_FAILED = 1  # the operation failed (a broker or client error; some records were not produced)
EXIT_USAGE = 2  # bad command line: unknown flag, bad value, unreadable file (argparse uses 2 too)
EXIT_UNREACHABLE = 3  # the cluster could not be reached within --timeout
EXIT_NOT_FOUND = 4  # unknown topic, partition, group or transactional id
EXIT_REFUSED = 5  # refused: the group has active members
EXIT_INTERRUPTED = 130  # Ctrl-C during a command that cannot stop cleanly

EXIT_CODES_HELP = """exit codes:
  0    success
  1    the operation failed (broker or client error; a record could not be produced)
  2    bad command line (unknown flag, bad value, unreadable file)
  3    the cluster could not be reached within --timeout
  4    unknown topic, partition, group, transactional id or broker
  5    refused: the consumer group has active members
  130  interrupted"""

DEFAULT_BOOTSTRAP = "localhost:9092"
BOOTSTRAP_ENV = "PYKAFKA_BOOTSTRAP_SERVERS"
DEFAULT_TIMEOUT_S = 30.0

CONFIG_DEFS: dict[str, ConfigDef] = {"admin": ADMIN_CONFIG, "producer": PRODUCER_CONFIG_DEF, "consumer": CONSUMER_CONFIG}


class CliError(KafkaError):
    """A failure reported as one line on stderr with ``exit_code`` (a KafkaError like every error the
    library defines; never retriable)."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.exit_code = exit_code


#: The flags every subcommand takes; they may also come before the subcommand (``pykafka --timeout 5 topics
#: list``). A flag given after the subcommand wins; ``-X`` values given before come first (later wins).
GLOBAL_OVERRIDES_DEST = "global_overrides"


def said(e: BaseException) -> str:
    """What an error says, for a line that already names its kind: a broker error's message (or its code's
    description) without the ``[Error N] NAME:`` prefix, and no trailing period."""
    text = (e.message or e.description) if isinstance(e, BrokerResponseError) else str(e)
    return text.rstrip(". ")


def error_text(e: BaseException) -> str:
    """An error on one line: a broker error as ``CODE_NAME: message`` (Kafka's name for it), any other as
    ``ClassName: message``."""
    return f"{e.name}: {said(e)}" if isinstance(e, BrokerResponseError) else f"{type(e).__name__}: {said(e)}"


def common_flags(before_subcommand: bool = False) -> argparse.ArgumentParser:
    """The flags every subcommand takes (an argparse parent parser). Their defaults are left out of the
    namespace (``argparse.SUPPRESS``) so that a flag given before the subcommand is not overwritten by the
    subcommand's default; :func:`apply_common_defaults` fills in what was not given."""
    p = argparse.ArgumentParser(add_help=False, allow_abbrev=False, argument_default=argparse.SUPPRESS)
    g = p.add_argument_group("connection (before or after the subcommand)" if before_subcommand else "connection")
    g.add_argument(
        "--bootstrap-server", metavar="HOST:PORT[,...]",
        help=f"brokers to connect to (default: ${BOOTSTRAP_ENV}, then {DEFAULT_BOOTSTRAP})",
    )
    g.add_argument("--command-config", metavar="FILE", help="a Java properties file of client configs")
    g.add_argument(
        "-X", dest=GLOBAL_OVERRIDES_DEST if before_subcommand else "overrides", metavar="KEY=VALUE", action="append",
        help="a client config, e.g. -X linger.ms=5 (repeatable; wins over --command-config)",
    )
    g.add_argument(
        "--timeout", metavar="SECONDS", type=positive_float,
        help=f"how long to wait for the cluster (default {DEFAULT_TIMEOUT_S:g})",
    )
    g.add_argument("--debug", action="store_true", help="on error, show the traceback")
    return p


def apply_common_defaults(args: argparse.Namespace) -> argparse.Namespace:
    """Fill in the common flags not given anywhere, and join the ``-X`` values given before and after the
    subcommand (in that order, so that the later one wins)."""
    defaults: dict[str, Any] = {
        "bootstrap_server": os.environ.get(BOOTSTRAP_ENV) or DEFAULT_BOOTSTRAP,
        "command_config": None,
        "timeout": DEFAULT_TIMEOUT_S,
        "debug": False,
    }
    for name, value in defaults.items():
        if not hasattr(args, name):
            setattr(args, name, value)
    args.overrides = [*(getattr(args, GLOBAL_OVERRIDES_DEST, None) or []), *(getattr(args, "overrides", None) or [])]
    if hasattr(args, GLOBAL_OVERRIDES_DEST):
        delattr(args, GLOBAL_OVERRIDES_DEST)
    return args


def output_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output", choices=("table", "json"), default="table", help="table for people (default) or json for scripts"
    )


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be greater than 0")
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must not be negative")
    return value


def key_value(text: str) -> tuple[str, str]:
    """``k=v`` -> (k, v); the value may contain ``=``."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    return key, value


def read_properties(path: str) -> dict[str, str]:
    """A Java properties file: ``key=value``, ``key: value`` or ``key value`` lines, ``#``/``!``
    comments, a trailing backslash continues the line."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise CliError(f"cannot read --command-config {path}: {e.strerror or e}", EXIT_USAGE) from e
    props: dict[str, str] = {}
    pending = ""
    for raw in lines:
        line = pending + raw.strip()
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1]
            continue
        if not line or line[0] in "#!":
            continue
        cut = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if cut < 0:
            key, _, value = line.partition(" ")
        else:
            key, value = line[:cut], line[cut + 1 :]
        props[key.strip()] = value.strip()
    return props


def user_settings(args: argparse.Namespace) -> dict[str, str]:
    """The configs given by --command-config then -X (later wins); unknown names fail as a usage error."""
    settings = read_properties(args.command_config) if args.command_config else {}
    for item in args.overrides:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CliError(f"-X {item!r} is not KEY=VALUE (e.g. -X linger.ms=5)", EXIT_USAGE)
        settings[key.strip()] = value
    for key in settings:
        if not any(key in d.keys() for d in CONFIG_DEFS.values()):
            raise CliError(f"{CONFIG_DEFS['producer'].unknown_key_error(key)}", EXIT_USAGE)
    return settings


def client_config(kind: str, args: argparse.Namespace, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The configuration of a ``kind`` ("admin", "producer", "consumer") client: bootstrap servers, the
    user's settings this client knows (a producer setting is not given to the admin), then ``extra``
    (what the subcommand's own flags set) unless the user set the same key."""
    known = CONFIG_DEFS[kind].keys()
    settings = user_settings(args)
    config: dict[str, Any] = {"bootstrap.servers": args.bootstrap_server}
    for key, value in (extra or {}).items():
        config[key] = value
    config.update({k: v for k, v in settings.items() if k in known})
    return config


def split_csv(values: Iterable[str]) -> list[str]:
    """Flags that take ``a,b`` and may repeat: ``--x a,b --x c`` -> [a, b, c]."""
    return [item.strip() for v in values for item in v.split(",") if item.strip()]


def open_admin(args: argparse.Namespace) -> AdminClient:
    return AdminClient(client_config("admin", args))


def topic_partitions(admin: AdminClient, topic: str, wanted: Iterable[int] | None, timeout: float) -> list[int]:
    """The partitions of ``topic`` a ``--partition`` flag asked for (all when none), sorted; an unknown topic
    raises UnknownTopicOrPartitionError, a partition beyond the topic's a CliError with EXIT_NOT_FOUND."""
    count = len(admin.describe_topics([topic], timeout=timeout)[topic].partitions)
    parts = sorted(set(wanted)) if wanted else list(range(count))
    for p in parts:
        check_partition(topic, p, count)
    return parts


def check_partition(topic: str, partition: int | None, count: int) -> None:
    """A CliError with EXIT_NOT_FOUND when ``partition`` (None: any) is not one of the topic's ``count``."""
    if partition is not None and not 0 <= partition < count:
        raise CliError(f"partition {topic}-{partition} does not exist: topic {topic!r} has {count} partition"
                       f"{'' if count == 1 else 's'} (0..{count - 1})", EXIT_NOT_FOUND)


def partition_count(consumer: KafkaConsumer[Any, Any], topic: str, timeout: float, auto_create: bool = True) -> int:
    """The partition count of ``topic``, after one metadata request that lets the broker create a missing topic
    (``auto_create``: what Kafka's console producer and consumer send, so a broker with
    auto.create.topics.enable=true creates it here). A topic that is still missing is a CliError with
    EXIT_NOT_FOUND saying how to create it."""
    parts = consumer.partitions_for(topic, timeout=timeout)
    if not parts:
        why = ("the broker does not create topics on use (auto.create.topics.enable=false)" if auto_create
               else "allow.auto.create.topics=false, so it was not created on use")
        raise CliError(f"topic {topic!r} does not exist and {why}; create it first: `pykafka topics create {topic}` "
                       "(--partitions N to choose the count)", EXIT_NOT_FOUND)
    return len(parts)


def auto_created_partition_counts(args: argparse.Namespace, topics: Iterable[str]) -> dict[str, int]:
    """:func:`partition_count` of each topic with a short-lived consumer of the command's client configs (the
    producer commands' topic check: the consumer's metadata look-up is one round trip, while the producer's
    waits max.block.ms for a topic that does not come)."""
    config = client_config("consumer", args, {"default.api.timeout.ms": int(args.timeout * 1000)})
    config["allow.auto.create.topics"] = True  # a producer's metadata requests always allow it (as in Java)
    with KafkaConsumer(config) as consumer:
        return {t: partition_count(consumer, t, args.timeout) for t in topics}


def add_command(
    subparsers: Any, name: str, help_text: str, parents: list[argparse.ArgumentParser], description: str | None = None,
    epilog: str | None = None,
) -> argparse.ArgumentParser:
    """A subcommand whose --help shows its description (a module docstring's ``markup`` dropped), the flags
    and an example epilog as written."""
    return subparsers.add_parser(  # type: ignore[no-any-return]
        name, help=help_text, description=(description or help_text).replace("``", ""), parents=parents, epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )

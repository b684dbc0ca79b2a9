"""``pykafka users scram add | describe | delete``: users' SCRAM credentials (AlterUserScramCredentials and
DescribeUserScramCredentials; what Kafka's ``kafka-configs.sh --entity-type users --add-config
'SCRAM-SHA-256=[...]'`` does). The password is salted by the client: only the salted form reaches the broker."""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from pykafka_client.admin import UserScramCredentialDeletion, UserScramCredentialUpsertion
from pykafka_client.cli.common import (
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    add_command,
    open_admin,
    output_flag,
)
from pykafka_client.cli.output import emit_rows, info
from pykafka_client.errors import ResourceNotFoundError

COLUMNS = ("USER", "MECHANISM", "ITERATIONS")
MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    users = add_command(subparsers, "users", "users' SCRAM credentials", [],
                        description="Create, describe and delete users' SCRAM credentials (SCRAM-SHA-256, "
                                    "SCRAM-SHA-512) on a broker.")
    kinds = users.add_subparsers(dest="kind", metavar="KIND", required=True)
    scram = add_command(kinds, "scram", "SCRAM-SHA-256 / SCRAM-SHA-512 credentials", [],
                        description="Users' SCRAM credentials (AlterUserScramCredentials, "
                                    "DescribeUserScramCredentials).")
    sub = scram.add_subparsers(dest="action", metavar="ACTION", required=True)

    p = add_command(sub, "add", "create or replace a user's credential", [common],
                    epilog="examples:\n  pykafka users scram add --user alice --mechanism SCRAM-SHA-512 --password "
                           "alice-secret\n  printf 'alice-secret\\n' | pykafka users scram add --user alice "
                           "--iterations 8192   (the password from stdin)")
    p.add_argument("--user", required=True, help="the user name")
    _mechanism(p)
    p.add_argument("--password", help="the password (default: read from the terminal, or a line of stdin)")
    p.add_argument("--iterations", type=int, default=4096,
                   help="PBKDF2 iterations (default 4096; the broker takes 4096 to 16384)")
    p.set_defaults(run=run_add)

    p = add_command(sub, "describe", "the mechanisms and iterations of users' credentials", [common],
                    epilog="examples:\n  pykafka users scram describe\n  pykafka users scram describe --user alice "
                           "--output json")
    p.add_argument("--user", action="append", default=[], help="a user (repeatable; default: every user)")
    output_flag(p)
    p.set_defaults(run=run_describe)

    p = add_command(sub, "delete", "delete a user's credential for a mechanism", [common],
                    epilog="examples:\n  pykafka users scram delete --user alice --mechanism SCRAM-SHA-256")
    p.add_argument("--user", required=True, help="the user name")
    _mechanism(p)
    p.set_defaults(run=run_delete)


def _mechanism(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mechanism", default="SCRAM-SHA-256", type=str.upper, choices=MECHANISMS,
                   help="the SCRAM mechanism (default SCRAM-SHA-256)")


def _password(args: argparse.Namespace) -> str:
    if args.password is not None:
        password = str(args.password)
    elif sys.stdin.isatty():
        password = getpass.getpass(f"password for {args.user}: ")
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    if not password:
        raise CliError(f"no password for {args.user}: give --password, or the password on stdin", EXIT_USAGE)
    return password


def run_add(args: argparse.Namespace) -> int:
    password = _password(args)
    upsertion = UserScramCredentialUpsertion(args.user, args.mechanism, password, iterations=args.iterations)
    with open_admin(args) as admin:
        admin.alter_user_scram_credentials([upsertion], timeout=args.timeout)
    info(f"Set the {args.mechanism} credential of user {args.user} ({args.iterations} iterations)")
    return EXIT_OK


def run_describe(args: argparse.Namespace) -> int:
    try:
        with open_admin(args) as admin:
            described = admin.describe_user_scram_credentials(args.user or None, timeout=args.timeout)
    except ResourceNotFoundError as e:
        raise CliError(f"{e}; see `pykafka users scram describe` for the users that have one", EXIT_NOT_FOUND) from e
    rows = [(user, info_.mechanism.mechanism_name, info_.iterations)
            for user, description in sorted(described.items()) for info_ in description.credential_infos]
    emit_rows(args.output, COLUMNS, rows)
    return EXIT_OK


def run_delete(args: argparse.Namespace) -> int:
    try:
        with open_admin(args) as admin:
            admin.alter_user_scram_credentials([UserScramCredentialDeletion(args.user, args.mechanism)],
                                               timeout=args.timeout)
    except ResourceNotFoundError as e:
        raise CliError(f"{e}; see `pykafka users scram describe --user {args.user}`", EXIT_NOT_FOUND) from e
    info(f"Deleted the {args.mechanism} credential of user {args.user}")
    return EXIT_OK


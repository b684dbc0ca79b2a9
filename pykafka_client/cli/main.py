"""``pykafka``: the parser, the dispatch to a subcommand, and the one place errors become one line on
stderr and an exit code (``--debug`` shows the traceback instead)."""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from pykafka_client._version import __version__
from pykafka_client.cli import configs, consume, groups, offsets, perf, produce, topics, transactions
from pykafka_client.cli.common import (
    EXIT_CODES_HELP,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_NOT_FOUND,
    EXIT_REFUSED,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    CliError,
    common_flags,
)
from pykafka_client.errors import (
    ConfigurationError,
    GroupIdNotFoundError,
    GroupNotEmptyError,
    IllegalArgumentError,
    InvalidProducerEpochError,
    KafkaTimeoutError,
    ProducerFencedError,
    TransactionalIdNotFoundError,
    TransactionCoordinatorFencedError,
    UnknownMemberIdError,
    UnknownTopicOrPartitionError,
)
from pykafka_client.errors_base import KafkaError

DESCRIPTION = """Kafka's command-line tools in one, built on pykafka_client: topics, console producer and
consumer, consumer groups, configs, offsets, transactions and producers, and perf tests. Every
subcommand takes --bootstrap-server (default $PYKAFKA_BOOTSTRAP_SERVERS, then localhost:9092),
--command-config FILE, -X key=value and --timeout; listing commands take --output json.
`pykafka COMMAND --help` shows each one."""

EPILOG = f"""examples:
  pykafka topics create orders --partitions 3
  printf 'k1:hello\\n' | pykafka produce orders --key-separator :
  pykafka consume orders --from-beginning --max-messages 1 --format '%k=%s\\n'
  pykafka groups describe billing
  pykafka transactions describe --transactional-id payments-1

{EXIT_CODES_HELP}"""


class _Parser(argparse.ArgumentParser):
    """Usage errors are one line on stderr (what is wrong, where to look), exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="pykafka", description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"pykafka {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    common = common_flags()
    for module in (topics, produce, consume, groups, configs, offsets, transactions, perf):
        module.register(sub, common)
    return parser


def exit_code_and_message(e: BaseException, args: argparse.Namespace) -> tuple[int, str]:
    """The exit code and the one line a failure prints (what failed, what to try)."""
    if isinstance(e, CliError):
        return e.exit_code, str(e)
    if isinstance(e, KafkaTimeoutError):
        return EXIT_UNREACHABLE, (
            f"could not reach the cluster at {args.bootstrap_server} within {args.timeout:g} s ({e}); "
            "check --bootstrap-server and that the broker is running, or raise --timeout"
        )
    if isinstance(e, UnknownTopicOrPartitionError):
        return EXIT_NOT_FOUND, f"unknown topic or partition: {e}; see `pykafka topics list`"
    if isinstance(e, GroupIdNotFoundError):
        return EXIT_NOT_FOUND, f"unknown group: {e}; see `pykafka groups list`"
    if isinstance(e, TransactionalIdNotFoundError):
        return EXIT_NOT_FOUND, f"unknown transactional id: {e}; see `pykafka transactions list`"
    if isinstance(e, GroupNotEmptyError):
        return EXIT_REFUSED, f"{e}: the group has active members; stop its consumers first"
    if isinstance(e, UnknownMemberIdError):
        return EXIT_REFUSED, f"{e}: the group has active members; stop its consumers first"
    if isinstance(e, (InvalidProducerEpochError, ProducerFencedError, TransactionCoordinatorFencedError)):
        return EXIT_FAILED, (f"{type(e).__name__}: {e}; the producer or its coordinator has moved on to a newer "
                             "epoch, see `pykafka producers describe`")
    if isinstance(e, (ConfigurationError, IllegalArgumentError)):
        return EXIT_USAGE, f"{e}"
    if isinstance(e, KafkaError):
        return EXIT_FAILED, f"{type(e).__name__}: {e}"
    if isinstance(e, OSError):
        return EXIT_FAILED, f"{e}"
    return EXIT_FAILED, f"unexpected {type(e).__name__}: {e} (run again with --debug for the traceback)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        print("pykafka: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader of our stdout went away (e.g. `| head`): nothing left to say
        sys.stderr.close()
        return EXIT_FAILED
    except Exception as e:
        if args.debug:
            traceback.print_exc()
        code, message = exit_code_and_message(e, args)
        where = " ".join(filter(None, ("pykafka", args.command, getattr(args, "action", None))))
        print(f"{where}: error: {message}", file=sys.stderr)
        return code

"""``pykafka``: the parser, the dispatch to a subcommand, and the one place errors become one line on
stderr and an exit code (``--debug`` shows the traceback instead)."""

from __future__ import annotations

import argparse
import difflib
import re
import sys
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

from pykafka_client._version import __version__
from pykafka_client.cli import (
    acls,
    configs,
    consume,
    groups,
    leaders,
    offsets,
    perf,
    produce,
    share_groups,
    topics,
    transactions,
    users,
)
from pykafka_client.cli.common import (
    EXIT_CODES_HELP,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_NOT_FOUND,
    EXIT_REFUSED,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    CliError,
    apply_common_defaults,
    common_flags,
    error_text,
    said,
)
from pykafka_client.cli.kafka_scripts import home as kafka_home
from pykafka_client.errors import (
    ClusterAuthorizationFailedError,
    ConfigurationError,
    GroupAuthorizationFailedError,
    GroupIdNotFoundError,
    GroupNotEmptyError,
    IllegalArgumentError,
    InvalidProducerEpochError,
    KafkaTimeoutError,
    ProducerFencedError,
    SecurityDisabledError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationError,
    TransactionalIdNotFoundError,
    TransactionCoordinatorFencedError,
    UnknownMemberIdError,
    UnknownTopicOrPartitionError,
)
from pykafka_client.errors_base import KafkaError

DESCRIPTION = """Kafka's command-line tools in one, built on pykafka_client: topics, console producer and
consumer, consumer and share groups, configs, offsets, transactions and producers, and perf tests. Every
subcommand takes --bootstrap-server (default $PYKAFKA_BOOTSTRAP_SERVERS, then localhost:9092),
--command-config FILE, -X key=value and --timeout, before or after the subcommand; listing commands
take --output json. `pykafka COMMAND --help` shows each one."""

EPILOG = f"""examples:
  pykafka topics create orders --partitions 3
  printf 'k1:hello\\n' | pykafka produce orders --key-separator :
  pykafka consume orders --from-beginning --max-messages 1 --format '%k=%s\\n'
  pykafka groups describe billing
  pykafka transactions describe --transactional-id payments-1
  pykafka acls add --allow-principal User:alice --operation Read --topic orders

{EXIT_CODES_HELP}"""


class _Parser(argparse.ArgumentParser):
    """Usage errors are one line on stderr (what is wrong, where to look), exit code 2. No option is taken
    for a longer one it begins (``allow_abbrev`` off: ``--max-message`` is an error, not ``--max-messages``);
    the subcommands' parsers are of this class too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def add_subparsers(self, **kwargs: Any) -> Any:
        """As argparse's; ``commands`` keeps the subcommands' parsers by name."""
        action = super().add_subparsers(**kwargs)
        self.commands: dict[str, argparse.ArgumentParser] = action.choices
        return action

    def error(self, message: str) -> NoReturn:
        choice = _INVALID_CHOICE.search(message)
        if choice:
            close = difflib.get_close_matches(choice.group(1), re.findall(r"'([^']*)'", choice.group(2)), n=1)
            if close:
                message += f"; did you mean {close[0]}?"
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)")
_OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="pykafka", description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[common_flags(before_subcommand=True)],
    )
    parser.add_argument("--version", action="version", version=f"pykafka {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    common = common_flags()
    for module in (topics, produce, consume, groups, share_groups, configs, offsets, transactions, acls, users,
                   leaders, perf, kafka_home):
        module.register(sub, common)
    return parser


def _options(parser: argparse.ArgumentParser) -> list[str]:
    """The options ``parser`` takes, as its help lists them."""
    return sorted(set(_OPTION.findall(parser.format_help())))


def unrecognized(extras: Sequence[str], known: Sequence[str]) -> str:
    """The usage error for arguments no parser took, with the closest of the ``known`` options (the command's)
    for each unknown one: ``unrecognized arguments: --max-message; did you mean --max-messages?``."""
    hints = []
    for word in (w.split("=", 1)[0] for w in extras if w.startswith("-")):
        close = difflib.get_close_matches(word, known, n=1)
        if close:
            hints.append((word, close[0]))
    if len(hints) == 1:
        return f"unrecognized arguments: {' '.join(extras)}; did you mean {hints[0][1]}?"
    listed = "; ".join(f"{word}: did you mean {option}?" for word, option in hints)
    return f"unrecognized arguments: {' '.join(extras)}" + (f" ({listed})" if listed else "")


def _command_chain(parser: argparse.ArgumentParser, words: Sequence[str]) -> list[argparse.ArgumentParser]:
    """The parsers of the command and subcommands named in ``words`` (``pykafka``, ``topics``, ``list``)."""
    chain = [parser]
    for word in words:
        if word == "--":
            break
        child = getattr(chain[-1], "commands", {}).get(word)
        if child is not None:
            chain.append(child)
    return chain


def _attached_short_option(word: str, known: Sequence[str]) -> bool:
    """``-Xacks=1``: a known short option with its value attached (argparse reads it as ``-X acks=1``)."""
    return not word.startswith("--") and len(word) > 2 and word[:2] in known


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line, common flags filled in; a usage error exits with EXIT_USAGE before anything runs. An
    option no parser of the command takes is reported first, with the closest one (argparse would report it
    after a missing required flag, or take the unknown option's value for the command before it)."""
    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    chain = _command_chain(parser, words)
    known = sorted({o for p in chain for o in _options(p)})
    options = words[:words.index("--")] if "--" in words else words
    unknown = [w for w in options if _OPTION.fullmatch(w.split("=", 1)[0]) and w.split("=", 1)[0] not in known
               and not _attached_short_option(w, known)]
    if unknown:
        chain[-1].error(unrecognized(unknown, known))
    args, extras = parser.parse_known_args(words)
    if extras:
        chain[-1].error(unrecognized(extras, known))
    return apply_common_defaults(args)


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
        return EXIT_NOT_FOUND, f"unknown topic or partition: {said(e)}; see `pykafka topics list`"
    if isinstance(e, GroupIdNotFoundError):
        return EXIT_NOT_FOUND, f"unknown group: {said(e)}; see `pykafka groups list`"
    if isinstance(e, TransactionalIdNotFoundError):
        return EXIT_NOT_FOUND, f"unknown transactional id: {said(e)}; see `pykafka transactions list`"
    if isinstance(e, (GroupNotEmptyError, UnknownMemberIdError)):
        return EXIT_REFUSED, f"{said(e)}: the group has active members; stop its consumers first"
    if isinstance(e, (InvalidProducerEpochError, ProducerFencedError, TransactionCoordinatorFencedError)):
        return EXIT_FAILED, (f"{error_text(e)}; the producer or its coordinator has moved on to a newer "
                             "epoch, see `pykafka producers describe`")
    if isinstance(e, SecurityDisabledError):
        return EXIT_FAILED, (f"{error_text(e)}; the broker has no authorizer: start it with authorizer.class.name="
                             "org.apache.kafka.metadata.authorizer.StandardAuthorizer")
    if isinstance(e, (ClusterAuthorizationFailedError, TopicAuthorizationFailedError, GroupAuthorizationFailedError,
                      TransactionalIdAuthorizationError)):
        return EXIT_FAILED, (f"{error_text(e)}; the principal of this connection lacks the ACL: see "
                              "`pykafka acls list` (as a super user)")
    if isinstance(e, (ConfigurationError, IllegalArgumentError)):
        return EXIT_USAGE, f"{e}"
    if isinstance(e, KafkaError):
        return EXIT_FAILED, error_text(e)
    if isinstance(e, OSError):
        return EXIT_FAILED, f"{e}"
    return EXIT_FAILED, f"unexpected {type(e).__name__}: {e} (run again with --debug for the traceback)"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
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

"""What Kafka's scripts share: an option parser that fails as Kafka's tools do (the message, then the tool's
help, on stderr; exit code 1), the ``--property k=v`` style flags, and the ``pykafka`` CLI arguments the
scripts' flags translate to."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NoReturn

from pykafka_client._version import __version__
from pykafka_client.cli.common import DEFAULT_TIMEOUT_S, read_properties
from pykafka_client.cli.main import exit_code_and_message

#: Kafka's scripts exit 1 on any failure: a bad command line, a broker's error, an unreachable cluster.
EXIT_ERROR = 1

_UNRECOGNIZED = re.compile(r"unrecognized arguments: (\S+)")
_NEEDS_VALUE = re.compile(r"argument (--[\w.-]+)(?:/\S+)?: expected (?:one|at least one) argument")


class ToolParser(argparse.ArgumentParser):
    """A script's flags. A usage error prints Kafka's message (``Missing required argument "[topic]"``,
    ``--foo is not a recognized option``, ``Option --topic requires an argument``) and the help on stderr,
    and exits 1; ``--version`` prints pykafka-client's version."""

    def __init__(self, prog: str, description: str) -> None:
        super().__init__(prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
        self.add_argument("--version", action="version", version=f"{__version__} (pykafka-client)",
                          help="display pykafka-client's version")

    def error(self, message: str) -> NoReturn:
        unknown = _UNRECOGNIZED.match(message)
        needs_value = _NEEDS_VALUE.match(message)
        if unknown:
            message = f"{unknown.group(1)} is not a recognized option"
        elif needs_value:
            message = f"Option {needs_value.group(1)} requires an argument"
        usage_exit(self, message)

    def required(self, opts: argparse.Namespace, *names: str) -> None:
        """Kafka's check of required options: the first of ``names`` (dests) not given is a usage error."""
        for name in names:
            if getattr(opts, name) in (None, [], False):
                usage_exit(self, f'Missing required argument "[{name.replace("_", "-")}]"')


def usage_exit(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    print(message, file=sys.stderr)
    parser.print_help(sys.stderr)
    sys.exit(EXIT_ERROR)


def one_action(parser: argparse.ArgumentParser, opts: argparse.Namespace, actions: Sequence[str]) -> str:
    """The one action flag (dests in ``actions``) given; none or several is Kafka's usage error."""
    given = [a for a in actions if getattr(opts, a)]
    if len(given) != 1:
        names = [f"--{a.replace('_', '-')}" for a in actions]
        usage_exit(parser, f"Command must include exactly one action: {', '.join(names[:-1])} or {names[-1]}")
    return given[0]


def connection_flags(parser: argparse.ArgumentParser, command_config_help: str = "a properties file of admin "
                     "client configs") -> None:
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT", help="the brokers to connect to (required)")
    parser.add_argument("--command-config", metavar="FILE", help=command_config_help)


def property_flag(parser: argparse.ArgumentParser, name: str, help_text: str) -> None:
    """A repeatable ``--NAME k=v`` flag (values collected as strings)."""
    parser.add_argument(name, action="append", default=[], metavar="KEY=VALUE", help=help_text)


def properties(parser: argparse.ArgumentParser, flag: str, items: Iterable[str]) -> dict[str, str]:
    """``k=v`` items as a dict (the value may contain ``=``); an item without ``=`` is a usage error."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            usage_exit(parser, f"Invalid {flag} {item!r}: expected KEY=VALUE")
        out[key.strip()] = value
    return out


def file_properties(path: str | None) -> dict[str, str]:
    return read_properties(path) if path else {}


def cli_args(bootstrap: str, command_config: str | None = None, settings: dict[str, str] | None = None,
             **fields: Any) -> argparse.Namespace:
    """The arguments the ``pykafka`` CLI's functions take: the connection (``settings``: client configs, as
    -X values, winning over ``command_config``'s) and the command's own ``fields``."""
    overrides = [f"{k}={v}" for k, v in (settings or {}).items()]
    return argparse.Namespace(bootstrap_server=bootstrap, command_config=command_config, overrides=overrides,
                              timeout=DEFAULT_TIMEOUT_S, debug=False, **fields)


def failure_text(e: BaseException, args: argparse.Namespace) -> str:
    """What a failure says (the ``pykafka`` CLI's one-line message)."""
    return exit_code_and_message(e, args)[1]


def run_tool(body: Callable[[], int], on_error: Callable[[BaseException], None]) -> int:
    """Run a script's work: Ctrl-C and a closed stdout end it quietly, any other failure goes to ``on_error``
    (which prints Kafka's lines for it) and exits 1."""
    try:
        return body()
    except KeyboardInterrupt:
        return EXIT_ERROR
    except BrokenPipeError:
        sys.stderr.close()
        return EXIT_ERROR
    except Exception as e:
        on_error(e)
        return EXIT_ERROR

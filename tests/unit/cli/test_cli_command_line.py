"""The ``pykafka`` command line as Kafka's console tools read it (issue 22 item 4): the common flags before or
after the subcommand, no option taken for a longer one it begins (on every parser), an unknown option or
command rejected with the closest one, and failure lines without Python reprs or ``[Error N]`` prefixes."""

from __future__ import annotations

import argparse

import pytest

from pykafka_client.admin.types import ConfigResource, ConfigResourceType
from pykafka_client.cli.common import BOOTSTRAP_ENV, DEFAULT_BOOTSTRAP, DEFAULT_TIMEOUT_S
from pykafka_client.cli.main import build_parser, exit_code_and_message, parse_args
from pykafka_client.errors import InvalidConfigurationError, UnknownTopicOrPartitionError


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    out = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                out += _parsers(child)
    return out


def test_no_parser_takes_an_abbreviation() -> None:
    parsers = _parsers(build_parser())
    assert len(parsers) > 20
    assert [p.prog for p in parsers if p.allow_abbrev] == []


def _usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        parse_args(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    return err


@pytest.mark.parametrize(("argv", "says"), [
    (["consume", "t", "--max-message", "1"], "unrecognized arguments: --max-message; did you mean --max-messages?"),
    (["consume", "t", "--max-message=1"], "did you mean --max-messages?"),
    (["consume", "t", "--max-mesage", "1", "--frm-beginning"],
     "(--max-mesage: did you mean --max-messages?; --frm-beginning: did you mean --from-beginning?)"),
    (["--bootstrap-serv", "h:1", "topics", "list"], "unrecognized arguments: --bootstrap-serv; "
                                                     "did you mean --bootstrap-server?"),
    (["topics", "lst"], "did you mean list?"),
    (["topics", "list", "--bogus"], "unrecognized arguments: --bogus (see"),
    (["groups", "reset-offsets", "--group", "g", "--all-topics", "--to-earl"], "did you mean --to-earliest?"),
])
def test_an_unknown_option_is_a_usage_error_with_the_closest_one(argv: list[str], says: str,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert says in _usage_error(argv, capsys)


def test_common_flags_before_and_after_the_subcommand(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BOOTSTRAP_ENV, raising=False)
    before = parse_args(["--bootstrap-server", "a:1", "--timeout", "5", "--command-config", "c.properties",
                         "-X", "x=1", "--debug", "topics", "list", "-X", "y=2"])
    assert (before.bootstrap_server, before.timeout, before.command_config, before.debug) == ("a:1", 5.0,
                                                                                             "c.properties", True)
    assert before.overrides == ["x=1", "y=2"]  # before first: a later -X of the same key wins
    after_wins = parse_args(["--bootstrap-server", "a:1", "--timeout", "5", "consume", "t", "--bootstrap-server",
                             "b:2", "--timeout", "7"])
    assert (after_wins.bootstrap_server, after_wins.timeout) == ("b:2", 7.0)
    defaults = parse_args(["topics", "list"])
    assert (defaults.bootstrap_server, defaults.timeout, defaults.command_config, defaults.debug,
            defaults.overrides) == (DEFAULT_BOOTSTRAP, DEFAULT_TIMEOUT_S, None, False, [])
    monkeypatch.setenv(BOOTSTRAP_ENV, "env:9")
    assert parse_args(["topics", "list"]).bootstrap_server == "env:9"
    assert parse_args(["--bootstrap-server", "a:1", "topics", "list"]).bootstrap_server == "a:1"


def test_failure_lines_name_resources_without_reprs() -> None:
    args = parse_args(["configs", "describe", "--topic", "orders"])
    resource = ConfigResource(ConfigResourceType.TOPIC, "orders")
    code, message = exit_code_and_message(
        InvalidConfigurationError(f"{resource}: Unknown topic config name: bogus.key"), args)
    assert (code, message) == (1, "INVALID_CONFIG: topic 'orders': Unknown topic config name: bogus.key")
    code, message = exit_code_and_message(UnknownTopicOrPartitionError(f"{resource}: Topic 'orders' does not exist."),
                                          args)
    assert code == 4 and message.startswith("unknown topic or partition: topic 'orders': Topic 'orders' does not exist;")
    assert str(ConfigResource(ConfigResourceType.BROKER, "1")) == "broker 1"
    assert str(ConfigResource(ConfigResourceType.BROKER, "")) == "broker default"


def test_a_short_option_with_its_value_attached_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    # argparse reads -Xacks=1 as -X acks=1; the unknown-option check must not take it for an option named -Xacks
    monkeypatch.delenv(BOOTSTRAP_ENV, raising=False)
    args = parse_args(["topics", "list", "-Xacks=1"])
    assert args.overrides == ["acks=1"]
    args = parse_args(["-Xclient.id=a", "produce", "t", "-Xacks=all"])
    assert args.overrides == ["client.id=a", "acks=all"]

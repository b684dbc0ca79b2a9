"""Every example in the README's command table parses with the real parser (the README cannot drift
from the flags), and the table names every subcommand the parser has."""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from pykafka_client.cli.main import build_parser

README = Path(__file__).resolve().parents[3] / "README.md"


def _table_rows() -> list[tuple[str, str]]:
    section = README.read_text(encoding="utf-8").split("## Command line: `pykafka`", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) == 3 and cells[0].startswith("`") and cells[2].startswith("`"):
            rows.append((cells[0].strip("`"), cells[2].strip("`").replace("\\|", "|")))
    return rows


def _leaf_commands() -> set[str]:
    names: set[str] = set()

    def walk(parser: argparse.ArgumentParser, prefix: list[str]) -> None:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            names.add(" ".join(prefix))
        for action in subs:
            for name, child in action.choices.items():
                walk(child, [*prefix, name])

    walk(build_parser(), [])
    return names


def test_readme_lists_every_command() -> None:
    assert {command for command, _ in _table_rows()} == _leaf_commands()


@pytest.mark.parametrize(("command", "example"), _table_rows(), ids=[c for c, _ in _table_rows()])
def test_readme_example_parses(command: str, example: str) -> None:
    words = shlex.split(example.split("| ", 1)[-1])
    assert words[0] == "pykafka"
    args = build_parser().parse_args(words[1:])
    words_of_command = (args.command, getattr(args, "kind", None), getattr(args, "action", None))
    assert " ".join(filter(None, words_of_command)) == command


@pytest.mark.parametrize("command", ["produce", "consume"])
def test_readme_names_every_flag_of_the_console_commands(command: str) -> None:
    """The produce and consume rows list their flags: each one the command has is named there."""
    row = next(text for name, text in _table_rows_with_description() if name == command)
    leaf = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    common = {"--bootstrap-server", "--command-config", "-X", "--timeout", "--debug", "-h", "--help"}
    flags = {s for a in leaf._actions for s in a.option_strings if s.startswith("--")} - common
    assert sorted(f for f in flags if f"`{f}" not in row) == []


def _table_rows_with_description() -> list[tuple[str, str]]:
    section = README.read_text(encoding="utf-8").split("## Command line: `pykafka`", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) == 3 and cells[0].startswith("`"):
            rows.append((cells[0].strip("`"), cells[1]))
    return rows

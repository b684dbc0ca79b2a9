"""The README is true and in order (issue 22 item 6): it opens with the project's description and the two
``./dev`` commands, names every benchmark script and every CLI command, its Status says nothing is missing that
exists, and every python snippet compiles and is run by tests/packaging/test_readme_snippets.py."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from pykafka_client.cli.main import build_parser
from tests.readme.blocks import README, Block, code_blocks, readme_text

ROOT = README.parent

#: the sections whose python blocks tests/packaging/test_readme_snippets.py runs
SNIPPET_SECTIONS = {"Quickstart", "Async", "Spark", "Exactly-once copy", "Run a secured broker"}


def _section(title: str) -> str:
    parts = readme_text().split(f"\n## {title}\n", 1)
    assert len(parts) == 2, f"README.md has no section {title!r}"
    return parts[1].split("\n## ", 1)[0]


def test_description_comes_first_then_the_two_dev_commands() -> None:
    text = readme_text()
    title, rest = text.split("\n", 1)
    assert title == "# pykafka-client"
    first_paragraph = rest.strip().split("\n\n", 1)[0]
    assert first_paragraph.startswith("A Kafka client library for Python"), first_paragraph
    assert text.index(first_paragraph) < text.index("\n## ")
    first = code_blocks()[0]
    assert first.lang == "sh"
    assert [line.split()[:2] for line in first.code.splitlines()] == [["./dev", "demo"], ["./dev", "test"]]


def test_every_benchmark_script_is_named() -> None:
    benchmarks = _section("Benchmarks")
    missing = [p.name for p in sorted((ROOT / "bench").glob("*.py")) if f"bench/{p.name}" not in benchmarks]
    assert not missing, f"README.md's Benchmarks section does not name {missing}"


def _subcommands(argv: list[str]) -> list[str]:
    """The subcommands ``pykafka ARGV --help`` lists (none for a leaf command), read from the help text."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        build_parser().parse_args([*argv, "--help"])
    text = out.getvalue()
    if "positional arguments:" not in text:
        return []
    listing = text.split("positional arguments:", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^ {4}(\S+)", listing, re.M)


def _leaf_commands(argv: list[str]) -> list[str]:
    children = _subcommands(argv)
    if not children:
        return [" ".join(argv)]
    return [leaf for child in children for leaf in _leaf_commands([*argv, child])]


def test_every_cli_command_is_named() -> None:
    leaves = _leaf_commands([])
    assert {"topics list", "produce", "consume", "perf produce"} <= set(leaves), leaves
    text = readme_text()
    missing = [c for c in leaves if f"`{c}`" not in text and f"pykafka {c}" not in text]
    assert not missing, f"README.md does not name the CLI commands {missing}"
    status_line = next(line for line in _section("Status").splitlines() if "`pykafka` command-line tool" in line)
    assert all(c.split()[0] in status_line for c in leaves), status_line


def test_status_lists_only_what_exists() -> None:
    status = _section("Status")
    assert "not yet" not in status
    assert "idempotent only" not in status


@pytest.mark.parametrize("block", [b for b in code_blocks() if b.lang == "python"],
                         ids=lambda b: b.section)
def test_python_snippets_compile_and_are_run_by_the_snippet_tests(block: Block) -> None:
    compile(block.code, str(README), "exec")
    assert block.section in SNIPPET_SECTIONS


def test_snippet_tests_cover_every_python_section() -> None:
    sections = {b.section for b in code_blocks() if b.lang == "python"}
    assert sections == SNIPPET_SECTIONS
    runner = (Path(__file__).resolve().parents[1] / "packaging" / "test_readme_snippets.py").read_text()
    assert all(repr(s).replace("'", '"') in runner for s in SNIPPET_SECTIONS)

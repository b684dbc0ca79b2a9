"""Fixtures of the ``pykafka`` CLI tests: one MiniBroker per test module (tests use their own topics and
groups, so sharing it is safe) and :func:`pykafka`, which runs the real console entry point
(``python -m pykafka_client.cli``) as a subprocess against it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mini_broker.broker import MiniBroker

ROOT = Path(__file__).resolve().parents[3]

Run = Callable[..., "subprocess.CompletedProcess[bytes]"]


def cli_env(bootstrap: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYKAFKA_BOOTSTRAP_SERVERS"] = bootstrap
    env["PYTHONPATH"] = str(ROOT)
    return env


def cli_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "pykafka_client.cli", *args]


@pytest.fixture(scope="module")
def broker() -> Iterator[MiniBroker]:
    # groups form at once (no 3 s initial rebalance delay): the tests start many short group consumers
    with MiniBroker({"group.initial.rebalance.delay.ms": 0}) as b:
        yield b


def runner(broker: MiniBroker) -> Run:
    """``run("topics", "list", input=b"...")`` -> CompletedProcess with bytes stdout/stderr, against ``broker``."""

    def run(*args: str, input: bytes | None = None, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            cli_command(*args), input=input, capture_output=True, timeout=timeout, cwd=ROOT,
            env=cli_env(broker.bootstrap_servers),
        )

    return run


@pytest.fixture(scope="module")
def pykafka(broker: MiniBroker) -> Run:
    """``pykafka("topics", "list", input=b"...")`` -> CompletedProcess with bytes stdout/stderr."""
    return runner(broker)


def one_error_line(result: subprocess.CompletedProcess[bytes]) -> str:
    """The failure's single stderr line (asserts there is exactly one and no traceback)."""
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1, result.stderr.decode()
    assert "Traceback" not in lines[0]
    return lines[0]

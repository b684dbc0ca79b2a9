"""The examples under examples/ run the way people run them: ``python examples/X.py`` from the repository
root, as a subprocess. Each runs twice against one long-running broker (``--bootstrap``, a MiniBroker with
Kafka's default group settings, as an external cluster has them), the second run finding the first run's
topics, groups and records; and once on its own mini_broker process (the default without ``--bootstrap``).
``./dev demo``'s ``python -m examples.demo`` is in test_demo.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from mini_broker.broker import MiniBroker

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class Example:
    name: str
    args: tuple[str, ...]
    expected: tuple[str, ...]  # regular expressions, each must match a line of the output
    reuses_topics: bool = False  # a second run against the same broker finds the topics it creates

    def __str__(self) -> str:
        return self.name


PRODUCER = Example("producer", (), (r"^first record: partition \d, offset \d+$", r"^1001 records sent, 0 failed$"))
CONSUMER_GROUP = Example(
    "consumer_group",
    ("--records", "300"),
    (
        r"^  consumer-1: assigned \[0, 1, 2\]$",
        r"^  consumer-2: assigned \[0, 1, 2\]$",
        r"^  consumer-1 processed [1-9]\d* records$",
        r"^every record processed exactly once across both consumers: True$",
    ),
    reuses_topics=True,
)
EXACTLY_ONCE = Example(
    "exactly_once_copy",
    ("--records", "300"),
    (
        r"^first copier: committed [1-9]\d* records, then crashed with [1-9]\d* records in an open transaction$",
        r"^while it is open, read_committed readers see [1-9]\d* output records",
        r"^restarted copier: 300 records copied in all$",
        r"^read_committed sees every input record exactly once: True$",
        r"^read_uncommitted also sees the [1-9]\d* records of the aborted transaction$",
    ),
    reuses_topics=True,
)
ADMIN = Example(
    "admin",
    (),
    (
        r"^creating it again raises TopicExistsError$",
        r"^example-admin has partitions \[0, 1, 2, 3\]",
        r"^retention.ms = 3600000",
        r"^end offsets: \{0: 5, 1: 5, 2: 0, 3: 0\}$",
        r"^offsets of a missing topic raise UnknownTopicOrPartitionError at once",
        r"^deleted example-admin: True$",
    ),
)
DEMO = Example(
    "demo",
    ("--records", "3000"),
    (r"\(a separate process\)$", r"every record exactly once: True;  in order within each partition: True$"),
)
SPARK = Example(
    "spark_pipeline",
    ("--records", "200"),
    (r"^200 records written to example-spark-upper$", r"^read_committed sees every input record exactly once: True$"),
    reuses_topics=True,
)


def run_example(example: Example, *extra: str) -> str:
    """``python examples/<name>.py`` with the repository root as the working directory, as the examples'
    docstrings say; returns the output (the test fails with it if the exit code is not 0)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, f"examples/{example.name}.py", *example.args, *extra],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=500,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"examples/{example.name}.py {' '.join(extra)} exited {proc.returncode}:\n{output}"
    for pattern in example.expected:
        assert re.search(pattern, proc.stdout, re.M), f"no line matches {pattern!r} in:\n{output}"
    return proc.stdout


@pytest.fixture(scope="module")
def long_running_broker() -> Iterator[str]:
    with MiniBroker() as broker:
        yield broker.bootstrap_servers


@pytest.mark.parametrize("example", [PRODUCER, CONSUMER_GROUP, EXACTLY_ONCE, ADMIN], ids=str)
def test_example_runs_twice_against_one_broker(example: Example, long_running_broker: str) -> None:
    first = run_example(example, "--bootstrap", long_running_broker)
    second = run_example(example, "--bootstrap", long_running_broker)
    if example.reuses_topics:
        assert "an earlier run" not in first
        assert re.search(r"exists? \(an earlier run\): reusing", second), second


@pytest.mark.parametrize("example", [PRODUCER, CONSUMER_GROUP, EXACTLY_ONCE, ADMIN, DEMO], ids=str)
def test_example_runs_on_its_own_mini_broker(example: Example) -> None:
    run_example(example)


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(1200)  # two Spark applications, each starting its JVM (about 1 min each on an idle machine)
def test_spark_example_runs_twice_against_one_broker(long_running_broker: str) -> None:
    """Two Spark applications (each its own local JVM) against the same broker: the second copies only its
    own run's input (startingOffsets from where the input ended) and checks the output from where it ended."""
    run_example(SPARK, "--bootstrap", long_running_broker)
    second = run_example(SPARK, "--bootstrap", long_running_broker)
    assert "exist (an earlier run): reusing them" in second

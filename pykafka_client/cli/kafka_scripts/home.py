"""``pykafka kafka-path``: the directory that holds ``bin/`` with Kafka's scripts, so that
``KAFKA_PATH=$(pykafka kafka-path)`` works for tools that run ``$KAFKA_PATH/bin/kafka-topics.sh``.

The scripts find the Python to run on their own (see ``bin/kafka-run-class.sh``). For an install they cannot
work out from their path (a system or ``--user`` install, an editable install outside ``./dev``'s
``.venv``), ``kafka-path`` records the interpreter it runs on in ``python-path`` next to ``bin/`` when that
directory is writable; it also makes the scripts executable again if an unpacker lost their mode bits."""

from __future__ import annotations

import argparse
import os
import stat
import sys
from pathlib import Path
from typing import Any

from pykafka_client.cli.common import EXIT_OK, add_command

KAFKA_HOME = Path(__file__).resolve().parent.parent / "kafka_home"

#: The file the scripts read the recorded interpreter from (one line, the interpreter's path).
INTERPRETER_FILE = "python-path"

EXECUTABLE = stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    p = add_command(
        subparsers, "kafka-path", "print the directory whose bin/ holds Kafka's scripts (kafka-topics.sh, ...)", [],
        description="Print the directory whose bin/ holds Kafka's scripts on this client: kafka-topics.sh,\n"
                    "kafka-configs.sh, kafka-console-producer.sh, kafka-console-consumer.sh,\n"
                    "kafka-consumer-groups.sh, kafka-transactions.sh, kafka-producer-perf-test.sh and kafka-acls.sh,\n"
                    "with Kafka's flags and output.",
        epilog='example:\n  KAFKA_PATH=$(pykafka kafka-path)\n  "$KAFKA_PATH/bin/kafka-topics.sh" --bootstrap-server '
               "localhost:9092 --list",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    prepare(KAFKA_HOME, sys.executable)
    print(KAFKA_HOME)
    return EXIT_OK


def prepare(home: Path, interpreter: str) -> None:
    """Make the scripts of ``home/bin`` executable and record ``interpreter`` for them, as far as the
    directory lets us (a read-only install keeps what it has: the scripts still find their Python)."""
    for script in (home / "bin").glob("*.sh"):
        mode = script.stat().st_mode
        if mode & EXECUTABLE != EXECUTABLE:
            try:
                script.chmod(mode | EXECUTABLE)
            except OSError:
                pass
    recorded = home / INTERPRETER_FILE
    try:
        if not recorded.exists() or recorded.read_text(encoding="utf-8").strip() != interpreter:
            if os.access(home, os.W_OK):
                recorded.write_text(interpreter + "\n", encoding="utf-8")
    except OSError:
        pass

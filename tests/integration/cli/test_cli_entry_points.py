"""The CLI's entry points as real processes (the other CLI tests call ``main(argv)`` in process): the ``pykafka``
console script and ``python -m pykafka_client.cli`` read stdin, write bytes to stdout and exit with the command's
code; ``python -m pykafka_client.cli.kafka_scripts`` and every ``bin/kafka-*.sh`` shim (through
``kafka-run-class.sh``, by script name or by Kafka's class name) run their tool (the quickstart test of
test_kafka_scripts.py runs kafka-topics.sh and the console producer and consumer)."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client.cli.kafka_scripts.dispatch import SCRIPTS
from tests.integration.cli.conftest import ROOT, cli_command, cli_env, one_error_line, runner

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

CONSOLE_SCRIPT = Path(sys.executable).parent / "pykafka"


def _run(words: list[str], broker: MiniBroker, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(words, input=input, capture_output=True, timeout=90, cwd=ROOT,
                          env=cli_env(broker.bootstrap_servers))


def test_python_dash_m_produces_from_stdin_consumes_to_stdout_and_exits_with_the_code(broker: MiniBroker) -> None:
    topic = f"entry-{uuid.uuid4().hex[:8]}"
    assert runner(broker)("topics", "create", topic).returncode == 0
    produced = _run(cli_command("produce", topic), broker, input="héllo\nworld\n".encode())
    assert produced.returncode == 0, produced.stderr
    consumed = _run(cli_command("consume", topic, "--from-beginning", "--max-messages", "2"), broker)
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout == "héllo\nworld\n".encode()
    assert consumed.stderr.decode().strip() == "Processed a total of 2 messages"
    missing = _run(cli_command("topics", "describe", "no-such-topic"), broker)
    assert missing.returncode == 4
    assert "no-such-topic" in one_error_line(missing)


@pytest.mark.skipif(not CONSOLE_SCRIPT.exists(), reason="the package is not installed with its console script")
def test_the_console_script_runs_the_cli(broker: MiniBroker) -> None:
    topic = f"entry-{uuid.uuid4().hex[:8]}"
    created = _run([str(CONSOLE_SCRIPT), "topics", "create", topic], broker)
    assert created.returncode == 0, created.stderr
    assert topic in runner(broker)("topics", "list").stdout.decode().split()


def test_python_dash_m_kafka_scripts_runs_a_script(broker: MiniBroker, kafka_bin: Path) -> None:
    topic = f"entry-{uuid.uuid4().hex[:8]}"
    module = [sys.executable, "-m", "pykafka_client.cli.kafka_scripts"]
    created = _run([*module, "kafka-topics.sh", "--create", "--topic", topic, "--bootstrap-server",
                    broker.bootstrap_servers], broker)
    assert (created.returncode, created.stdout.decode()) == (0, f"Created topic {topic}.\n"), created.stderr
    by_class = _run([str(kafka_bin / "kafka-run-class.sh"), "kafka.admin.TopicCommand", "--list",
                     "--bootstrap-server", broker.bootstrap_servers], broker)
    assert by_class.returncode == 0, by_class.stderr
    assert topic in by_class.stdout.decode().split()


@pytest.fixture(scope="module")
def kafka_bin(broker: MiniBroker) -> Path:
    """``$(pykafka kafka-path)/bin``, as a user finds it."""
    done = runner(broker)("kafka-path")
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.decode().strip()) / "bin"


#: The shims test_kafka_scripts.py's quickstart test already runs by path against a broker (a process costs
#: a second or more of start-up and imports).
RUN_BY_THE_QUICKSTART = {"kafka-topics.sh", "kafka-console-producer.sh", "kafka-console-consumer.sh"}


@pytest.mark.parametrize("script", sorted(set(SCRIPTS) - RUN_BY_THE_QUICKSTART))
def test_every_other_shim_runs_its_tool(script: str, broker: MiniBroker, kafka_bin: Path) -> None:
    done = _run([str(kafka_bin / script), "--help"], broker)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().startswith(f"usage: {script} ")

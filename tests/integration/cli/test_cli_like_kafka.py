"""``pykafka`` behaves like Kafka's console tools (issue 22 item 4), in process against MiniBrokers:

* produce, consume and perf produce create a missing topic through the broker's auto-creation (the README's
  own perf produce example works on a fresh broker); with auto-creation off they fail with exit 4 and say
  how to create the topic;
* the common flags are accepted before the subcommand too;
* no option is taken for a longer one it begins; an unknown one is exit 2 with a suggestion, at once;
* exit codes and messages: an unknown partition is 4, argument errors never print consume's
  ``Processed a total`` line, errors name the flag the user typed, and no Python repr reaches a message.
"""

from __future__ import annotations

import re
import shlex
import socket
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from mini_broker.broker import MiniBroker
from tests.integration.cli.conftest import ROOT, Run, bootstrap_runner, one_error_line, runner

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

README = ROOT / "README.md"


def _topic() -> str:
    return f"like-kafka-{uuid.uuid4().hex[:8]}"


def _dead_bootstrap() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture(scope="module")
def no_auto_create() -> Iterator[Run]:
    """The CLI against a broker that does not create topics on use (auto.create.topics.enable=false)."""
    with MiniBroker({"auto.create.topics.enable": False, "group.initial.rebalance.delay.ms": 0}) as b:
        yield runner(b)


# -- auto-creation ---------------------------------------------------------------------------------------


def _topics(pykafka: Run) -> list[str]:
    listed = pykafka("topics", "list")
    assert listed.returncode == 0, listed.stderr
    return listed.stdout.decode().split()


def test_produce_creates_a_missing_topic_as_the_console_producer_does(pykafka: Run) -> None:
    topic = _topic()
    produced = pykafka("produce", topic, input=b"first\nsecond\n")
    assert produced.returncode == 0, produced.stderr
    assert "Produced 2 of 2 records" in produced.stderr.decode()
    assert topic in _topics(pykafka)
    consumed = pykafka("consume", topic, "--from-beginning", "--max-messages", "2")
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout == b"first\nsecond\n"


def test_consume_of_a_missing_topic_creates_it_and_waits_for_records(pykafka: Run) -> None:
    topic = _topic()
    consumed = pykafka("consume", topic, "--idle-timeout", "1")
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stderr.decode().strip().splitlines()[-1] == "Processed a total of 0 messages"
    assert topic in _topics(pykafka)
    in_group = pykafka("consume", _topic(), "--group", f"g-{uuid.uuid4().hex[:8]}", "--idle-timeout", "1")
    assert in_group.returncode == 0, in_group.stderr


def _readme_perf_produce_example() -> list[str]:
    row = next(line for line in README.read_text(encoding="utf-8").splitlines() if line.startswith("| `perf produce`"))
    example = re.findall(r"`(pykafka perf produce [^`]*)`", row)
    assert example, row
    return shlex.split(example[0])[1:]


def test_the_readme_perf_produce_example_works_on_a_fresh_broker(pykafka: Run) -> None:
    args = _readme_perf_produce_example()
    topic = args[args.index("--topic") + 1]
    assert topic not in _topics(pykafka)
    # as written, but fewer records: the same flags and topic, a run of a fraction of a second
    args[args.index("--num-records") + 1] = "500"
    result = pykafka(*args)
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode().strip().splitlines()[-1].startswith("500 records sent, ")
    assert topic in _topics(pykafka)


@pytest.mark.parametrize("command", [
    ["produce", "{t}"],
    ["produce", "{t}", "--partition", "0"],
    ["consume", "{t}", "--max-messages", "1"],
    ["consume", "{t}", "--group", "g", "--max-messages", "1"],
    ["perf", "produce", "--topic", "{t}", "--num-records", "1"],
])
def test_without_auto_creation_a_missing_topic_is_exit_4_naming_topics_create(no_auto_create: Run,
                                                                              command: list[str]) -> None:
    topic = _topic()
    result = no_auto_create(*(a.format(t=topic) for a in command), input=b"x\n", timeout=60)
    assert result.returncode == 4, result.stderr
    line = one_error_line(result)  # and so no "Processed a total of 0 messages" before it
    assert f"`pykafka topics create {topic}`" in line and "auto.create.topics.enable" in line
    assert "topics list" not in line
    assert topic not in no_auto_create("topics", "list").stdout.decode().split()


# -- global options --------------------------------------------------------------------------------------


def _run_with_dead_default(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    """The CLI with $PYKAFKA_BOOTSTRAP_SERVERS pointing at nothing: only a --bootstrap-server flag reaches a broker."""
    return bootstrap_runner(_dead_bootstrap())(*args, timeout=timeout)


def test_common_flags_before_the_subcommand(broker: MiniBroker, tmp_path: Path) -> None:
    boot = broker.bootstrap_servers
    before = _run_with_dead_default("--bootstrap-server", boot, "--timeout", "20", "-X", "client.id=before",
                                    "topics", "list")
    assert before.returncode == 0, before.stderr

    # after the subcommand wins over before it
    both = _run_with_dead_default("--bootstrap-server", _dead_bootstrap(), "--timeout", "20", "topics", "list",
                                  "--bootstrap-server", boot)
    assert both.returncode == 0, both.stderr

    # -X and --command-config before the subcommand are read (a wrong key is reported)
    typo = _run_with_dead_default("--bootstrap-server", boot, "-X", "lingr.ms=5", "topics", "list", "-X", "acks=1")
    assert typo.returncode == 2 and "did you mean 'linger.ms'" in one_error_line(typo)
    props = tmp_path / "client.properties"
    props.write_text("no.such.key=1\n", encoding="utf-8")
    config = _run_with_dead_default("--bootstrap-server", boot, "--command-config", str(props), "topics", "list")
    assert config.returncode == 2 and "no.such.key" in one_error_line(config)

    debug = _run_with_dead_default("--bootstrap-server", boot, "--debug", "topics", "describe", "no-such-topic")
    assert debug.returncode == 4 and "Traceback" in debug.stderr.decode()


# -- no prefix matching ----------------------------------------------------------------------------------


def test_a_prefix_of_an_option_is_rejected_at_once_with_a_suggestion(pykafka: Run) -> None:
    topic = _topic()
    assert pykafka("topics", "create", topic).returncode == 0
    # before: --max-message was taken as --max-messages and consume waited for a record that never came
    result = pykafka("consume", topic, "--max-message", "1", timeout=30)
    assert result.returncode == 2, result.stderr
    line = one_error_line(result)
    assert "unrecognized arguments: --max-message; did you mean --max-messages?" in line
    before = pykafka("--bootstrap-serv", "x:1", "topics", "list", timeout=30)
    assert before.returncode == 2 and "did you mean --bootstrap-server?" in one_error_line(before)


# -- exit codes and messages -----------------------------------------------------------------------------


@pytest.mark.parametrize("command", [
    ["consume", "{t}", "--partition", "7", "--max-messages", "1"],
    ["produce", "{t}", "--partition", "7"],
])
def test_an_unknown_partition_is_exit_4(pykafka: Run, command: list[str]) -> None:
    topic = _topic()
    assert pykafka("topics", "create", topic, "--partitions", "2").returncode == 0
    result = pykafka(*(a.format(t=topic) for a in command), input=b"x\n")
    assert result.returncode == 4, result.stderr
    assert f"partition {topic}-7 does not exist" in one_error_line(result)


@pytest.mark.parametrize(("flags", "says"), [
    (["--partition", "0", "--offset", "bogus"], "--offset 'bogus'"),
    (["--partition", "0", "--offset", "@x"], "--offset '@x'"),
])
def test_consume_argument_errors_do_not_print_processed_a_total(pykafka: Run, flags: list[str], says: str) -> None:
    topic = _topic()
    assert pykafka("topics", "create", topic).returncode == 0
    result = pykafka("consume", topic, *flags)
    assert result.returncode == 2, result.stderr
    assert says in one_error_line(result)
    assert b"Processed a total" not in result.stderr


def test_offsets_time_errors_name_time(pykafka: Run) -> None:
    topic = _topic()
    assert pykafka("topics", "create", topic).returncode == 0
    result = pykafka("offsets", topic, "--time", "nonsense")
    assert result.returncode == 2, result.stderr
    line = one_error_line(result)
    assert "--time 'nonsense'" in line and "--to-datetime" not in line
    assert "earliest" in line and "YYYY-MM-DDTHH:MM:SS" in line


def test_reset_offsets_rejects_a_bad_datetime_before_connecting() -> None:
    result = _run_with_dead_default("groups", "reset-offsets", "--group", "g", "--topic", "t", "--to-datetime", "xx",
                                    "--timeout", "2")
    assert result.returncode == 2, result.stderr
    assert "--to-datetime 'xx'" in one_error_line(result)


REPR = re.compile(r"ConfigResource\(|<[A-Za-z]+\.[A-Z_]+: -?\d+>|\[Error \d+\]")


def test_configs_errors_name_the_resource_without_a_repr(pykafka: Run) -> None:
    topic = _topic()
    assert pykafka("topics", "create", topic).returncode == 0
    bad_key = pykafka("configs", "alter", "--topic", topic, "--add-config", "bogus.key=1")
    assert bad_key.returncode == 1, bad_key.stderr
    line = one_error_line(bad_key)
    assert f"topic '{topic}'" in line and "bogus.key" in line and not REPR.search(line), line

    missing = pykafka("configs", "describe", "--topic", "no-such-topic")
    assert missing.returncode == 4, missing.stderr
    line = one_error_line(missing)
    assert "topic 'no-such-topic'" in line and not REPR.search(line), line


def test_configs_of_a_broker_not_in_the_cluster_is_exit_4_at_once(pykafka: Run) -> None:
    # before: the request waited --timeout for broker 99 and reported "could not reach the cluster" (exit 3)
    result = pykafka("configs", "describe", "--broker", "99", "--timeout", "20", timeout=60)
    assert result.returncode == 4, result.stderr
    line = one_error_line(result)
    assert "broker 99 is not in the cluster" in line and not REPR.search(line)

"""Kafka's scripts (``$(pykafka kafka-path)/bin/kafka-*.sh``, issue 28 item 3) run by path against a MiniBroker:
Kafka's quickstart commands as written, and each script's main flags, output formats and exit codes (0, or 1
with Kafka's message for an unknown topic or group and a missing flag)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import AdminClient, KafkaConsumer
from tests.integration.cli.conftest import cli_env, run_script, runner

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

Script = Callable[..., "subprocess.CompletedProcess[str]"]

#: Kafka's quickstart (kafka.apache.org/quickstart, steps 3 to 5), as written; only the broker's address differs.
QUICKSTART = """\
KAFKA_PATH=$(pykafka kafka-path)
cd "$KAFKA_PATH"
bin/kafka-topics.sh --create --topic quickstart-events --bootstrap-server localhost:9092
bin/kafka-topics.sh --describe --topic quickstart-events --bootstrap-server localhost:9092
printf 'This is my first event\\nThis is my second event\\n' | \\
  bin/kafka-console-producer.sh --topic quickstart-events --bootstrap-server localhost:9092
"""


@pytest.fixture(scope="module")
def kafka_path(broker: MiniBroker) -> Path:
    done = runner(broker)("kafka-path")
    assert done.returncode == 0, done.stderr
    path = Path(done.stdout.decode().strip())
    assert (path / "bin" / "kafka-topics.sh").is_file()
    return path


@pytest.fixture(scope="module")
def kafka(broker: MiniBroker, kafka_path: Path) -> Script:
    """``kafka("kafka-topics.sh", "--list", input="...")``: the script (one of ``kafka_path``'s), with
    --bootstrap-server, run in this process as its shim runs it (test_cli_entry_points.py runs every shim by
    path)."""

    def run(script: str, *args: str, input: str | None = None, bootstrap: bool = True,
            timeout: float = 90) -> subprocess.CompletedProcess[str]:
        assert (kafka_path / "bin" / script).is_file(), script
        words = [*args, "--bootstrap-server", broker.bootstrap_servers] if bootstrap else list(args)
        return run_script(script, words, input=input, bootstrap_env=broker.bootstrap_servers, timeout=timeout)

    return run


def _topic() -> str:
    return f"scripts-{uuid.uuid4().hex[:8]}"


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, (done.stdout, done.stderr)
    return done.stdout


def _usage_error(done: subprocess.CompletedProcess[str], message: str) -> None:
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stderr.splitlines()[0] == message, done.stderr


# -- Kafka's quickstart ---------------------------------------------------------------------------------------


def test_kafkas_quickstart_commands_work_as_written(broker: MiniBroker, kafka_path: Path, tmp_path: Path) -> None:
    env = cli_env(broker.bootstrap_servers)
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"  # `pykafka` as an install puts it
    shell = QUICKSTART.replace("localhost:9092", broker.bootstrap_servers)
    if not (Path(sys.executable).parent / "pykafka").exists():
        shell = shell.replace("$(pykafka kafka-path)", f"$({sys.executable} -m pykafka_client.cli kafka-path)")
    done = subprocess.run(["sh", "-ec", shell], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert done.returncode == 0, (done.stdout, done.stderr)
    lines = done.stdout.splitlines()
    assert lines[0] == "Created topic quickstart-events."
    assert re.fullmatch(r"Topic: quickstart-events\tTopicId: [A-Za-z0-9_-]{22}\tPartitionCount: 1\t"
                        r"ReplicationFactor: 1\tConfigs: .*", lines[1]), lines[1]
    assert re.fullmatch(r"\tTopic: quickstart-events\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0", lines[2]), lines[2]
    assert len(lines) == 3, lines  # the console producer prints nothing (no prompt when stdin is not a terminal)

    # step 5: the console consumer reads both events and runs until Ctrl-C
    consumer = subprocess.Popen(
        [str(kafka_path / "bin" / "kafka-console-consumer.sh"), "--topic", "quickstart-events", "--from-beginning",
         "--bootstrap-server", broker.bootstrap_servers],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=kafka_path, env=env,
    )
    try:
        assert consumer.stdout is not None
        assert consumer.stdout.readline() == "This is my first event\n"
        assert consumer.stdout.readline() == "This is my second event\n"
        consumer.send_signal(signal.SIGINT)
        _, err = consumer.communicate(timeout=60)
    finally:
        consumer.kill()
    assert consumer.returncode == 0, err
    assert err.strip().splitlines()[-1] == "Processed a total of 2 messages"


# -- kafka-topics.sh ------------------------------------------------------------------------------------------


def test_topics_create_describe_alter_list_delete(kafka: Script) -> None:
    topic = _topic()
    assert _ok(kafka("kafka-topics.sh", "--create", "--topic", topic, "--partitions", "3", "--replication-factor", "1",
                     "--config", "retention.ms=60000")) == f"Created topic {topic}.\n"
    described = _ok(kafka("kafka-topics.sh", "--describe", "--topic", topic)).splitlines()
    assert re.fullmatch(rf"Topic: {topic}\tTopicId: \S+\tPartitionCount: 3\tReplicationFactor: 1\t"
                        r"Configs: (.*,)?retention.ms=60000(,.*)?", described[0]), described[0]
    assert [line.split("\t")[2] for line in described[1:]] == ["Partition: 0", "Partition: 1", "Partition: 2"]
    assert _ok(kafka("kafka-topics.sh", "--alter", "--topic", topic, "--partitions", "4")) == ""
    assert "PartitionCount: 4" in _ok(kafka("kafka-topics.sh", "--describe", "--topic", topic))
    assert topic in _ok(kafka("kafka-topics.sh", "--list")).split()
    # --topic is a regular expression for --list and --describe, as in Kafka
    assert _ok(kafka("kafka-topics.sh", "--list", "--topic", f"{topic[:-2]}.*")).split() == [topic]
    assert _ok(kafka("kafka-topics.sh", "--delete", "--topic", topic)) == ""
    assert topic not in _ok(kafka("kafka-topics.sh", "--list")).split()


def test_topics_replica_assignment_on_create_and_alter(kafka: Script) -> None:
    topic = _topic()
    assert _ok(kafka("kafka-topics.sh", "--create", "--topic", topic, "--replica-assignment", "0,0")) == \
        f"Created topic {topic}.\n"
    assert "PartitionCount: 2\tReplicationFactor: 1" in _ok(kafka("kafka-topics.sh", "--describe", "--topic", topic))
    # the assignment lists every partition, the existing ones first (left as they are)
    assert _ok(kafka("kafka-topics.sh", "--alter", "--topic", topic, "--partitions", "3",
                     "--replica-assignment", "0,0,0")) == ""
    lines = _ok(kafka("kafka-topics.sh", "--describe", "--topic", topic)).splitlines()
    assert [line.split("\t")[2:5] for line in lines[1:]] == [
        [f"Partition: {p}", "Leader: 0", "Replicas: 0"] for p in range(3)]
    # a broker that does not exist is the broker's refusal, as Kafka's tool reports it
    refused = kafka("kafka-topics.sh", "--create", "--topic", _topic(), "--replica-assignment", "0,7")
    assert refused.returncode == 1
    assert refused.stdout.startswith("Error while executing topic command : "), refused.stdout
    bad = kafka("kafka-topics.sh", "--create", "--topic", _topic(), "--replica-assignment", "0:0")
    assert bad.returncode == 1
    assert "Partition replica lists may not contain duplicate entries: 0:0" in bad.stdout + bad.stderr


def test_topics_describe_partition_filters(kafka: Script) -> None:
    plain, strict = _topic(), _topic()
    _ok(kafka("kafka-topics.sh", "--create", "--topic", plain, "--partitions", "2"))
    # one replica can never reach min.insync.replicas=2: under min ISR, as Kafka's filter reports it
    _ok(kafka("kafka-topics.sh", "--create", "--topic", strict, "--partitions", "1",
              "--config", "min.insync.replicas=2"))
    both = f"{plain}|{strict}"
    under = _ok(kafka("kafka-topics.sh", "--describe", "--topic", both, "--under-min-isr-partitions"))
    assert [line.split("\t")[1:3] for line in under.splitlines()] == [[f"Topic: {strict}", "Partition: 0"]]
    at_min = _ok(kafka("kafka-topics.sh", "--describe", "--topic", both, "--at-min-isr-partitions"))
    assert [line.split("\t")[1:3] for line in at_min.splitlines()] == [
        [f"Topic: {plain}", "Partition: 0"], [f"Topic: {plain}", "Partition: 1"]]
    assert _ok(kafka("kafka-topics.sh", "--describe", "--topic", both, "--under-replicated-partitions")) == ""
    assert _ok(kafka("kafka-topics.sh", "--describe", "--topic", both, "--unavailable-partitions")) == ""
    overrides = _ok(kafka("kafka-topics.sh", "--describe", "--topic", both, "--topics-with-overrides"))
    assert [line.split("\t")[0] for line in overrides.splitlines()] == [f"Topic: {strict}"]


def test_topics_errors_are_kafkas(kafka: Script) -> None:
    topic = _topic()
    missing = kafka("kafka-topics.sh", "--describe", "--topic", topic)
    assert missing.returncode == 1
    assert missing.stdout == f"Error while executing topic command : Topic '{topic}' does not exist as expected\n"
    _ok(kafka("kafka-topics.sh", "--create", "--topic", topic))
    again = kafka("kafka-topics.sh", "--create", "--topic", topic)
    assert again.returncode == 1
    assert again.stdout == f"Error while executing topic command : Topic '{topic}' already exists.\n"
    assert _ok(kafka("kafka-topics.sh", "--create", "--topic", topic, "--if-not-exists")) == ""
    # the other scripts' usage errors are checked in-process: tests/unit/cli/test_kafka_scripts_parsing.py
    _usage_error(kafka("kafka-topics.sh", "--create"), 'Missing required argument "[topic]"')


# -- kafka-configs.sh -----------------------------------------------------------------------------------------


def test_configs_alter_and_describe(kafka: Script) -> None:
    topic = _topic()
    _ok(kafka("kafka-topics.sh", "--create", "--topic", topic))
    altered = kafka("kafka-configs.sh", "--alter", "--entity-type", "topics", "--entity-name", topic,
                    "--add-config", "retention.ms=1000,cleanup.policy=[compact,delete]")
    assert _ok(altered) == f"Completed updating config for topic {topic}.\n"
    assert _ok(kafka("kafka-configs.sh", "--describe", "--entity-type", "topics", "--entity-name", topic)) == (
        f"Dynamic configs for topic {topic} are:\n"
        "  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete}\n"
        "  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000}\n"
    )
    _ok(kafka("kafka-configs.sh", "--alter", "--topic", topic, "--delete-config", "cleanup.policy"))
    left = _ok(kafka("kafka-configs.sh", "--describe", "--topic", topic)).splitlines()
    assert [line.split("=")[0].strip() for line in left[1:]] == ["retention.ms"]
    every = _ok(kafka("kafka-configs.sh", "--describe", "--topic", topic, "--all")).splitlines()
    assert every[0] == f"All configs for topic {topic} are:"
    assert any(line.startswith("  segment.bytes=") for line in every)


def test_configs_users_and_clients_quotas_and_scram_credentials(kafka: Script) -> None:
    user, client = f"u-{uuid.uuid4().hex[:6]}", f"c-{uuid.uuid4().hex[:6]}"
    # Kafka's SASL/SCRAM setup command, as its docs write it
    assert _ok(kafka("kafka-configs.sh", "--alter", "--add-config",
                     "SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-secret]",
                     "--entity-type", "users", "--entity-name", user)) == f"Completed updating config for user {user}.\n"
    assert _ok(kafka("kafka-configs.sh", "--alter", "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048",
                     "--entity-type", "users", "--entity-name", user)) == f"Completed updating config for user {user}.\n"
    assert _ok(kafka("kafka-configs.sh", "--describe", "--entity-type", "users", "--entity-name", user)).splitlines() == [
        f"Quota configs for user-principal '{user}' are consumer_byte_rate=2048.0, producer_byte_rate=1024.0",
        f"SCRAM credential configs for user-principal '{user}' are SCRAM-SHA-256=iterations=8192, "
        "SCRAM-SHA-512=iterations=4096"]
    # a user's quota for one client, and the default client id's
    _ok(kafka("kafka-configs.sh", "--alter", "--add-config", "request_percentage=50", "--entity-type", "users",
              "--entity-name", user, "--entity-type", "clients", "--entity-name", client))
    assert _ok(kafka("kafka-configs.sh", "--alter", "--add-config", "producer_byte_rate=10000000",
                     "--client-defaults")) == "Completed updating default config for clients in the cluster.\n"
    assert _ok(kafka("kafka-configs.sh", "--describe", "--user", user, "--client", client)) == \
        f"Quota configs for user-principal '{user}', client-id '{client}' are request_percentage=50.0\n"
    assert "Quota configs for the default client-id are producer_byte_rate=1.0E7" in _ok(
        kafka("kafka-configs.sh", "--describe", "--entity-type", "clients", "--entity-default"))
    _ok(kafka("kafka-configs.sh", "--alter", "--delete-config", "SCRAM-SHA-512,consumer_byte_rate", "--user", user))
    assert _ok(kafka("kafka-configs.sh", "--describe", "--user", user)).splitlines() == [
        f"Quota configs for user-principal '{user}' are producer_byte_rate=1024.0",
        f"SCRAM credential configs for user-principal '{user}' are SCRAM-SHA-256=iterations=8192"]
    _ok(kafka("kafka-configs.sh", "--alter", "--delete-config", "producer_byte_rate", "--client-defaults"))
    assert "default client-id" not in _ok(kafka("kafka-configs.sh", "--describe", "--entity-type", "clients"))


def test_configs_of_an_unknown_topic_fail(kafka: Script) -> None:
    done = kafka("kafka-configs.sh", "--describe", "--entity-type", "topics", "--entity-name", _topic())
    assert done.returncode == 1
    assert done.stderr.startswith("Error while executing config command with args '--describe --entity-type topics")


# -- console producer and consumer ----------------------------------------------------------------------------


def test_console_producer_keys_and_console_consumer_properties(kafka: Script) -> None:
    topic = _topic()  # created on use, as by Kafka's console producer
    produced = kafka("kafka-console-producer.sh", "--topic", topic, "--property", "parse.key=true",
                     "--property", "key.separator=:", "--producer-property", "acks=1", input="k1:v1\nk2:v:2\n")
    assert _ok(produced) == ""
    consumed = kafka("kafka-console-consumer.sh", "--topic", topic, "--from-beginning", "--max-messages", "2",
                     "--property", "print.key=true", "--property", "print.offset=true", "--property", "key.separator=|")
    assert _ok(consumed) == "Offset:0|k1|v1\nOffset:1|k2|v:2\n"
    assert consumed.stderr.splitlines()[-1] == "Processed a total of 2 messages"
    one = kafka("kafka-console-consumer.sh", "--topic", topic, "--partition", "0", "--offset", "1", "--max-messages", "1")
    assert _ok(one) == "v:2\n"


def test_console_producer_refuses_a_line_without_the_key_separator(kafka: Script) -> None:
    topic = _topic()
    done = kafka("kafka-console-producer.sh", "--topic", topic, "--property", "parse.key=true", input="no separator\n")
    assert done.returncode == 1
    assert "No key separator found on line number 1: 'no separator'" in done.stderr


def test_console_consumer_timeout_ms_ends_with_kafkas_lines(kafka: Script) -> None:
    done = kafka("kafka-console-consumer.sh", "--topic", _topic(), "--timeout-ms", "1000")
    assert _ok(done) == ""
    assert done.stderr.splitlines()[-2:] == [
        "ERROR Error processing message, terminating consumer process: org.apache.kafka.common.errors.TimeoutException",
        "Processed a total of 0 messages",
    ]


# -- kafka-consumer-groups.sh ---------------------------------------------------------------------------------


def test_consumer_groups_describe_reset_and_delete(kafka: Script) -> None:
    topic, group = _topic(), f"g-{uuid.uuid4().hex[:8]}"
    _ok(kafka("kafka-console-producer.sh", "--topic", topic, input="a\nb\nc\n"))
    _ok(kafka("kafka-console-consumer.sh", "--topic", topic, "--group", group, "--from-beginning", "--max-messages", "2"))
    assert group in _ok(kafka("kafka-consumer-groups.sh", "--list")).split()

    described = _ok(kafka("kafka-consumer-groups.sh", "--describe", "--group", group)).splitlines()
    assert described[1] == f"Consumer group '{group}' has no active members."
    header = described[3].split()
    assert header == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
                      "CLIENT-ID"]
    assert described[4].split() == [group, topic, "0", "2", "3", "1", "-", "-", "-"]
    # Kafka's columns: PARTITION 10 wide, the offsets 15 wide, one space apart
    assert described[3].index("CURRENT-OFFSET") - described[3].index("PARTITION") == 11

    plan = kafka("kafka-consumer-groups.sh", "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest")
    assert _ok(plan).splitlines()[0].startswith("WARN: No action will be performed as the --execute option is missing.")
    done = _ok(kafka("kafka-consumer-groups.sh", "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest",
                     "--execute")).splitlines()
    assert done[1].split() == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
    assert done[2].split() == [group, topic, "0", "0"]
    assert "0" == _ok(kafka("kafka-consumer-groups.sh", "--describe", "--group", group)).splitlines()[4].split()[3]

    deleted = kafka("kafka-consumer-groups.sh", "--delete", "--group", group)
    assert _ok(deleted) == f"Deletion of requested consumer groups ('{group}') was successful.\n"
    assert group not in _ok(kafka("kafka-consumer-groups.sh", "--list")).split()


def test_consumer_groups_export_and_delete_offsets(kafka: Script, broker: MiniBroker) -> None:
    topic, other, group = _topic(), _topic(), f"g-{uuid.uuid4().hex[:8]}"
    _ok(kafka("kafka-topics.sh", "--create", "--topic", topic, "--partitions", "2"))
    _ok(kafka("kafka-console-producer.sh", "--topic", topic, input="a\nb\nc\n"))
    _ok(kafka("kafka-consumer-groups.sh", "--reset-offsets", "--group", group, "--topic", topic, "--to-latest",
              "--execute"))
    exported = _ok(kafka("kafka-consumer-groups.sh", "--reset-offsets", "--group", group, "--topic", f"{topic}:1",
                         "--to-offset", "0", "--export", "--dry-run"))
    assert exported.splitlines()[-1] == f"{topic},1,0"

    # an unknown topic is its row's error; the known partitions' offsets are deleted all the same
    done = kafka("kafka-consumer-groups.sh", "--delete-offsets", "--group", group, "--topic", topic, "--topic", other)
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stdout.splitlines()
    assert lines[1] == "Error: Encounter some partition level error, see the follow-up details:"
    assert lines[3].split() == ["TOPIC", "PARTITION", "STATUS"]
    rows = {(t, p): status.strip() for t, p, status in (line.split(None, 2) for line in lines[4:])}
    assert rows.keys() == {(topic, "0"), (topic, "1"), (other, "-1")}
    assert rows[(topic, "0")] == rows[(topic, "1")] == "Successful"
    assert rows[(other, "-1")].startswith("Error: ") and "UNKNOWN_TOPIC_OR_PARTITION" in rows[(other, "-1")]
    with AdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        assert admin.list_consumer_group_offsets(group, timeout=15) == {}

    # a group that consumes the topic is refused per partition (GROUP_SUBSCRIBED_TO_TOPIC), a missing one as a whole
    with KafkaConsumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group,
                        "auto.offset.reset": "earliest"}) as consumer:
        consumer.subscribe([topic])
        while not consumer.assignment():
            consumer.poll(0.2)
        consumer.commit_sync()
        busy = kafka("kafka-consumer-groups.sh", "--delete-offsets", "--group", group, "--topic", f"{topic}:0")
    assert busy.returncode == 1
    assert busy.stdout.splitlines()[-1].split(None, 2)[:2] == [topic, "0"]
    assert "subscribed" in busy.stdout.splitlines()[-1].lower(), busy.stdout
    missing = kafka("kafka-consumer-groups.sh", "--delete-offsets", "--group", f"nope-{group}", "--topic", topic)
    assert missing.returncode == 1
    assert f"'nope-{group}' does not exist." in missing.stdout


def test_consumer_groups_unknown_group(kafka: Script) -> None:
    group = f"g-{uuid.uuid4().hex[:8]}"
    done = kafka("kafka-consumer-groups.sh", "--describe", "--group", group)
    assert done.returncode == 1
    assert done.stdout.strip() == f"Error: Consumer group '{group}' does not exist."


# -- kafka-transactions.sh and kafka-producer-perf-test.sh ----------------------------------------------------


def test_transactions_tables(kafka: Script) -> None:
    topic = _topic()
    _ok(kafka("kafka-console-producer.sh", "--topic", topic, input="x\n"))
    listed = _ok(kafka("kafka-transactions.sh", "list")).splitlines()
    assert listed[0].split() == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    producers = _ok(kafka("kafka-transactions.sh", "describe-producers", "--topic", topic, "--partition", "0"))
    header, row = producers.splitlines()
    assert header.split() == ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
                              "CurrentTransactionStartOffset"]
    assert row.split()[3] == "0" and row.split()[5] == "None"  # one record (sequence 0), no open transaction
    unknown = kafka("kafka-transactions.sh", "describe", "--transactional-id", f"t-{uuid.uuid4().hex[:8]}")
    assert unknown.returncode == 1
    assert unknown.stderr.startswith("ERROR ")


def test_producer_perf_test_summary_line(kafka: Script, broker: MiniBroker) -> None:
    topic = _topic()
    done = kafka("kafka-producer-perf-test.sh", "--topic", topic, "--num-records", "200", "--record-size", "50",
                 "--throughput", "-1", "--producer-props", f"bootstrap.servers={broker.bootstrap_servers}", "acks=1",
                 bootstrap=False)
    last = _ok(done).splitlines()[-1]
    assert re.fullmatch(r"200 records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, [\d.]+ ms "
                        r"max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99\.9th\.", last), last

"""Kafka's scripts read Kafka's flags and fail as Kafka's tools do before connecting anywhere: the message
(``Missing required argument "[topic]"``, ``--x is not a recognized option``, ``Command must include exactly one
action: ...``) then the help on stderr, exit code 1. And the console tools' line formats: the console
producer's ``parse.key`` / ``parse.headers`` / ``null.marker`` lines, the console consumer's ``print.*`` output."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from pykafka_client.cli.common import CliError
from pykafka_client.cli.kafka_scripts import (
    client_configs,
    configs,
    console_consumer,
    console_producer,
    consumer_groups,
    producer_perf,
    topics,
    transactions,
)
from pykafka_client.cli.kafka_scripts.dispatch import main as dispatch
from pykafka_client.consumer.consumer_record import ConsumerRecord, TimestampType

BOOTSTRAP = ["--bootstrap-server", "127.0.0.1:1"]

USAGE_ERRORS = [
    (topics, ["--create", *BOOTSTRAP], 'Missing required argument "[topic]"'),
    (topics, ["--create", "--topic", "t"], 'Missing required argument "[bootstrap-server]"'),
    (topics, BOOTSTRAP, "Command must include exactly one action: --list, --describe, --create, --alter or --delete"),
    (topics, ["--list", "--describe", *BOOTSTRAP], "Command must include exactly one action"),
    (topics, ["--list", "--bogus", *BOOTSTRAP], "--bogus is not a recognized option"),
    (topics, ["--list", "--bootstrap-server"], "Option --bootstrap-server requires an argument"),
    (topics, ["--alter", "--topic", "t", *BOOTSTRAP], 'Missing required argument "[partitions]"'),
    (topics, ["--alter", "--topic", "t", "--partitions", "2", "--config", "a=b", *BOOTSTRAP],
     'Option "[config]" can\'t be used with option "[alter]"'),
    (topics, ["--create", "--topic", "t", "--partitions", "2", "--replica-assignment", "0,1", *BOOTSTRAP],
     'Option "[replica-assignment]" can\'t be used with option "[partitions]"'),
    (topics, ["--create", "--topic", "t", "--replication-factor", "2", "--replica-assignment", "0:1", *BOOTSTRAP],
     'Option "[replica-assignment]" can\'t be used with option "[replication-factor]"'),
    (topics, ["--list", "--replica-assignment", "0", *BOOTSTRAP],
     'Option "[replica-assignment]" can\'t be used with option "[list]"'),
    (topics, ["--list", "--under-replicated-partitions", *BOOTSTRAP],
     'Option "[under-replicated-partitions]" can\'t be used with option "[list]"'),
    (configs, ["--describe", *BOOTSTRAP], "At least one entity type must be specified"),
    (configs, ["--alter", "--entity-type", "topics", "--entity-name", "t", *BOOTSTRAP],
     "At least one of --add-config or --delete-config must be specified with --alter"),
    (configs, ["--alter", "--entity-type", "topics", "--add-config", "a=b", *BOOTSTRAP],
     "An entity name must be specified with --alter"),
    (configs, ["--describe", "--entity-type", "groups", *BOOTSTRAP], "Invalid entity type groups"),
    (configs, ["--describe", "--entity-type", "users", "--entity-type", "topics", *BOOTSTRAP],
     "Only users and clients can be named together"),
    (configs, ["--alter", "--entity-type", "users", "--add-config", "producer_byte_rate=1", *BOOTSTRAP],
     "An entity name must be specified with --alter"),
    (console_producer, BOOTSTRAP, 'Missing required argument "[topic]"'),
    (console_producer, ["--topic", "t"], 'Missing required argument "[bootstrap-server]"'),
    (console_consumer, BOOTSTRAP, "Exactly one of include/topic is required."),
    (console_consumer, ["--topic", "t", "--offset", "3", *BOOTSTRAP], "The partition is required when offset is specified."),
    (console_consumer, ["--topic", "t", "--partition", "0", "--offset", "3", "--from-beginning", *BOOTSTRAP],
     "Options from-beginning and offset cannot be specified together."),
    (console_consumer, ["--topic", "t", "--partition", "0", "--group", "g", *BOOTSTRAP],
     "Options group and partition cannot be specified together."),
    (consumer_groups, ["--describe", *BOOTSTRAP], 'Missing required argument "[group]"'),
    (consumer_groups, BOOTSTRAP, "Command must include exactly one action: --list, --describe, --delete, "
                                 "--reset-offsets or --delete-offsets"),
    (consumer_groups, ["--reset-offsets", "--group", "g", "--topic", "t", *BOOTSTRAP],
     "One of the reset options should be defined"),
    (consumer_groups, ["--reset-offsets", "--group", "g", "--to-offset", "0", *BOOTSTRAP],
     "One of the reset scopes should be defined"),  # --to-offset 0 is a reset option (was refused as none)
    (consumer_groups, ["--delete-offsets", "--group", "g", *BOOTSTRAP], 'Missing required argument "[topic]"'),
    (consumer_groups, ["--delete-offsets", "--group", "g", "--group", "h", "--topic", "t", *BOOTSTRAP],
     "Option [delete-offsets] takes exactly one --group"),
    (consumer_groups, ["--reset-offsets", "--group", "g", "--to-earliest", *BOOTSTRAP],
     "One of the reset scopes should be defined: --all-topics, --topic."),
    (transactions, ["describe", *BOOTSTRAP], "the following arguments are required: --transactional-id"),
    (transactions, BOOTSTRAP, "too few arguments"),
    (producer_perf, ["--topic", "t", "--num-records", "1", "--record-size", "1"],
     "the following arguments are required: --throughput"),
    (producer_perf, ["--topic", "t", "--num-records", "1", "--throughput", "-1", "--producer-props", "a=b"],
     "Either --record-size or --payload-file must be specified but not both."),
    (producer_perf, ["--topic", "t", "--num-records", "1", "--throughput", "-1", "--record-size", "1"],
     "Either --bootstrap-server or bootstrap.servers"),
]


@pytest.mark.parametrize(("tool", "argv", "message"), USAGE_ERRORS,
                         ids=[f"{t.__name__.rsplit('.', 1)[-1]}-{i}" for i, (t, _, _) in enumerate(USAGE_ERRORS)])
def test_usage_errors_are_kafkas_message_then_the_help_and_exit_1(
        tool: object, argv: Sequence[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        tool.main(list(argv))  # type: ignore[attr-defined]
    assert exited.value.code == 1
    err = capsys.readouterr().err
    assert message in err.splitlines()[0], err
    assert "usage:" in err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        topics.main(["--help"])
    assert exited.value.code == 0
    assert "--bootstrap-server" in capsys.readouterr().out


def test_an_unknown_script_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert dispatch(["kafka-server-start.sh"]) == 1
    assert "kafka-topics.sh" in capsys.readouterr().err


def test_kafkas_tool_class_names_run_their_script(capsys: pytest.CaptureFixture[str]) -> None:
    """``kafka-run-class.sh kafka.admin.TopicCommand ...`` (as some tools call it) is kafka-topics.sh."""
    with pytest.raises(SystemExit) as exited:
        dispatch(["kafka.admin.TopicCommand", "--create", *BOOTSTRAP])
    assert exited.value.code == 1
    assert capsys.readouterr().err.startswith('Missing required argument "[topic]"')
    assert dispatch(["org.apache.kafka.tools.NoSuchTool"]) == 1


def test_replica_assignment_is_read_as_kafka_reads_it() -> None:
    assert topics.parse_replica_assignment("0:1,1:2, 2:0") == {0: [0, 1], 1: [1, 2], 2: [2, 0]}
    assert topics.parse_replica_assignment("3") == {0: [3]}
    with pytest.raises(CliError, match="may not contain duplicate entries: 1:1"):
        topics.parse_replica_assignment("0:1,1:1")
    with pytest.raises(CliError, match="Partition 1 has different replication factor: 2"):
        topics.parse_replica_assignment("0:1,2")
    with pytest.raises(CliError, match="partition 0 names 'a'"):
        topics.parse_replica_assignment("a")


def test_quota_values_and_entities_print_as_kafkas_config_command() -> None:
    assert [client_configs.java_double(v) for v in (1024.0, 50, 0.5, 1e7, 12345678.0, 0.0, 1e-4)] == [
        "1024.0", "50.0", "0.5", "1.0E7", "1.2345678E7", "0.0", "1.0E-4"]
    assert client_configs.entity_text({"client-id": "c", "user": "alice"}) == "user-principal 'alice', client-id 'c'"
    assert client_configs.entity_text({"user": None}) == "the default user-principal"


def test_console_producer_lines_as_kafka_reads_them() -> None:
    reader = console_producer.LineReader({"parse.key": "true", "key.separator": ":", "parse.headers": "true",
                                          "headers.delimiter": "|", "null.marker": "NULL"})
    assert reader.fields(b"h1:a,h2:NULL|k:v:w") == {"key": b"k", "value": b"v:w", "headers": [("h1", b"a"), ("h2", None)],
                                                   "partition": None}
    assert reader.fields(b"|NULL:v")["key"] is None
    with pytest.raises(ValueError, match=r"No key separator found on line number 3: '\|nokey'"):
        reader.fields(b"|nokey")
    with pytest.raises(ValueError, match="No headers delimiter found on line number 4"):
        reader.fields(b"k:v")
    lenient = console_producer.LineReader({"parse.key": "true", "ignore.error": "true"})
    assert lenient.fields(b"no separator") == {"key": None, "value": b"no separator", "headers": [], "partition": None}
    plain = console_producer.LineReader({})
    assert plain.fields(b"a\tb")["value"] == b"a\tb"


def _record(key: bytes | None, value: bytes | None,
            headers: list[tuple[str, bytes | None]]) -> ConsumerRecord[bytes | None, bytes | None]:
    return ConsumerRecord("t", 2, 7, 1700000000000, TimestampType.CREATE_TIME, key, value, headers)


def test_console_consumer_prints_as_kafkas_default_formatter() -> None:
    every = console_consumer.message_format({
        "print.timestamp": "true", "print.partition": "true", "print.offset": "true", "print.headers": "true",
        "print.key": "true", "key.separator": " | ",
    })
    assert every.render(_record(b"k", b"v", [("a", b"1"), ("b", None)])) == \
        b"CreateTime:1700000000000 | Partition:2 | Offset:7 | a:1,b:null | k | v\n"
    assert every.render(_record(None, None, [])) == \
        b"CreateTime:1700000000000 | Partition:2 | Offset:7 | NO_HEADERS | null | null\n"
    assert console_consumer.message_format({}).render(_record(b"k", b"v", [])) == b"v\n"
    keys_only = console_consumer.message_format({"print.key": "true", "print.value": "false"})
    assert keys_only.render(_record(b"k", b"v", [])) == b"k\n"

"""``pykafka`` failure paths and perf tests (run in process): an unreachable broker (exit 3), an unknown
topic of a command that does not create it (exit 4; produce and consume: test_cli_like_kafka.py), bad flags (exit 2) each as one line on stderr without a traceback (``--debug`` shows
one); --command-config and -X; every --help reads; perf produce holds a throttled rate within 10% and
prints Kafka's lines; perf consume prints Kafka's consumer line."""

from __future__ import annotations

import re
import socket
import uuid
from pathlib import Path

import pytest

from tests.integration.cli.conftest import Run, bootstrap_runner, one_error_line

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("command", [
    ["topics", "list"],
    ["produce", "some-topic"],
    ["consume", "some-topic", "--max-messages", "1"],
    ["groups", "list"],
])
def test_unreachable_broker_is_one_line_and_exit_3(command: list[str]) -> None:
    result = bootstrap_runner("unused:1")(*command, "--bootstrap-server", f"127.0.0.1:{_closed_port()}", "--timeout",
                                          "1.5", input=b"")
    assert result.returncode == 3
    line = one_error_line(result)
    assert "could not reach the cluster" in line and "--bootstrap-server" in line


@pytest.mark.parametrize("command", [
    ["offsets", "no-such-topic"],
    ["topics", "describe", "no-such-topic"],
    ["configs", "describe", "--topic", "no-such-topic"],
    ["perf", "consume", "--topic", "no-such-topic", "--messages", "1"],
])
def test_unknown_topic_is_one_line_and_exit_4(pykafka: Run, command: list[str]) -> None:
    result = pykafka(*command, input=b"x\n")
    assert result.returncode == 4, result.stderr
    assert "no-such-topic" in one_error_line(result)


@pytest.mark.parametrize(("command", "says"), [
    (["topics", "create"], "required: TOPIC"),
    (["topics", "list", "--bogus"], "unrecognized arguments: --bogus"),
    (["nosuch"], "invalid choice"),
    (["topics", "list", "--timeout", "-1"], "must be greater than 0"),
    (["topics", "list", "-X", "lingr.ms=5"], "did you mean 'linger.ms'"),
    (["topics", "list", "-X", "linger.ms"], "not KEY=VALUE"),
    (["topics", "list", "--command-config", "/no/such/file"], "cannot read --command-config"),
    (["consume", "t", "--offset", "3"], "--offset needs --partition"),
    (["consume", "t", "--partition", "0", "--group", "g"], "cannot be used with --group"),
    (["consume", "t", "--format", "%q"], "unknown field %q"),
    (["produce", "t", "--acks", "2"], "invalid choice"),
    (["groups", "reset-offsets", "--group", "g", "--all-topics"], "one of the arguments"),
    (["groups", "reset-offsets", "--group", "g", "--all-topics", "--to-earliest", "--by-duration", "P1D"], "not allowed"),
    (["produce", "t", "--file", "/no/such/file", "-X", "client.id=x"], "cannot read --file"),
])
def test_bad_flags_are_one_line_and_exit_2(pykafka: Run, command: list[str], says: str) -> None:
    topic_needed = command[0] in ("consume", "produce") and "--file" in command
    if topic_needed:
        assert pykafka("topics", "create", "t", "--if-not-exists").returncode == 0
    result = pykafka(*command)
    assert result.returncode == 2, result.stderr
    assert says in one_error_line(result)


def test_debug_shows_the_traceback(pykafka: Run) -> None:
    result = pykafka("topics", "describe", "no-such-topic", "--debug")
    assert result.returncode == 4 and "Traceback" in result.stderr.decode()


def test_command_config_file_and_x_overrides(pykafka: Run, tmp_path: Path) -> None:
    props = tmp_path / "client.properties"
    props.write_text("# a comment\nclient.id = from-file\nrequest.timeout.ms: 20000\nlinger.ms=7\n", encoding="utf-8")
    ok = pykafka("topics", "list", "--command-config", str(props), "-X", "client.id=from-x")
    assert ok.returncode == 0, ok.stderr
    props.write_text("no.such.key=1\n", encoding="utf-8")
    bad = pykafka("topics", "list", "--command-config", str(props))
    assert bad.returncode == 2 and "no.such.key" in one_error_line(bad)


HELP = [
    [], ["topics"], ["topics", "list"], ["topics", "describe"], ["topics", "create"], ["topics", "delete"],
    ["topics", "alter"], ["produce"], ["consume"], ["groups"], ["groups", "list"], ["groups", "describe"],
    ["groups", "reset-offsets"], ["groups", "delete"], ["configs"], ["configs", "describe"], ["configs", "alter"],
    ["offsets"], ["perf"], ["perf", "produce"], ["perf", "consume"],
]


@pytest.mark.parametrize("command", HELP, ids=lambda c: " ".join(c) or "pykafka")
def test_every_help_reads(pykafka: Run, command: list[str]) -> None:
    result = pykafka(*command, "--help")
    assert result.returncode == 0 and result.stderr == b""
    text = result.stdout.decode()
    assert text.startswith(f"usage: pykafka {' '.join(command)}".rstrip())
    if len(command) != 1 or command[0] in ("produce", "consume", "offsets"):
        assert "example" in text  # leaf commands end with an example (and the top level with exit codes)
    if command:
        assert len(text.splitlines()) > 5
    else:
        assert "exit codes:" in text and all(c in text for c in ("topics", "produce", "consume", "groups", "perf"))


FINAL = re.compile(
    r"^(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, ([\d.]+) ms max latency, "
    r"(\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th\.$"
)
WINDOW = re.compile(r"^\d+ records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, [\d.]+ ms max latency\.$")


def test_perf_produce_holds_a_throttled_rate_and_perf_consume_reads_it(pykafka: Run) -> None:
    topic = f"perf-{uuid.uuid4().hex[:8]}"
    assert pykafka("topics", "create", topic, "--partitions", "2").returncode == 0
    result = pykafka("perf", "produce", "--topic", topic, "--num-records", "300", "--record-size", "64",
                     "--throughput", "100", "--reporting-interval", "1", "-X", "acks=1")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.decode().strip().splitlines()
    assert all(WINDOW.match(line) for line in lines[:-1]) and len(lines) >= 2
    final = FINAL.match(lines[-1])
    assert final is not None, lines[-1]
    assert int(final.group(1)) == 300
    assert 90.0 <= float(final.group(2)) <= 110.0, lines[-1]
    p50, p95, p99, p999 = (int(final.group(i)) for i in range(6, 10))
    assert p50 <= p95 <= p99 <= p999 <= float(final.group(5))

    consumed = pykafka("perf", "consume", "--topic", topic, "--messages", "300")
    assert consumed.returncode == 0, consumed.stderr
    header, row = consumed.stdout.decode().strip().splitlines()
    assert header.startswith("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
                             "rebalance.time.ms")
    fields = row.split(", ")
    assert int(fields[4]) == 300 and float(fields[2]) == pytest.approx(300 * 64 / (1024 * 1024), abs=1e-4)

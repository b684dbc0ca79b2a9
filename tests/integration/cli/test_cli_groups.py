"""``pykafka groups`` and ``pykafka consume --group`` in process against one MiniBroker: lag before
and after consumption, reset-offsets (the dry run changes nothing, --execute changes exactly the planned
offsets), refusals while a member is active (exit 5), delete, and Ctrl-C stopping a group consumer with
its summary line and a commit (a real ``python -m pykafka_client.cli`` process, sent SIGINT)."""

from __future__ import annotations

import json
import signal
import subprocess
import uuid
from collections.abc import Iterator

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import KafkaConsumer
from tests.integration.cli.conftest import ROOT, Run, cli_command, cli_env, one_error_line

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture()
def topic(pykafka: Run) -> str:
    """A topic with 2 partitions holding 5 records each (values p<partition>-<n>)."""
    name = f"cli-{uuid.uuid4().hex[:8]}"
    assert pykafka("topics", "create", name, "--partitions", "2").returncode == 0
    lines = b"".join(json.dumps({"value": f"p{i % 2}-{i // 2}", "partition": i % 2}).encode() + b"\n" for i in range(10))
    assert pykafka("produce", name, "--json", input=lines).returncode == 0
    return name


def _offsets(pykafka: Run, group: str) -> dict[int, tuple[int | None, int, int | None]]:
    """partition -> (committed, log end, lag) from `groups describe --output json`."""
    result = pykafka("groups", "describe", group, "--output", "json")
    assert result.returncode == 0, result.stderr
    [described] = json.loads(result.stdout)
    return {r["partition"]: (r["current_offset"], r["log_end_offset"], r["lag"]) for r in described["offsets"]}


def test_lag_before_and_after_consumption(pykafka: Run, topic: str) -> None:
    group = f"g-{topic}"
    some = pykafka("consume", topic, "--group", group, "--from-beginning", "--max-messages", "4")
    assert some.returncode == 0 and len(some.stdout.splitlines()) == 4
    before = _offsets(pykafka, group)
    assert sum(c or 0 for c, _, _ in before.values()) == 4
    assert sum(lag if lag is not None else end for _, end, lag in before.values()) == 6
    assert all(end == 5 for _, end, _ in before.values())

    # partition 1 has no committed offset yet: --from-beginning starts it at the earliest (Kafka's reset rule)
    rest = pykafka("consume", topic, "--group", group, "--from-beginning", "--max-messages", "6")
    assert rest.returncode == 0 and len(rest.stdout.splitlines()) == 6
    assert _offsets(pykafka, group) == {0: (5, 5, 0), 1: (5, 5, 0)}

    people = pykafka("groups", "describe", group).stdout.decode().splitlines()
    assert people[0].startswith(f"Group: {group}  State: Empty")
    assert people[2].split()[:5] == ["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"]
    listed = {g["group"]: g for g in json.loads(pykafka("groups", "list", "--output", "json").stdout)}
    assert listed[group]["state"] == "Empty" and listed[group]["protocol_type"] == "consumer"


def test_reset_offsets_dry_run_changes_nothing_and_execute_changes_exactly_the_plan(pykafka: Run, topic: str) -> None:
    group = f"g-{topic}"
    assert pykafka("consume", topic, "--group", group, "--from-beginning", "--max-messages", "10").returncode == 0
    assert _offsets(pykafka, group) == {0: (5, 5, 0), 1: (5, 5, 0)}

    dry = pykafka("groups", "reset-offsets", "--group", group, "--all-topics", "--to-earliest", "--output", "json")
    assert dry.returncode == 0 and "Dry run" in dry.stderr.decode()
    assert [(r["partition"], r["current_offset"], r["new_offset"]) for r in json.loads(dry.stdout)] == [(0, 5, 0), (1, 5, 0)]
    assert _offsets(pykafka, group) == {0: (5, 5, 0), 1: (5, 5, 0)}

    for flags, expected in (
        (["--by-duration", "P1D"], [(0, 5, 0), (1, 5, 0)]),  # every record is younger than a day
        (["--to-datetime", "2999-01-01T00:00:00Z"], [(0, 5, 5), (1, 5, 5)]),
        (["--to-offset", "99"], [(0, 5, 5), (1, 5, 5)]),  # kept within the log
    ):
        plan = pykafka("groups", "reset-offsets", "--group", group, "--topic", topic, *flags, "--output", "json")
        assert [(r["partition"], r["current_offset"], r["new_offset"]) for r in json.loads(plan.stdout)] == expected
    assert _offsets(pykafka, group) == {0: (5, 5, 0), 1: (5, 5, 0)}

    done = pykafka("groups", "reset-offsets", "--group", group, "--topic", f"{topic}:0", "--shift-by", "-2",
                   "--execute", "--output", "json")
    assert done.returncode == 0, done.stderr
    assert [(r["partition"], r["new_offset"]) for r in json.loads(done.stdout)] == [(0, 3)]
    assert _offsets(pykafka, group) == {0: (3, 5, 2), 1: (5, 5, 0)}

    again = pykafka("consume", topic, "--group", group, "--max-messages", "2", "--format", "%p %s\\n")
    assert sorted(again.stdout.splitlines()) == [b"0 p0-3", b"0 p0-4"]


@pytest.fixture()
def active_member(broker: MiniBroker, topic: str) -> Iterator[str]:
    """A group with one member (this process) that holds both partitions; yields the group id."""
    group = f"active-{topic}"
    consumer: KafkaConsumer[bytes | None, bytes | None] = KafkaConsumer(
        bootstrap_servers=broker.bootstrap_servers, group_id=group, auto_offset_reset="earliest"
    )
    try:
        consumer.subscribe([topic])
        for _ in range(60):
            consumer.poll(0.5)
            if len(consumer.assignment()) == 2:
                break
        assert len(consumer.assignment()) == 2
        consumer.commit_sync()
        yield group
    finally:
        consumer.close()


def test_a_group_with_active_members_is_described_and_refused(pykafka: Run, topic: str, active_member: str) -> None:
    [described] = json.loads(pykafka("groups", "describe", active_member, "--output", "json").stdout)
    assert described["state"] == "Stable" and described["protocol"] == "range"
    [member] = described["members"]
    assert member["assignment"] == [f"{topic}-0", f"{topic}-1"]
    assert {r["consumer_id"] for r in described["offsets"]} == {member["member_id"]}

    refused = pykafka("groups", "reset-offsets", "--group", active_member, "--all-topics", "--to-earliest", "--execute")
    assert refused.returncode == 5
    assert "active member" in one_error_line(refused) and refused.stdout == b""
    not_deleted = pykafka("groups", "delete", "--group", active_member)
    assert not_deleted.returncode == 5 and "active members" in one_error_line(not_deleted)


def test_delete_group_then_it_is_unknown(pykafka: Run, topic: str) -> None:
    group = f"g-{topic}"
    assert pykafka("consume", topic, "--group", group, "--from-beginning", "--max-messages", "1").returncode == 0
    assert pykafka("groups", "delete", "--group", group).returncode == 0
    gone = pykafka("groups", "describe", group)
    assert gone.returncode == 4 and "does not exist" in one_error_line(gone)
    unknown = pykafka("groups", "delete", "--group", group)
    assert unknown.returncode == 4, unknown.stderr


def test_ctrl_c_stops_a_group_consumer_with_a_summary_and_commits(pykafka: Run, broker: MiniBroker, topic: str) -> None:
    group = f"g-{topic}"
    process = subprocess.Popen(
        cli_command("consume", topic, "--group", group, "--from-beginning"), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, cwd=ROOT, env=cli_env(broker.bootstrap_servers),
    )
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(10)]
        assert all(line.startswith(b"p") for line in lines)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err.decode()
    assert err.decode().strip() == "Processed a total of 10 messages"
    assert _offsets(pykafka, group) == {0: (5, 5, 0), 1: (5, 5, 0)}


def test_describe_a_group_whose_topic_was_deleted(pykafka: Run, topic: str) -> None:
    group = f"g-{topic}"
    assert pykafka("consume", topic, "--group", group, "--from-beginning", "--max-messages", "10").returncode == 0
    assert pykafka("topics", "delete", topic).returncode == 0
    result = pykafka("groups", "describe", group, "--output", "json")
    assert result.returncode == 0, result.stderr
    [described] = json.loads(result.stdout)
    assert all(r["log_end_offset"] is None and r["lag"] is None for r in described["offsets"])


def test_ctrl_c_while_records_are_printed_still_commits(pykafka: Run, broker: MiniBroker) -> None:
    """SIGINT lands while a large batch is written (not inside poll): its wakeup must not fail the commit."""
    name = f"cli-{uuid.uuid4().hex[:8]}"
    assert pykafka("topics", "create", name, "--partitions", "1").returncode == 0
    assert pykafka("produce", name, input=b"".join(b"r%d\n" % i for i in range(20_000))).returncode == 0
    group = f"g-{name}"
    process = subprocess.Popen(
        cli_command("consume", name, "--group", group, "--from-beginning"), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, cwd=ROOT, env=cli_env(broker.bootstrap_servers),
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == b"r0\n"
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err.decode()
    printed = int(err.decode().strip().removeprefix("Processed a total of ").removesuffix(" messages"))
    assert _offsets(pykafka, group)[0][0] == printed

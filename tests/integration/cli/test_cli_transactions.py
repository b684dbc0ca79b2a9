"""``pykafka transactions list | describe | find-hanging`` and ``pykafka producers describe`` run
in process against one MiniBroker, with our transactional KafkaProducer holding a transaction open over
two partitions: it shows as Ongoing with those partitions, as a producer with a current transaction start
offset, and not as hanging (its coordinator is finishing it); after commit it is CompleteCommit and the
partitions have no open transaction; after an abort, CompleteAbort. An unknown transactional id or topic is exit 4 with one line."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import KafkaProducer
from tests.integration.cli.conftest import Run, one_error_line

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def topic(pykafka: Run) -> str:
    name = f"cli-txn-{uuid.uuid4().hex[:8]}"
    created = pykafka("topics", "create", name, "--partitions", "3")
    assert created.returncode == 0, created.stderr
    return name


@pytest.fixture(scope="module")
def open_txn(broker: MiniBroker, topic: str) -> Iterator[tuple[KafkaProducer, str]]:
    tid = f"cli-tx-{uuid.uuid4().hex[:8]}"
    producer = KafkaProducer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": tid, "linger.ms": 0})
    try:
        producer.init_transactions(30)
        producer.begin_transaction()
        for p in (0, 2):
            producer.send(topic, b"v%d" % p, partition=p).result(30)
        yield producer, tid
    finally:
        producer.close()


def _json(pykafka: Run, *args: str) -> list[dict[str, object]]:
    result = pykafka(*args, "--output", "json")
    assert result.returncode == 0, result.stderr
    parsed = json.loads(result.stdout)
    assert isinstance(parsed, list)
    return parsed


def test_open_transaction_then_commit(pykafka: Run, topic: str, open_txn: tuple[KafkaProducer, str]) -> None:
    producer, tid = open_txn
    [d] = _json(pykafka, "transactions", "describe", "--transactional-id", tid)
    assert d["transactional_id"] == tid and d["state"] == "Ongoing"
    assert d["partitions"] == [{"topic": topic, "partition": 0}, {"topic": topic, "partition": 2}]
    assert isinstance(d["start_time_ms"], int) and isinstance(d["duration_ms"], int) and d["duration_ms"] >= 0
    pid = d["producer_id"]
    people = pykafka("transactions", "describe", "--transactional-id", tid).stdout.decode().splitlines()
    assert people[0].split()[:5] == ["TRANSACTIONAL-ID", "COORDINATOR", "PRODUCER-ID", "PRODUCER-EPOCH", "STATE"]
    assert people[1].split()[4] == "Ongoing" and people[1].split()[-1] == f"{topic}-0,{topic}-2"

    listed = {t["transactional_id"]: t for t in _json(pykafka, "transactions", "list")}
    assert listed[tid] == {"transactional_id": tid, "producer_id": pid, "state": "Ongoing"}
    ongoing = [t["transactional_id"] for t in _json(pykafka, "transactions", "list", "--state", "Ongoing")]
    assert tid in ongoing
    assert tid not in [t["transactional_id"] for t in _json(pykafka, "transactions", "list", "--state", "Empty")]
    recent = _json(pykafka, "transactions", "list", "--state", "Ongoing", "--duration-ms", "3600000")
    assert tid not in [t["transactional_id"] for t in recent]  # started less than an hour ago
    people_list = pykafka("transactions", "list").stdout.decode()
    assert any(line.split() == [tid, str(pid), "Ongoing"] for line in people_list.splitlines())

    producers = _json(pykafka, "producers", "describe", "--topic", topic)
    by_partition = {p["partition"]: p for p in producers if p["producer_id"] == pid}
    assert set(by_partition) == {0, 2}
    assert all(p["current_transaction_start_offset"] == 0 for p in by_partition.values())
    only_two = _json(pykafka, "producers", "describe", "--topic", topic, "--partition", "2")
    assert {p["partition"] for p in only_two} == {2}

    # open, but its coordinator will write its markers: not hanging, even with no age threshold
    assert _json(pykafka, "transactions", "find-hanging", "--topic", topic, "--max-transaction-timeout", "0") == []

    producer.commit_transaction(30)
    [done] = _json(pykafka, "transactions", "describe", "--transactional-id", tid)
    assert done["state"] == "CompleteCommit" and done["partitions"] == [] and done["duration_ms"] is None
    after = [p for p in _json(pykafka, "producers", "describe", "--topic", topic) if p["producer_id"] == pid]
    assert after and all(p["current_transaction_start_offset"] is None for p in after)

    producer.begin_transaction()
    producer.send(topic, b"dropped", partition=1).result(30)
    producer.abort_transaction(30)
    [aborted] = _json(pykafka, "transactions", "describe", "--transactional-id", tid)
    assert aborted["state"] == "CompleteAbort" and aborted["partitions"] == []


def test_unknown_transactional_id_and_topic_are_exit_4(pykafka: Run) -> None:
    missing = pykafka("transactions", "describe", "--transactional-id", "no-such-txn-id")
    assert missing.returncode == 4, missing.stderr
    line = one_error_line(missing)
    assert "unknown transactional id" in line and "no-such-txn-id" in line and "transactions list" in line

    gone = pykafka("producers", "describe", "--topic", f"no-such-{uuid.uuid4().hex[:6]}")
    assert gone.returncode == 4 and "unknown topic" in one_error_line(gone)


def test_partition_beyond_the_topic_is_exit_4(pykafka: Run, topic: str) -> None:
    result = pykafka("producers", "describe", "--topic", topic, "--partition", "7")
    assert result.returncode == 4 and f"{topic}-7 does not exist" in one_error_line(result)

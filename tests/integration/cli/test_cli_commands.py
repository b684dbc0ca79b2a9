"""``pykafka topics | produce | consume | configs | offsets`` run (in process) against one MiniBroker:
the topics round trip, produce then consume byte-exact (keys, values, headers), JSON produce with a bad
line, start offsets, configs alter/describe and offsets; every ``--output json`` parses."""

from __future__ import annotations

import json
import uuid

import pytest

from mini_broker.broker import MiniBroker
from tests.integration.cli.conftest import Run, one_error_line

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def _topic() -> str:
    return f"cli-{uuid.uuid4().hex[:8]}"


def test_topics_round_trip(pykafka: Run, broker: MiniBroker) -> None:
    topic = _topic()
    created = pykafka("topics", "create", topic, "--partitions", "3", "--config", "retention.ms=123456")
    assert created.returncode == 0, created.stderr
    assert topic in json.loads(pykafka("topics", "list", "--output", "json").stdout)
    assert topic in pykafka("topics", "list").stdout.decode().split()

    [described] = json.loads(pykafka("topics", "describe", topic, "--output", "json").stdout)
    assert described["partition_count"] == 3 and described["replication_factor"] == 1
    assert described["configs"] == {"retention.ms": "123456"}
    assert [p["partition"] for p in described["partitions"]] == [0, 1, 2]
    assert all(p["leader"] == broker.config.node_id and p["replicas"] == p["isr"] == [p["leader"]]
               for p in described["partitions"])
    people = pykafka("topics", "describe", topic).stdout.decode()
    assert f"Topic: {topic}" in people and "Configs: retention.ms=123456" in people
    assert people.splitlines()[1].split() == ["PARTITION", "LEADER", "REPLICAS", "ISR"]

    again = pykafka("topics", "create", topic)
    assert again.returncode == 1 and "already exists" in one_error_line(again)
    assert pykafka("topics", "create", topic, "--if-not-exists").returncode == 0

    assert pykafka("topics", "alter", topic, "--partitions", "5").returncode == 0
    [grown] = json.loads(pykafka("topics", "describe", topic, "--output", "json").stdout)
    assert grown["partition_count"] == 5

    assert pykafka("topics", "delete", topic).returncode == 0
    assert topic not in json.loads(pykafka("topics", "list", "--output", "json").stdout)
    gone = pykafka("topics", "delete", topic)
    assert gone.returncode == 4 and "unknown topic" in one_error_line(gone)


def test_produce_then_consume_is_byte_exact(pykafka: Run) -> None:
    topic = _topic()
    assert pykafka("topics", "create", topic, "--partitions", "1").returncode == 0
    lines = [b"k1:v\xff\x00one", b"k2:value:with:separators", b":no key bytes", b"k4:"]
    produced = pykafka("produce", topic, "--key-separator", ":", "--header", "a=1", "--header", "b=x=y",
                       "--acks", "1", "--linger-ms", "0", "--compression", "gzip", input=b"\n".join(lines) + b"\n")
    assert produced.returncode == 0, produced.stderr
    assert "Produced 4 of 4 records" in produced.stderr.decode()

    consumed = pykafka("consume", topic, "--from-beginning", "--max-messages", "4",
                       "--format", "%t|%p|%o|%k|%s|%h|%K|%S\\n")
    assert consumed.returncode == 0, consumed.stderr
    expected = b"".join(
        b"%s|0|%d|%s|%s|a=1,b=x=y|%d|%d\n" % (topic.encode(), i, k, v, len(k), len(v))
        for i, (k, _, v) in enumerate(line.partition(b":") for line in lines)
    )
    assert consumed.stdout == expected
    assert consumed.stderr.decode().strip() == "Processed a total of 4 messages"

    # start offsets: a number, a timestamp, earliest; default output is the value per line
    second = pykafka("consume", topic, "--partition", "0", "--offset", "1", "--max-messages", "1")
    assert second.stdout == b"value:with:separators\n"
    first = pykafka("consume", topic, "--partition", "0", "--offset", "@0", "--max-messages", "1", "--print-key")
    assert first.stdout == b"k1\tv\xff\x00one\n"


def test_produce_json_reports_bad_lines_and_exits_non_zero(pykafka: Run) -> None:
    topic = _topic()
    assert pykafka("topics", "create", topic, "--partitions", "2").returncode == 0
    good = {"key": "jk", "value": "jv", "headers": {"h": "v", "n": None}, "partition": 1}
    body = json.dumps(good).encode() + b"\nnot json\n" + json.dumps({"value": {"nested": [1, 2]}}).encode() + b"\n"
    produced = pykafka("produce", topic, "--json", input=body)
    assert produced.returncode == 1
    err = produced.stderr.decode().splitlines()
    assert err[0].startswith("pykafka produce: line 2: ") and "Produced 2 of 3 records" in err[-1]

    out = pykafka("consume", topic, "--partition", "1", "--offset", "earliest", "--max-messages", "1",
                  "--format", "%k %s %h\\n")
    assert out.stdout == b"jk jv h=v,n=\n"
    nested = pykafka("consume", topic, "--from-beginning", "--max-messages", "2", "--format", "%s\\n")
    assert b'{"nested":[1,2]}\n' in nested.stdout


def test_configs_describe_and_incremental_alter(pykafka: Run, broker: MiniBroker) -> None:
    topic = _topic()
    assert pykafka("topics", "create", topic, "--config", "segment.bytes=1048576").returncode == 0
    altered = pykafka("configs", "alter", "--topic", topic, "--add-config", "retention.ms=5000,cleanup.policy=[delete]",
                      "--delete-config", "segment.bytes")
    assert altered.returncode == 0, altered.stderr
    rows = {r["name"]: r for r in json.loads(pykafka("configs", "describe", "--topic", topic, "--output", "json").stdout)}
    assert set(rows) == {"retention.ms", "cleanup.policy"}
    assert rows["retention.ms"]["value"] == "5000" and rows["retention.ms"]["source"] == "DYNAMIC_TOPIC_CONFIG"
    every = json.loads(pykafka("configs", "describe", "--topic", topic, "--all", "--output", "json").stdout)
    assert any(r["name"] == "segment.bytes" and r["source"] == "DEFAULT_CONFIG" for r in every)
    brokers = pykafka("configs", "describe", "--broker", str(broker.config.node_id), "--all", "--output", "json")
    assert brokers.returncode == 0 and json.loads(brokers.stdout)
    nothing = pykafka("configs", "alter", "--topic", topic)
    assert nothing.returncode == 2 and "nothing to change" in one_error_line(nothing)


def test_offsets_earliest_latest_and_for_a_time(pykafka: Run) -> None:
    topic = _topic()
    assert pykafka("topics", "create", topic, "--partitions", "2").returncode == 0
    records = b"".join(json.dumps({"value": f"v{i}", "partition": i % 2}).encode() + b"\n" for i in range(5))
    assert pykafka("produce", topic, "--json", input=records).returncode == 0
    latest = json.loads(pykafka("offsets", topic, "--output", "json").stdout)
    assert [(r["partition"], r["offset"]) for r in latest] == [(0, 3), (1, 2)]
    earliest = json.loads(pykafka("offsets", topic, "--time", "earliest", "--partition", "1", "--output", "json").stdout)
    assert [(r["partition"], r["offset"]) for r in earliest] == [(1, 0)]
    by_time = json.loads(pykafka("offsets", topic, "--time", "0", "--output", "json").stdout)
    assert [r["offset"] for r in by_time] == [0, 0]
    future = json.loads(pykafka("offsets", topic, "--time", "2999-01-01T00:00:00Z", "--output", "json").stdout)
    assert [r["offset"] for r in future] == [-1, -1]
    table = pykafka("offsets", topic).stdout.decode().splitlines()
    assert table[0].split() == ["TOPIC", "PARTITION", "OFFSET", "TIMESTAMP"] and table[1].split()[:3] == [topic, "0", "3"]



def test_configs_of_a_broker(pykafka: Run, broker: MiniBroker) -> None:
    node = str(broker.config.node_id)
    rows = {r["name"]: r for r in json.loads(
        pykafka("configs", "describe", "--broker", node, "--all", "--output", "json").stdout)}
    assert rows["auto.create.topics.enable"]["source"] in ("DEFAULT_CONFIG", "STATIC_BROKER_CONFIG")
    # mini_broker alters topic configs only: the broker's refusal is one line and exit 1 (a real Kafka broker
    # accepts this dynamic config)
    refused = pykafka("configs", "alter", "--broker", node, "--add-config", "background.threads=4")
    assert refused.returncode == 1 and "INVALID_REQUEST" in one_error_line(refused)

"""``pykafka groups describe`` / ``groups list --type`` for a KIP-848 consumer group (group.protocol=consumer):
the group's type, epoch and members' epochs are shown (Kafka's kafka-consumer-groups.sh shows the group protocol
since 3.7), and the type filter of ListGroups v5."""

from __future__ import annotations

import json
import uuid

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import KafkaConsumer
from tests.integration.cli.conftest import Run

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def test_consumer_group_shows_its_type_and_epochs(pykafka: Run, broker: MiniBroker) -> None:
    topic = f"cli-kip848-{uuid.uuid4().hex[:8]}"
    assert pykafka("topics", "create", topic, "--partitions", "2").returncode == 0
    group = f"g-{topic}"
    consumer: KafkaConsumer[bytes | None, bytes | None] = KafkaConsumer(
        bootstrap_servers=broker.bootstrap_servers, group_id=group, group_protocol="consumer")
    try:
        consumer.subscribe([topic])
        for _ in range(100):
            consumer.poll(0.1)
            if len(consumer.assignment()) == 2:
                break
        for _ in range(10):  # let the acknowledging heartbeat go out
            consumer.poll(0.1)
        assert len(consumer.assignment()) == 2
        [described] = json.loads(pykafka("groups", "describe", group, "--output", "json").stdout)
        assert described["type"] == "consumer" and described["group_epoch"] >= 1
        [member] = described["members"]
        assert member["member_epoch"] >= 1 and sorted(member["assignment"]) == [f"{topic}-0", f"{topic}-1"]
        text = pykafka("groups", "describe", group).stdout.decode().splitlines()
        assert "  Type: consumer  " in text[0]
        assert text[2].split()[:5] == ["MEMBER-ID", "CLIENT-ID", "HOST", "EPOCH", "ASSIGNMENT"]
        consumer_groups = {g["group"] for g in json.loads(
            pykafka("groups", "list", "--type", "consumer", "--output", "json").stdout)}
        classic_groups = {g["group"] for g in json.loads(
            pykafka("groups", "list", "--type", "classic", "--output", "json").stdout)}
        assert group in consumer_groups and group not in classic_groups
        listed = {g["group"]: g for g in json.loads(pykafka("groups", "list", "--output", "json").stdout)}
        assert listed[group]["type"] == "consumer"
    finally:
        consumer.close()

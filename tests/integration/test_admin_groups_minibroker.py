"""AdminClient's consumer-group, delete-records and incremental-alter-configs operations against a real
MiniBroker: a group seen while a member is active (Stable, its assignment), refused deletes and admin
commits while it is active, then committed offsets listed, altered and the group deleted once empty."""

from __future__ import annotations

import uuid

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import AdminClient, KafkaConsumer, KafkaProducer
from pykafka_client.admin import (
    AlterConfigOp,
    AlterConfigOpType,
    ConfigResource,
    ConfigResourceType,
    NewTopic,
    OffsetSpec,
)
from pykafka_client.errors import GroupNotEmptyError, UnknownMemberIdError, UnknownTopicOrPartitionError
from pykafka_client.structs import OffsetAndMetadata, TopicPartition

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def test_consumer_group_lifecycle_through_the_admin_client() -> None:
    topic = f"adm-{uuid.uuid4().hex[:8]}"
    group = f"g-{topic}"
    with MiniBroker() as broker, AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(topic, 2, 1)], timeout=30)
        with KafkaProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=0) as producer:
            for i in range(10):
                producer.send(topic, b"v%d" % i, partition=i % 2).result(timeout=30)
        consumer: KafkaConsumer[bytes | None, bytes | None] = KafkaConsumer(
            bootstrap_servers=broker.bootstrap_servers, group_id=group, auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        try:
            consumer.subscribe([topic])
            seen = 0
            while seen < 10:
                seen += len(list(consumer.poll(1.0)))
            consumer.commit_sync()
            listing = {g.group_id: g for g in admin.list_consumer_groups(timeout=30)}
            assert listing[group].protocol_type == "consumer" and listing[group].state == "Stable"
            described = admin.describe_consumer_groups([group], timeout=30)[group]
            assert described.state == "Stable" and described.is_active
            assert described.partition_assignor and len(described.members) == 1
            assert described.members[0].assignment == [TopicPartition(topic, 0), TopicPartition(topic, 1)]
            with pytest.raises(GroupNotEmptyError):
                admin.delete_consumer_groups([group], timeout=30)
            with pytest.raises(UnknownMemberIdError):
                admin.alter_consumer_group_offsets(group, {TopicPartition(topic, 0): 1}, timeout=30)
        finally:
            consumer.close()

        committed = admin.list_consumer_group_offsets(group, timeout=30)
        assert {tp: o.offset for tp, o in committed.items()} == {TopicPartition(topic, 0): 5, TopicPartition(topic, 1): 5}
        admin.alter_consumer_group_offsets(group, {TopicPartition(topic, 0): OffsetAndMetadata(2)}, timeout=30)
        offsets = admin.list_consumer_group_offsets(group, [TopicPartition(topic, 0)], timeout=30)
        assert {tp: o.offset for tp, o in offsets.items()} == {TopicPartition(topic, 0): 2}
        assert admin.describe_consumer_groups([group], timeout=30)[group].state == "Empty"

        admin.delete_consumer_groups([group], timeout=30)
        assert admin.describe_consumer_groups([group], timeout=30)[group].state == "Dead"
        assert admin.list_consumer_group_offsets(group, timeout=30) == {}


def test_delete_records_and_incremental_alter_configs() -> None:
    topic = f"adm-{uuid.uuid4().hex[:8]}"
    with MiniBroker() as broker, AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(topic, 1, 1)], timeout=30)
        with KafkaProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=0) as producer:
            for i in range(10):
                producer.send(topic, b"v%d" % i).result(timeout=30)
        tp = TopicPartition(topic, 0)
        assert admin.delete_records({tp: 4}, timeout=30) == {tp: 4}
        assert admin.list_offsets({tp: OffsetSpec.earliest()}, timeout=30)[tp].offset == 4
        with pytest.raises(UnknownTopicOrPartitionError):
            admin.delete_records({TopicPartition("no-such-topic", 0): 1}, timeout=30)

        resource = ConfigResource(ConfigResourceType.TOPIC, topic)
        admin.incremental_alter_configs({resource: [AlterConfigOp("retention.ms", "123456")]}, timeout=30)
        assert admin.describe_configs([resource], timeout=30)[resource]["retention.ms"].value == "123456"
        admin.incremental_alter_configs(
            {resource: [AlterConfigOp("retention.ms", None, AlterConfigOpType.DELETE)]}, timeout=30
        )
        entry = admin.describe_configs([resource], timeout=30)[resource]["retention.ms"]
        assert entry.value != "123456" and entry.is_default

"""A single broker honours ``offsets.topic.num.partitions`` and ``transaction.state.log.num.partitions`` (Kafka's
default 50, issue 28 item 2): groups and transactional ids land in their own partitions (Kafka's ``partitionFor``),
commits, fetches and transactions with offsets work, a restart replays every partition, and a data dir written by
the one-partition version keeps its one partition. Our clients, confluent-kafka and kafka-python consumers with
several groups each find their coordinator. No timing is asserted."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mini_broker.broker import MiniBroker
from mini_broker.coordinator.partition import PARTITION_COUNT_FILE
from mini_broker.coordinator.partitioning import partition_for
from mini_broker.group.group_metadata_manager import COORDINATOR_DIR as GROUP_DIR
from mini_broker.group.group_metadata_manager import GROUP_METADATA_TOPIC_NAME
from mini_broker.transaction.transaction_log import COORDINATOR_DIR as TXN_DIR
from mini_broker.transaction.transaction_log import TRANSACTION_STATE_TOPIC_NAME
from pykafka_client import AdminClient, KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition
from pykafka_client.consumer.structs import ConsumerGroupMetadata

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

PARTITIONS = 50
TOPIC = "t"
TP = TopicPartition(TOPIC, 0)


def _distinct(prefix: str, n: int) -> list[str]:
    """``n`` keys in ``n`` different partitions of 50."""
    seen: dict[int, str] = {}
    i = 0
    while len(seen) < n:
        seen.setdefault(partition_for(f"{prefix}{i}", PARTITIONS), f"{prefix}{i}")
        i += 1
    return list(seen.values())


def _partition_dirs(data: Path, sub: str, topic: str) -> set[int]:
    return {int(n.rsplit("-", 1)[1]) for n in os.listdir(data / sub) if n.startswith(topic + "-")}


def _committed(bootstrap: str, group: str) -> int | None:
    with KafkaConsumer({"bootstrap.servers": bootstrap, "group.id": group}) as consumer:
        found = consumer.committed({TP}, timeout=15)[TP]
        return None if found is None else found.offset


def test_groups_and_transactional_ids_spread_over_50_partitions_and_survive_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    groups = _distinct("grp-", 6)
    txn_ids = _distinct("txn-", 4)
    with MiniBroker({}, data_dir=str(data)) as broker:
        bootstrap = broker.bootstrap_servers
        with KafkaProducer({"bootstrap.servers": bootstrap}) as producer:
            for i in range(10):
                producer.send(TOPIC, b"%d" % i, partition=0)
            producer.flush()
        for i, group in enumerate(groups):
            with KafkaConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                                "enable.auto.commit": False}) as consumer:
                consumer.assign([TP])
                consumer.commit_sync({TP: OffsetAndMetadata(i + 1)})
        # transactional offset commits: each transaction's group gets its marker in its own partition
        for j, txn_id in enumerate(txn_ids):
            with KafkaProducer({"bootstrap.servers": bootstrap, "transactional.id": txn_id}) as producer:
                producer.init_transactions(30)
                producer.begin_transaction()
                producer.send(TOPIC, b"txn", partition=0)
                producer.send_offsets_to_transaction({TP: OffsetAndMetadata(100 + j)}, ConsumerGroupMetadata(groups[j]), 30)
                if j == len(txn_ids) - 1:
                    producer.abort_transaction(30)
                else:
                    producer.commit_transaction(30)
        expected = {g: i + 1 for i, g in enumerate(groups)}
        for j in range(len(txn_ids) - 1):
            expected[groups[j]] = 100 + j
        assert {g: _committed(bootstrap, g) for g in groups} == expected
        with AdminClient({"bootstrap.servers": bootstrap}) as admin:
            assert {g.group_id for g in admin.list_consumer_groups(timeout=15)} >= set(groups)
            assert {t.transactional_id for t in admin.list_transactions(timeout=15)} == set(txn_ids)

    assert (data / GROUP_DIR / PARTITION_COUNT_FILE).read_text().strip() == str(PARTITIONS)
    assert _partition_dirs(data, GROUP_DIR, GROUP_METADATA_TOPIC_NAME) == {partition_for(g, PARTITIONS)
                                                                           for g in groups}
    assert _partition_dirs(data, TXN_DIR, TRANSACTION_STATE_TOPIC_NAME) == {partition_for(t, PARTITIONS)
                                                                            for t in txn_ids}

    with MiniBroker({}, data_dir=str(data)) as broker:  # every partition is replayed
        assert {g: _committed(broker.bootstrap_servers, g) for g in groups} == expected
        with AdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
            assert {t.transactional_id for t in admin.list_transactions(timeout=15)} == set(txn_ids)


def test_a_data_dir_of_the_one_partition_version_keeps_one_partition(tmp_path: Path) -> None:
    data = tmp_path / "data"
    groups = _distinct("old-", 3)
    one = {"offsets.topic.num.partitions": 1, "transaction.state.log.num.partitions": 1}
    with MiniBroker(one, data_dir=str(data)) as broker:
        for i, group in enumerate(groups):
            with KafkaConsumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group}) as consumer:
                consumer.assign([TP])
                consumer.commit_sync({TP: OffsetAndMetadata(i + 7)})
    for sub in (GROUP_DIR, TXN_DIR):  # the one-partition version kept no count
        (data / sub / PARTITION_COUNT_FILE).unlink()
    with MiniBroker({}, data_dir=str(data)) as broker:  # default 50 now: the existing topic keeps its 1
        assert [_committed(broker.bootstrap_servers, g) for g in groups] == [7, 8, 9]
    assert (data / GROUP_DIR / PARTITION_COUNT_FILE).read_text().strip() == "1"
    assert _partition_dirs(data, GROUP_DIR, GROUP_METADATA_TOPIC_NAME) == {0}


def test_confluent_kafka_and_kafka_python_consumers_of_several_groups(tmp_path: Path) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    kafka = pytest.importorskip("kafka")
    groups = _distinct("interop-", 4)
    with MiniBroker({"group.initial.rebalance.delay.ms": 0}, data_dir=str(tmp_path / "data")) as broker:
        bootstrap = broker.bootstrap_servers
        with KafkaProducer({"bootstrap.servers": bootstrap}) as producer:
            for i in range(5):
                producer.send(TOPIC, b"%d" % i, partition=0)
            producer.flush()
        for group in groups[:2]:  # confluent-kafka: subscribe, read, commit
            c = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                          "auto.offset.reset": "earliest", "enable.auto.commit": False})
            try:
                c.subscribe([TOPIC])
                read = 0
                for _ in range(200):
                    msg = c.poll(0.5)
                    if msg is not None and msg.error() is None:
                        read += 1
                        if read == 5:
                            break
                assert read == 5
                c.commit(asynchronous=False)
                [got] = c.committed([confluent_kafka.TopicPartition(TOPIC, 0)], timeout=15)
                assert got.offset == 5
            finally:
                c.close()
        for group in groups[2:]:  # kafka-python likewise
            k = kafka.KafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id=group,
                                    auto_offset_reset="earliest", enable_auto_commit=False,
                                    consumer_timeout_ms=15000)
            try:
                values = []
                for msg in k:
                    values.append(msg.value)
                    if len(values) == 5:
                        break
                assert len(values) == 5
                k.commit()
                assert k.committed(kafka.TopicPartition(TOPIC, 0)) == 5
            finally:
                k.close()
        assert {g: _committed(bootstrap, g) for g in groups} == dict.fromkeys(groups, 5)

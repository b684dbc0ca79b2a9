"""AdminClient.describe_log_dirs against a real MiniBroker: each log directory of the broker, the partitions it
holds with their on-disk size, and the volume's total/usable bytes (DescribeLogDirs v4)."""

from __future__ import annotations

import os
import uuid

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import AdminClient, KafkaProducer
from pykafka_client.admin import NewTopic
from pykafka_client.structs import TopicPartition

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def test_describe_log_dirs_shows_each_partition_with_its_size() -> None:
    topic = f"ld-{uuid.uuid4().hex[:8]}"
    with MiniBroker() as broker, AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(topic, 2, 1)], timeout=30)
        with KafkaProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=0) as producer:
            for _ in range(5):
                producer.send(topic, b"x" * 100, partition=0).result(timeout=30)
        node_id = broker.config.node_id
        result = admin.describe_log_dirs(timeout=30)
        assert set(result) == {node_id}
        dirs = result[node_id]
        assert set(dirs) == {os.path.abspath(broker.data_dir)}
        desc = dirs[os.path.abspath(broker.data_dir)]
        assert desc.error is None
        p0, p1 = desc.replica_infos[TopicPartition(topic, 0)], desc.replica_infos[TopicPartition(topic, 1)]
        assert all(type(tp) is TopicPartition for tp in desc.replica_infos)  # as typed, equal to the tuples
        assert p0.size >= 5 * 100 and p1.size == 0
        assert p0.offset_lag == 0 and not p0.is_future
        assert desc.total_bytes is not None and desc.usable_bytes is not None
        assert 0 <= desc.usable_bytes <= desc.total_bytes
        assert admin.describe_log_dirs([node_id], timeout=30).keys() == {node_id}



def test_every_directory_of_log_dirs_holds_partitions_and_survives_a_restart(tmp_path: object) -> None:
    """``log.dirs=a,b``: new partitions go to the directory with the fewest (Kafka's LogManager), both are
    described, and after a restart the broker finds every partition's records again in whichever holds it."""
    import pathlib

    assert isinstance(tmp_path, pathlib.Path)
    dirs = [str(tmp_path / "a"), str(tmp_path / "b")]
    topic = f"ld2-{uuid.uuid4().hex[:8]}"
    config = {"log.dirs": ",".join(dirs)}
    with MiniBroker(config) as broker, AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(topic, 4, 1)], timeout=30)
        with KafkaProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=0) as producer:
            for p in range(4):
                producer.send(topic, b"p%d" % p, partition=p).result(timeout=30)
        described = admin.describe_log_dirs(timeout=30)[broker.config.node_id]
        assert set(described) == {os.path.abspath(d) for d in dirs}
        held = {d: sorted(p for t, p in desc.replica_infos if t == topic) for d, desc in described.items()}
        assert all(len(parts) == 2 for parts in held.values()), held
        for d, parts in held.items():
            assert sorted(int(n.rsplit("-", 1)[1]) for n in os.listdir(d) if n.startswith(topic)) == parts
    with MiniBroker(config) as broker:
        from pykafka_client import KafkaConsumer, TopicPartition

        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False)
        try:
            tps = [TopicPartition(topic, p) for p in range(4)]
            consumer.assign(tps)
            consumer.seek_to_beginning(tps)
            values: set[bytes] = set()
            for _ in range(50):
                values.update(r.value for r in consumer.poll(0.2) if r.value is not None)
                if len(values) == 4:
                    break
            assert values == {b"p0", b"p1", b"p2", b"p3"}
        finally:
            consumer.close()

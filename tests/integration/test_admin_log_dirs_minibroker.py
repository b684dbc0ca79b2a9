"""AdminClient.describe_log_dirs against a real MiniBroker: each log directory of the broker, the partitions it
holds with their on-disk size, and the volume's total/usable bytes (DescribeLogDirs v4)."""

from __future__ import annotations

import os
import uuid

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import AdminClient, KafkaProducer
from pykafka_client.admin import NewTopic

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
        p0, p1 = desc.replica_infos[(topic, 0)], desc.replica_infos[(topic, 1)]
        assert p0.size >= 5 * 100 and p1.size == 0
        assert p0.offset_lag == 0 and not p0.is_future
        assert desc.total_bytes is not None and desc.usable_bytes is not None
        assert 0 <= desc.usable_bytes <= desc.total_bytes
        assert admin.describe_log_dirs([node_id], timeout=30).keys() == {node_id}


"""A single broker's __consumer_offsets log (under ``__group_coordinator``) has cleanup.policy=compact, as Kafka's:
the broker's log cleaner keeps it near its live size under endless commits of one group, and a restart after
cleaning replays the latest committed offset."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mini_broker.broker import MiniBroker
from mini_broker.coordinator.partitioning import partition_for
from mini_broker.group.group_metadata_manager import COORDINATOR_DIR, GROUP_METADATA_TOPIC_NAME
from pykafka_client import KafkaConsumer
from pykafka_client.structs import TopicPartition
from tests.integration.broker.test_log_compaction import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

SEGMENT = 16384
COMMITS = 5000


GROUP = "many-commits"


def _offsets_log_bytes(data_dir: str) -> int:
    """The size of the group's partition of the 50 (a partition other than 0: the cleaner compacts every one)."""
    partition = partition_for(GROUP, 50)
    assert partition != 0
    part = Path(data_dir) / COORDINATOR_DIR / f"{GROUP_METADATA_TOPIC_NAME}-{partition}"
    return sum(f.stat().st_size for f in part.iterdir() if f.name.endswith(".log"))


def test_offsets_log_stays_bounded_under_many_commits_and_replays_after_a_clean(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    config = {"log.cleaner.backoff.ms": 50, "offsets.topic.segment.bytes": SEGMENT}
    tp = TopicPartition("t", 0)
    with MiniBroker(config, data_dir=data) as broker:
        with KafkaConsumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": GROUP,
                            "enable.auto.commit": False}) as consumer:
            consumer.assign([tp])
            for i in range(COMMITS):
                consumer.commit_sync({tp: i + 1})
        # 5,000 commits are ~500 KB of records; compacted, a few segments of 16 KiB at most
        wait_until(lambda: 0 < _offsets_log_bytes(data) < 4 * SEGMENT, "the offsets log is compacted")
        assert not [n for n in os.listdir(Path(data) / COORDINATOR_DIR) if n.endswith((".compacting", ".old"))]
    with MiniBroker(config, data_dir=data) as broker, KafkaConsumer({
            "bootstrap.servers": broker.bootstrap_servers, "group.id": GROUP}) as consumer:
        committed = consumer.committed({tp}, timeout=15)[tp]
        assert committed is not None and committed.offset == COMMITS

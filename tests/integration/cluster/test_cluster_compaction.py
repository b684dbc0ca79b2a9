"""Compaction on a 3-broker cluster: each broker's cleaner compacts its own replica (leader and followers), and
the compacted topic reads back the latest value per key at its original offset."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from mini_broker.cluster.mini_cluster import MiniCluster
from tests.integration.broker.test_log_compaction import (
    TOPIC,
    create_compacted_topic,
    produce_updates,
    read_confluent,
    wait_until,
)

pytestmark = [pytest.mark.integration, pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(300)]


def _cleaned_to(data_dir: str) -> int:
    """The cleaner checkpoint of the topic's partition in one broker's data directory (-1: none yet)."""
    path = Path(data_dir) / "cleaner-offset-checkpoint"
    if not path.exists():
        return -1
    for line in path.read_text().splitlines()[2:]:
        topic, partition, offset = line.split(" ")
        if topic == TOPIC and partition == "0":
            return int(offset)
    return -1


def test_every_replica_is_compacted_by_its_own_broker(tmp_path: Path) -> None:
    overrides = {"min.insync.replicas": 2, "log.cleaner.backoff.ms": 100}
    with MiniCluster(3, data_dir=str(tmp_path / "cluster"), overrides=overrides) as cluster:
        bootstrap = cluster.bootstrap_servers
        create_compacted_topic(bootstrap, replication_factor=3)
        aborted: list[int] = []
        latest = produce_updates(bootstrap, keys=2000, rounds=5, aborted=aborted)
        assert aborted
        data_dirs = [b.data_dir for b in cluster.brokers.values()]
        # every replica cleaned past the last record the cleaner drops (the aborted transaction's, after every
        # superseded update): not "up to the active segment", which the cleaner may never reach when the abort
        # marker got a segment of its own (written more than segment.ms after the aborted records, as on a
        # loaded box) and was cleaned before the next roll: that one-marker segment alone stays below
        # min.cleanable.dirty.ratio, in Kafka too
        for data_dir in data_dirs:
            wait_until(lambda d=data_dir: _cleaned_to(d) > max(aborted),
                       f"the broker of {data_dir} has compacted its replica")
        expected = sorted((offset, key, value) for key, (offset, value) in latest.items())
        for isolation in ("read_uncommitted", "read_committed"):
            assert read_confluent(bootstrap, isolation) == expected


def _offsets_topic_bytes(data_dir: str) -> int:
    total = 0
    for name in os.listdir(data_dir):
        if name.startswith("__consumer_offsets-"):
            part = Path(data_dir) / name
            total += sum(f.stat().st_size for f in part.iterdir() if f.name.endswith(".log"))
    return total


#: what a commit gets while the group's coordinator moves (a broker fenced on a loaded box moves its
#: __consumer_offsets partitions): NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE
COORDINATOR_MOVING = frozenset({16, 14, 15})


def _commit(ck: Any, consumer: Any, offsets: list[Any], timeout_s: float = 60.0) -> None:
    """A synchronous commit, retried while the coordinator moves (librdkafka's synchronous commit raises those
    errors and looks the coordinator up again; an application retries, as Java's commitSync does itself)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            consumer.commit(offsets=offsets, asynchronous=False)
            return
        except ck.KafkaException as e:
            if e.args[0].code() not in COORDINATOR_MOVING or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_consumer_offsets_stay_bounded_under_many_commits(tmp_path: Path) -> None:
    """The cluster's replicated __consumer_offsets is created with cleanup.policy=compact: with small segments,
    thousands of commits of one group leave each broker's copy near the size of one segment."""
    import confluent_kafka as ck

    overrides = {"min.insync.replicas": 2, "log.cleaner.backoff.ms": 100, "offsets.topic.segment.bytes": 16384}
    with MiniCluster(3, data_dir=str(tmp_path / "cluster"), overrides=overrides) as cluster:
        bootstrap = cluster.bootstrap_servers
        create_compacted_topic(bootstrap, replication_factor=3)
        c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "many-commits", "enable.auto.commit": False})
        try:
            for i in range(3000):
                _commit(ck, c, [ck.TopicPartition(TOPIC, 0, i + 1)])
        finally:
            c.close()
        data_dirs = [b.data_dir for b in cluster.brokers.values()]
        # 3000 commits are ~300 KB of records; compacted, a few segments of 16 KiB at most
        for data_dir in data_dirs:
            wait_until(lambda d=data_dir: 0 < _offsets_topic_bytes(d) < 4 * 16384,
                       f"__consumer_offsets in {data_dir} is compacted")

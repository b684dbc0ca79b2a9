"""MetadataCache: topic registry persistence, names, producer ids never reused across restarts."""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_broker.server.metadata_cache import PRODUCER_ID_BLOCK_SIZE, MetadataCache, validate_topic_name
from pykafka_client.errors import InvalidPartitionsError, InvalidTopicError, TopicExistsError


@pytest.mark.parametrize("name", ["", ".", "..", "a" * 250, "has space", "slash/", "ü"])
def test_invalid_topic_names(name: str) -> None:
    with pytest.raises(InvalidTopicError):
        validate_topic_name(name)


def test_valid_topic_names() -> None:
    for name in ("a", "A-b_c.d", "x" * 249):
        validate_topic_name(name)


def test_registry_survives_restart(tmp_path: Path) -> None:
    c = MetadataCache(str(tmp_path), 0)
    t = c.create_topic("t", 2, {"retention.ms": "1"})
    c.set_partition_count("t", 5)
    c.create_topic("gone", 1)
    c.delete_topic("gone")
    c2 = MetadataCache(str(tmp_path), 0)
    assert c2.cluster_id == c.cluster_id
    t2 = c2.get_topic("t")
    assert t2 is not None and t2.topic_id == t.topic_id and t2.num_partitions == 5
    assert t2.configs == {"retention.ms": "1"}
    assert c2.get_topic("gone") is None
    assert c2.topic_by_id(t.topic_id) == t2


def test_create_errors(tmp_path: Path) -> None:
    c = MetadataCache(str(tmp_path), 0)
    c.create_topic("a.b", 1)
    with pytest.raises(TopicExistsError):
        c.create_topic("a.b", 1)
    with pytest.raises(InvalidTopicError):
        c.create_topic("a_b", 1)  # collides with a.b in metric names
    with pytest.raises(InvalidPartitionsError):
        c.create_topic("z", 0)
    with pytest.raises(InvalidPartitionsError):
        c.set_partition_count("a.b", 1)
    assert c.create_topic("v", 1, validate_only=True).name == "v"
    assert c.get_topic("v") is None


def test_producer_ids_not_reused_after_restart(tmp_path: Path) -> None:
    c = MetadataCache(str(tmp_path), 0)
    first = [c.next_producer_id() for _ in range(3)]
    assert first == [0, 1, 2]
    c2 = MetadataCache(str(tmp_path), 0)
    assert c2.next_producer_id() == PRODUCER_ID_BLOCK_SIZE


def test_node_id_mismatch_is_refused(tmp_path: Path) -> None:
    MetadataCache(str(tmp_path), 0)
    with pytest.raises(ValueError, match=r"node\.id"):
        MetadataCache(str(tmp_path), 1)

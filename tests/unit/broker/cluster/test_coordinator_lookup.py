"""Which broker coordinates a key: Kafka's partitionFor (Java's String.hashCode) and the live leader of that
internal partition, as FindCoordinator answers it on a cluster."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from mini_broker.server.coordinator_lookup import (
    GROUP_KEY_TYPE,
    TRANSACTION_KEY_TYPE,
    coordinates,
    coordinator_for,
    java_string_hash,
    partition_for,
)
from mini_broker.server.metadata_cache import MetadataCache
from pykafka_client.errors import CoordinatorNotAvailableError, InvalidRequestError


def test_java_string_hash_matches_java() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(1 << 31)  # Integer.MIN_VALUE
    assert java_string_hash("\U0001F600") == 31 * 0xD83D + 0xDE00  # UTF-16 surrogate pair, as Java sees it


def test_partition_for_is_kafkas_abs_hash_mod_n() -> None:
    assert partition_for("hello", 50) == 99162322 % 50
    assert partition_for("polygenelubricants", 50) == 0  # Utils.abs(MIN_VALUE) is 0
    assert partition_for("any-group", 1) == 0
    neg = next(k for k in (f"consumer-group-{i}" for i in range(1000)) if java_string_hash(k) < 0)
    assert partition_for(neg, 7) == abs(java_string_hash(neg)) % 7


def _cache(tmp_path: Path, leader: int, fenced: set[int], with_topic: bool = True) -> MetadataCache:
    cache = MetadataCache(str(tmp_path), 0)
    topics: list[dict[str, Any]] = []
    if with_topic:
        topics.append({"name": "__consumer_offsets", "topic_id": str(uuid.uuid4()), "configs": {},
                       "partitions": [{"replicas": [1, 0, 2], "isr": [1, 0, 2], "leader": leader, "leader_epoch": 3,
                                       "partition_epoch": 3}]})
    cache.apply_cluster_image({"version": 1, "cluster_id": "c", "topics": topics, "brokers": [
        {"broker_id": b, "host": f"h{b}", "port": 9000 + b, "fenced": b in fenced} for b in range(3)]})
    return cache


def test_the_coordinator_is_the_live_leader_of_the_keys_partition(tmp_path: Path) -> None:
    cache = _cache(tmp_path, leader=1, fenced=set())
    found = coordinator_for(cache, GROUP_KEY_TYPE, "g")
    assert (found.error_code, found.node_id, found.host, found.port, found.partition) == (0, 1, "h1", 9001, 0)
    assert coordinates(cache, 1, GROUP_KEY_TYPE, "g") and not coordinates(cache, 0, GROUP_KEY_TYPE, "g")


def test_no_live_leader_or_no_topic_is_coordinator_not_available(tmp_path: Path) -> None:
    dead = coordinator_for(_cache(tmp_path / "a", leader=1, fenced={1}), GROUP_KEY_TYPE, "g")
    assert dead.error_code == CoordinatorNotAvailableError.code and dead.node_id == -1 and dead.partition == 0
    none = coordinator_for(_cache(tmp_path / "b", leader=-1, fenced=set()), GROUP_KEY_TYPE, "g")
    assert none.error_code == CoordinatorNotAvailableError.code
    missing = coordinator_for(_cache(tmp_path / "c", leader=1, fenced=set()), TRANSACTION_KEY_TYPE, "t")
    assert missing.error_code == CoordinatorNotAvailableError.code and missing.partition == -1  # to be created
    assert coordinator_for(_cache(tmp_path / "d", 1, set()), 7, "k").error_code == InvalidRequestError.code


def _listener_cache(tmp_path: Path, leader: int) -> MetadataCache:
    """Brokers 0 and 1 registered PLAINTEXT and SASL_SSL listeners; broker 2 only PLAINTEXT."""
    cache = MetadataCache(str(tmp_path), 0)
    topics = [{"name": "__consumer_offsets", "topic_id": str(uuid.uuid4()), "configs": {},
               "partitions": [{"replicas": [leader], "isr": [leader], "leader": leader, "leader_epoch": 1,
                               "partition_epoch": 1}]}]

    def listeners(b: int) -> list[dict[str, Any]]:
        out = [{"name": "PLAINTEXT", "host": f"h{b}", "port": 9000 + b, "security_protocol": "PLAINTEXT"}]
        if b < 2:
            out.append({"name": "SASL_SSL", "host": f"h{b}", "port": 9100 + b, "security_protocol": "SASL_SSL"})
        return out

    cache.apply_cluster_image({"version": 1, "cluster_id": "c", "topics": topics, "brokers": [
        {"broker_id": b, "host": f"h{b}", "port": 9000 + b, "fenced": False, "listeners": listeners(b)}
        for b in range(3)]})
    return cache


def test_brokers_are_described_on_the_requests_listener(tmp_path: Path) -> None:
    cache = _listener_cache(tmp_path, leader=1)
    assert cache.live_brokers("SASL_SSL") == [(0, "h0", 9100), (1, "h1", 9101)]  # broker 2 has no such listener
    assert cache.live_brokers("sasl_ssl") == cache.live_brokers("SASL_SSL")
    assert cache.live_brokers("PLAINTEXT") == [(0, "h0", 9000), (1, "h1", 9001), (2, "h2", 9002)]
    assert cache.live_brokers() == cache.live_brokers("PLAINTEXT")  # the inter-broker endpoints
    assert cache.broker_endpoint(2, "SASL_SSL") is None and cache.broker_registered(2)
    found = coordinator_for(cache, GROUP_KEY_TYPE, "g", "SASL_SSL")
    assert (found.error_code, found.node_id, found.host, found.port) == (0, 1, "h1", 9101)


def test_a_coordinator_without_the_requests_listener_is_not_available(tmp_path: Path) -> None:
    cache = _listener_cache(tmp_path, leader=2)
    assert coordinator_for(cache, GROUP_KEY_TYPE, "g", "SASL_SSL").error_code == CoordinatorNotAvailableError.code
    assert coordinator_for(cache, GROUP_KEY_TYPE, "g", "PLAINTEXT").port == 9002

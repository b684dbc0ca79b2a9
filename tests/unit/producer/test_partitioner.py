from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.producer.partitioner import (
    BuiltInPartitioner,
    RoundRobinPartitioner,
    StaticClusterView,
    murmur2,
    partition_for_key,
    to_positive,
)

# Java's own expectations (org.apache.kafka.common.utils.UtilsTest#testMurmur2); these are also what
# kafka-python's implementation returns (as unsigned), checked below.
JAVA_MURMUR2 = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
]


@pytest.mark.parametrize(("data", "expected"), JAVA_MURMUR2)
def test_murmur2_known_java_values(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


def test_to_positive_is_not_abs() -> None:
    assert to_positive(-(2**31)) == 0
    assert to_positive(-1) == 2**31 - 1
    assert to_positive(5) == 5


kp = pytest.importorskip("kafka.partitioner.default")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64), st.integers(min_value=1, max_value=1000))
def test_murmur2_matches_kafka_python(data: bytes, n: int) -> None:
    theirs = kp.murmur2(data)
    assert murmur2(data) & 0xFFFFFFFF == theirs & 0xFFFFFFFF
    assert partition_for_key(data, n) == (theirs & 0x7FFFFFFF) % n


def test_keyed_partition_uses_all_partitions_even_unavailable() -> None:
    # Unavailability never moves a keyed record.
    assert partition_for_key(b"21", 6) == to_positive(-973932308) % 6


def test_sticky_partitioner_switches_after_batch_size() -> None:
    cluster = StaticClusterView({"t": 4})
    p = BuiltInPartitioner("t", 100, random.Random(7))
    first = p.peek_partition(cluster)
    p.update_partition_info(first, 60, cluster, enable_switch=True)
    assert p.peek_partition(cluster) == first
    p.update_partition_info(first, 60, cluster, enable_switch=False)  # 120 >= 100 but batch not full
    assert p.peek_partition(cluster) == first
    p.update_partition_info(first, 90, cluster, enable_switch=False)  # 210 >= 2 * 100: forced
    chosen = {first}
    for _ in range(50):
        cur = p.peek_partition(cluster)
        chosen.add(cur)
        p.update_partition_info(cur, 100, cluster, enable_switch=True)
    assert chosen == {0, 1, 2, 3}


def test_sticky_avoids_unavailable_partitions() -> None:
    cluster = StaticClusterView({"t": 3}, unavailable={"t": {0, 2}})
    p = BuiltInPartitioner("t", 10, random.Random(1))
    for _ in range(20):
        cur = p.peek_partition(cluster)
        assert cur == 1
        p.update_partition_info(cur, 10, cluster, enable_switch=True)


def test_adaptive_prefers_short_queues() -> None:
    cluster = StaticClusterView({"t": 2})
    p = BuiltInPartitioner("t", 1, random.Random(3))
    p.update_partition_load_stats([0, 9], [0, 1], 9)  # weights 10 : 1
    counts = {0: 0, 1: 0}
    for _ in range(1100):
        cur = p.peek_partition(cluster)
        counts[cur] += 1
        p.update_partition_info(cur, 1, cluster, enable_switch=True)
    assert counts[0] > 5 * counts[1]


def test_round_robin() -> None:
    cluster = StaticClusterView({"t": 3})
    rr = RoundRobinPartitioner()
    assert [rr.partition("t", None, None, None, None, cluster) for _ in range(6)] == [0, 1, 2, 0, 1, 2]

"""The kernel's ``sticky_switch`` (``kernel/producer_send_append.c.h``) == ``BuiltInPartitioner.update_partition_info``.

Two partitioners of one topic with the same seeded random generator get the same random steps (the sticky partition
or another one, appended bytes, whether the batch is full, load stats set or dropped, partitions going down or up):
one through its method (the reference), one through the kernel's switch. After every step both hold the same sticky
partition and produced bytes, the same StickyInfo object kept or replaced, the same load stats and the same random
generator state (the same draws). A partitioner of another type, or a count that is not an int, is declined with
nothing changed.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.producer.partitioner import BuiltInPartitioner, StaticClusterView
from pykafka_client.protocol.records import _native

pytestmark = pytest.mark.skipif(not _native.native_available(), reason="the compiled record kernel is not built")

TOPIC = "t"


class _Cluster(StaticClusterView):
    """A StaticClusterView whose available partitions change between steps, counting the lookups."""

    def __init__(self, partitions: int, down: set[int]) -> None:
        super().__init__({TOPIC: partitions}, {TOPIC: down})
        self.down = down
        self.partitions = partitions
        self.lookups = 0

    def available_partitions_for_topic(self, topic: str) -> Sequence[int]:
        self.lookups += 1
        return [p for p in range(self.partitions) if p not in self.down]


def _kernel() -> Any:
    kernel = _native.loaded_kernel()
    assert kernel is not None
    return kernel


def _state(p: BuiltInPartitioner, cluster: _Cluster) -> tuple[Any, ...]:
    info = p.sticky
    load = p.load_stats
    return (
        None if info is None else (info.partition, info.produced_bytes),
        None if load is None else (load.cumulative, load.partitions),
        p._rng.getstate(),
        cluster.lookups,
        p.lock.locked(),
    )


_step = st.tuples(
    st.integers(0, 9),  # 0-6: the sticky partition; 7: another partition; 8: load stats; 9: a partition down / up
    st.integers(0, 250),  # appended bytes
    st.booleans(),  # enable_switch (the batch is full)
    st.integers(0, 5),  # the other partition / which partition goes down or up
)


@settings(max_examples=300, deadline=None)
@given(
    partitions=st.integers(1, 5),
    down=st.sets(st.integers(0, 4), max_size=4),
    sticky_batch_size=st.sampled_from([1, 50, 100, 16384]),
    steps=st.lists(_step, max_size=50),
    seed=st.integers(0, 10_000),
)
def test_the_kernel_switch_equals_update_partition_info(
    partitions: int, down: set[int], sticky_batch_size: int, steps: list[tuple[int, int, bool, int]], seed: int
) -> None:
    kernel = _kernel()
    clusters = [_Cluster(partitions, set(down)), _Cluster(partitions, set(down))]
    parts = [BuiltInPartitioner(TOPIC, sticky_batch_size, random.Random(seed)) for _ in range(2)]
    for cluster, p in zip(clusters, parts, strict=True):
        p.peek_partition(cluster)
    for kind, appended, full, which in steps:
        infos = [p.sticky for p in parts]
        for i, (cluster, p) in enumerate(zip(clusters, parts, strict=True)):
            assert p.sticky is not None
            current = p.sticky.partition
            if kind == 8:
                sizes = [(which + k) % 3 for k in range(partitions)]
                p.update_partition_load_stats(sizes, list(range(partitions)), 3)
                continue
            if kind == 9:
                cluster.down ^= {which % partitions}
                continue
            partition = (current + 1 + which) % max(partitions, 2) if kind == 7 else current
            if i == 0:
                p.update_partition_info(partition, appended, cluster, full)
            else:
                assert kernel.sticky_switch(p, partition, appended, cluster, full) is None
        assert _state(parts[0], clusters[0]) == _state(parts[1], clusters[1])
        # a StickyInfo kept in place by one is kept by the other
        assert (parts[0].sticky is infos[0]) == (parts[1].sticky is infos[1])


def test_a_switch_past_the_threshold_draws_as_the_reference() -> None:
    kernel = _kernel()
    cluster = _Cluster(4, set())
    ref, compiled = (BuiltInPartitioner(TOPIC, 100, random.Random(7)) for _ in range(2))
    ref.peek_partition(cluster)
    compiled.peek_partition(cluster)
    seen: list[tuple[Any, Any]] = []
    for _ in range(30):
        assert ref.sticky is not None and compiled.sticky is not None
        ref.update_partition_info(ref.sticky.partition, 120, cluster, True)
        kernel.sticky_switch(compiled, compiled.sticky.partition, 120, cluster, True)
        seen.append((ref.sticky.partition, compiled.sticky.partition))
    assert [a for a, _ in seen] == [b for _, b in seen]
    assert len({a for a, _ in seen}) > 1  # it did switch among the partitions


def test_the_only_available_partition_starts_over_in_place() -> None:
    kernel = _kernel()
    cluster = _Cluster(3, {0, 2})
    p = BuiltInPartitioner(TOPIC, 100, random.Random(1))
    assert p.peek_partition(cluster) == 1
    info = p.sticky
    state = p._rng.getstate()
    assert kernel.sticky_switch(p, 1, 99, cluster, False) is None
    assert info is not None and info.produced_bytes == 99
    assert kernel.sticky_switch(p, 1, 1, cluster, True) is None
    assert p.sticky is info and info.produced_bytes == 0 and p._rng.getstate() == state


class _Subclass(BuiltInPartitioner):
    __slots__ = ()


def test_another_partitioner_type_or_a_count_not_an_int_is_declined() -> None:
    kernel = _kernel()
    cluster = _Cluster(2, set())
    sub = _Subclass(TOPIC, 100, random.Random(1))
    sub.peek_partition(cluster)
    assert sub.sticky is not None
    assert kernel.sticky_switch(sub, sub.sticky.partition, 500, cluster, True) is NotImplemented
    assert sub.sticky.produced_bytes == 0
    p = BuiltInPartitioner(TOPIC, 100, random.Random(1))
    p.peek_partition(cluster)
    assert p.sticky is not None
    p.sticky.produced_bytes = 1.5  # type: ignore[assignment]
    assert kernel.sticky_switch(p, p.sticky.partition, 500, cluster, True) is NotImplemented
    assert p.sticky.produced_bytes == 1.5 and not p.lock.locked()


def test_an_error_of_the_cluster_is_raised_and_the_lock_released() -> None:
    kernel = _kernel()

    class Broken(_Cluster):
        def available_partitions_for_topic(self, topic: str) -> Sequence[int]:
            raise RuntimeError("no metadata")

    cluster = _Cluster(2, set())
    p = BuiltInPartitioner(TOPIC, 100, random.Random(1))
    p.peek_partition(cluster)
    assert p.sticky is not None
    with pytest.raises(RuntimeError, match="no metadata"):
        kernel.sticky_switch(p, p.sticky.partition, 500, Broken(2, set()), True)
    assert not p.lock.locked()
    assert p.sticky.produced_bytes == 500  # counted before the lookup, as the reference counts it

"""Choosing a partition for a record (Java ``Utils.murmur2``, ``BuiltInPartitioner``, ``Partitioner``).

Rules, in order (Java ``KafkaProducer.partition``):

1. an explicit ``partition`` argument wins;
2. a configured ``partitioner.class`` decides;
3. a keyed record (unless ``partitioner.ignore.keys``) goes to ``to_positive(murmur2(key)) % num_partitions``
   over *all* partitions, available or not, so the same key always lands in the same partition;
4. otherwise the built-in sticky partitioner (KIP-480 / KIP-794) keeps one partition per topic until about
   ``batch.size`` bytes have been produced to it, then picks another: uniformly at random among the
   partitions that have a leader, or, with adaptive partitioning, weighted towards partitions with shorter
   queues (the accumulator reports queue sizes from ``ready()``).
"""

from __future__ import annotations

import bisect
import random
import threading
from collections.abc import Sequence
from typing import Any, Final, Protocol, runtime_checkable

from pykafka_client.protocol.records import _native

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK32 = 0xFFFFFFFF


def murmur2(data: bytes | bytearray | memoryview) -> int:
    """32-bit MurmurHash2 exactly as Kafka's Java client computes it; returns a signed 32-bit int."""
    buf = bytes(data)
    length = len(buf)
    h = (_SEED ^ length) & _MASK32
    end = length & ~3
    for i in range(0, end, 4):
        k = buf[i] | (buf[i + 1] << 8) | (buf[i + 2] << 16) | (buf[i + 3] << 24)
        k = (k * _M) & _MASK32
        k ^= k >> 24
        k = (k * _M) & _MASK32
        h = ((h * _M) & _MASK32) ^ k
    rest = length & 3
    if rest == 3:
        h ^= buf[end + 2] << 16
    if rest >= 2:
        h ^= buf[end + 1] << 8
    if rest >= 1:
        h ^= buf[end]
        h = (h * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(n: int) -> int:
    """Java ``Utils.toPositive``: clear the sign bit (not ``abs``, which is wrong for MIN_VALUE)."""
    return n & 0x7FFFFFFF


def partition_for_key(key_bytes: bytes, num_partitions: int) -> int:
    """The partition Java's default partitioner picks for a keyed record."""
    kernel = _native.kernel
    if kernel is not None:
        h = kernel.murmur2(key_bytes)
        if h is not None:
            return to_positive(h) % num_partitions
    return to_positive(murmur2(key_bytes)) % num_partitions


@runtime_checkable
class ClusterView(Protocol):
    """The part of cluster metadata a partitioner sees."""

    def partition_count_for_topic(self, topic: str) -> int | None:
        """Number of partitions, or None if the topic is not known yet."""
        ...

    def available_partitions_for_topic(self, topic: str) -> Sequence[int]:
        """Partitions that currently have a leader, ascending."""
        ...


@runtime_checkable
class Partitioner(Protocol):
    """A user-supplied ``partitioner.class`` (Java ``Partitioner``)."""

    def partition(
        self, topic: str, key: Any, key_bytes: bytes | None, value: Any, value_bytes: bytes | None, cluster: ClusterView
    ) -> int: ...


class RoundRobinPartitioner:
    """Java ``RoundRobinPartitioner``: cycles through available partitions (all if none is available)."""

    def __init__(self) -> None:
        self._counters: dict[str, int] = {}
        self._lock = threading.Lock()

    def partition(
        self, topic: str, key: Any, key_bytes: bytes | None, value: Any, value_bytes: bytes | None, cluster: ClusterView
    ) -> int:
        n = cluster.partition_count_for_topic(topic) or 0
        with self._lock:
            i = self._counters.get(topic, 0)
            self._counters[topic] = i + 1
        available = cluster.available_partitions_for_topic(topic)
        if available:
            return available[to_positive(i) % len(available)]
        return to_positive(i) % max(n, 1)


class _StickyInfo:
    """The current sticky partition of a topic and the bytes produced to it since it was chosen."""

    __slots__ = ("partition", "produced_bytes")

    def __init__(self, partition: int) -> None:
        self.partition = partition
        self.produced_bytes = 0


class _LoadStats:
    """Cumulative frequency table built from queue sizes (Java ``PartitionLoadStats``)."""

    __slots__ = ("cumulative", "partitions")

    def __init__(self, cumulative: list[int], partitions: list[int]) -> None:
        self.cumulative = cumulative
        self.partitions = partitions


class BuiltInPartitioner:
    """The per-topic sticky partitioner used when no ``partitioner.class`` is set (one per topic).

    ``peek_partition`` returns the current sticky partition; the accumulator calls
    ``update_partition_info(appended_bytes, enable_switch)`` after each append, which switches partition once
    ``batch.size`` bytes were produced and the current batch is full (``enable_switch``), or unconditionally
    at twice that.
    """

    #: slots: the compiled send path reads the sticky state at fixed offsets, and its switch (the kernel's
    #: ``sticky_switch``, records/kernel/producer_send_append.c.h) takes ``lock`` and calls ``pick`` and
    #: ``next_partition`` as this class's ``update_partition_info`` does
    __slots__ = ("_rng", "load_stats", "lock", "sticky", "sticky_batch_size", "switch_bytes", "topic")

    def __init__(self, topic: str, sticky_batch_size: int, rng: random.Random | None = None) -> None:
        if sticky_batch_size < 1:
            sticky_batch_size = 1
        self.topic = topic
        #: Final (this and switch_bytes): the compiled send path keeps both once read
        #: (records/kernel/producer_send_append.c.h)
        self.sticky_batch_size: Final = sticky_batch_size
        #: produced bytes at which the partition switches even if its batch is not full
        self.switch_bytes: Final = sticky_batch_size * 2
        self._rng = rng if rng is not None else random.Random()
        #: guards a switch of ``sticky`` (update_partition_info; the kernel's sticky_switch takes it too)
        self.lock = threading.Lock()
        self.sticky: _StickyInfo | None = None
        #: the adaptive partitioning's weights (update_partition_load_stats), None while partitions are picked
        #: uniformly; read-only outside this class (the accumulator's ready skips dropping stats that are not there)
        self.load_stats: _LoadStats | None = None

    def peek_partition(self, cluster: ClusterView) -> int:
        """The current sticky partition, choosing one if there is none yet."""
        info = self.sticky
        if info is not None:
            return info.partition
        with self.lock:
            if self.sticky is None:
                self.sticky = _StickyInfo(self.next_partition(cluster, None))
            return self.sticky.partition

    def update_partition_info(self, partition: int, appended_bytes: int, cluster: ClusterView, enable_switch: bool) -> None:
        """Account ``appended_bytes`` to ``partition`` if it is still the sticky one; maybe switch.

        Callers hold the deque lock of ``partition`` (so ``produced_bytes`` of the current sticky partition
        only changes under that lock: ``RecordAccumulator.try_append_fast`` adds to it there without this
        lock and calls this with 0 bytes when a switch is due). With the kernel, the compiled send paths run its
        ``sticky_switch`` instead, which does what this does (this is its reference)."""
        with self.lock:
            info = self.sticky
            if info is None or info.partition != partition:
                return
            info.produced_bytes += appended_bytes
            if info.produced_bytes >= self.sticky_batch_size * 2 or (
                enable_switch and info.produced_bytes >= self.sticky_batch_size
            ):
                if self.load_stats is None:
                    available = cluster.available_partitions_for_topic(self.topic)
                    if len(available) == 1 and available[0] == partition:
                        # the only available partition is picked again (Java's nextPartition takes it without a
                        # random draw): its count starts over in place, without a new StickyInfo. A thread that read
                        # this StickyInfo before the switch appends to the same partition, as it would after
                        # reading the new one.
                        info.produced_bytes = 0
                        return
                    self.sticky = _StickyInfo(self.pick(cluster, available))
                else:
                    self.sticky = _StickyInfo(self.next_partition(cluster, partition))

    def update_partition_load_stats(self, queue_sizes: Sequence[int], partition_ids: Sequence[int], max_size: int) -> None:
        """Adaptive partitioning input: queue lengths (in batches) of partitions with a ready leader.

        The chance of picking a partition is proportional to ``max_size + 1 - queue_size``. Stats are
        dropped (uniform choice) when all queues are equal.
        """
        if not queue_sizes or len(queue_sizes) != len(partition_ids):
            self.load_stats = None
            return
        if min(queue_sizes) == max(queue_sizes):
            self.load_stats = None
            return
        cumulative: list[int] = []
        total = 0
        for q in queue_sizes:
            total += max_size + 1 - q
            cumulative.append(total)
        self.load_stats = _LoadStats(cumulative, list(partition_ids))

    def next_partition(self, cluster: ClusterView, previous: int | None) -> int:
        """A new sticky partition: weighted by the load stats when there are some, else :meth:`pick`'s uniform
        choice (callers hold :attr:`lock`)."""
        load = self.load_stats
        if load is not None and load.cumulative:
            r = self._rng.randrange(load.cumulative[-1])
            return load.partitions[bisect.bisect_right(load.cumulative, r)]
        return self.pick(cluster, cluster.available_partitions_for_topic(self.topic))

    def pick(self, cluster: ClusterView, available: Sequence[int]) -> int:
        """The uniform choice (no load stats): among ``available`` (the topic's available partitions), else among
        all its partitions (callers hold :attr:`lock`)."""
        if available:
            if len(available) == 1:
                return available[0]
            return available[self._rng.randrange(len(available))]
        n = cluster.partition_count_for_topic(self.topic) or 1
        return self._rng.randrange(n)


class StaticClusterView:
    """A fixed :class:`ClusterView` (tests, and callers that already know partition counts)."""

    def __init__(self, partitions: dict[str, int], unavailable: dict[str, set[int]] | None = None) -> None:
        self._partitions = dict(partitions)
        self._unavailable = {k: set(v) for k, v in (unavailable or {}).items()}

    def partition_count_for_topic(self, topic: str) -> int | None:
        return self._partitions.get(topic)

    def available_partitions_for_topic(self, topic: str) -> Sequence[int]:
        down = self._unavailable.get(topic, set())
        return [p for p in range(self._partitions.get(topic, 0)) if p not in down]


#: The type of ``BuiltInPartitioner``'s sticky state (for annotations elsewhere).
StickyInfo = _StickyInfo

_loaded_kernel = _native.loaded_kernel()
if _loaded_kernel is not None:
    # the partitioner whose update_partition_info the kernel's sticky_switch is (the compiled send paths' switch)
    _loaded_kernel.sticky_setup(BuiltInPartitioner, StickyInfo)

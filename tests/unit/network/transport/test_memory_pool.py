"""The broker's request memory pool and the frame reader that grows with the bytes that arrive."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.network.transport.memory_pool import (
    GROWTH_STEP_BYTES,
    SMALL_FRAME_BYTES,
    CountingMemoryPool,
    PooledFrameReader,
    SimpleMemoryPool,
    _Release,
    new_memory_pool,
)
from pykafka_client.network.transport.network_receive import FrameReader
from pykafka_client.protocol.records import _native


class FeedTransport:
    """Hands out exactly the bytes fed so far."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.eof = False

    def feed(self, b: bytes) -> None:
        self.data += b

    def read_into(self, view: memoryview) -> int:
        if not self.data:
            return -1 if self.eof else 0
        n = min(len(view), len(self.data))
        view[:n] = self.data[:n]
        del self.data[:n]
        return n


def drain(reader: FrameReader, t: FeedTransport) -> None:
    while reader.read_from(t) > 0 and not reader.complete():
        pass


def test_pool_is_non_strict_and_counts() -> None:
    pool = SimpleMemoryPool(100)
    assert pool.try_allocate(150, large=False)  # some memory left: granted whole, as Kafka's non-strict pool
    assert pool.available == -50 and pool.is_out_of_memory()
    assert not pool.try_allocate(1, large=False)
    assert pool.refused_total == 1
    pool.release(150)
    assert pool.available == 100 and pool.used == 0


def test_large_frames_leave_the_small_frame_reserve() -> None:
    pool = SimpleMemoryPool(40 * 1024 * 1024)
    assert pool.small_frame_reserve == 8 * 1024 * 1024
    assert pool.try_allocate(32 * 1024 * 1024, large=True)
    assert not pool.try_allocate(1, large=True)
    assert pool.has_room(large=False) and pool.try_allocate(100, large=False)


def test_one_large_frame_at_a_time_goes_on_in_overdraft() -> None:
    pool = SimpleMemoryPool(4 * 1024 * 1024)
    first, second = object(), object()
    assert pool.try_allocate(3 * 1024 * 1024, large=True)
    assert not pool.try_allocate(1024 * 1024, large=True)
    assert pool.try_overdraft(first) and pool.try_overdraft(first)
    assert not pool.try_overdraft(second)
    assert not pool.has_room(large=True) and pool.has_room(large=False)
    pool.end_overdraft(second)  # not the holder: no effect
    assert not pool.has_room(large=True)
    pool.end_overdraft(first)
    assert pool.has_room(large=True) and pool.try_overdraft(second)


def test_announcing_a_large_frame_reserves_nothing_until_bytes_arrive() -> None:
    pool = SimpleMemoryPool(50 * 1024 * 1024)
    t = FeedTransport()
    r = PooledFrameReader("c", 104_857_600, pool)
    t.feed(struct.pack(">i", 100_000_000))
    drain(r, t)
    assert pool.used == GROWTH_STEP_BYTES  # one step reserved ahead of the first byte, none yet read
    t.feed(b"x" * (3 * GROWTH_STEP_BYTES + 10))
    drain(r, t)
    assert pool.used == 4 * GROWTH_STEP_BYTES
    r.close()  # a frame dropped half-way gives its memory back
    assert pool.used == 0


def test_completed_frame_keeps_its_memory_until_released() -> None:
    pool = SimpleMemoryPool(50 * 1024 * 1024)
    t = FeedTransport()
    r = PooledFrameReader("c", 104_857_600, pool)
    payload = bytes(range(256)) * 10_000  # 2.56 MB: a large frame
    t.feed(struct.pack(">i", len(payload)) + payload + struct.pack(">i", 3) + b"abc")
    drain(r, t)
    assert r.complete()
    receive = r.take()
    assert bytes(receive.payload) == payload
    assert pool.used == len(payload)
    assert callable(receive.extra)
    receive.extra()
    receive.extra()  # idempotent
    assert pool.used == 0
    drain(r, t)
    small = r.take()
    assert bytes(small.payload) == b"abc" and pool.used == 3
    assert callable(small.extra)
    small.extra()
    assert pool.used == 0


@pytest.mark.parametrize("size", [10, SMALL_FRAME_BYTES + 1])
def test_reader_waits_for_memory_then_resumes(size: int) -> None:
    pool = SimpleMemoryPool(4 * 1024 * 1024)
    assert pool.try_allocate(pool.capacity, large=False)  # exhausted
    blocker = object()
    assert pool.try_overdraft(blocker)  # and another frame holds the overdraft
    t = FeedTransport()
    r = PooledFrameReader("c", 104_857_600, pool)
    t.feed(struct.pack(">i", size) + b"y" * size)
    drain(r, t)
    assert r.waiting_for_memory() and not r.complete()
    assert r.waiting_for_large() == (size > SMALL_FRAME_BYTES)
    pool.release(pool.capacity)
    pool.end_overdraft(blocker)
    drain(r, t)
    assert r.complete() and not r.waiting_for_memory()
    assert bytes(r.take().payload) == b"y" * size


def test_plain_reader_has_no_pool_behaviour() -> None:
    r = FrameReader("c")
    assert not r.waiting_for_memory() and not r.waiting_for_large()
    r.close()


def test_a_granted_frame_is_read_into_the_view_that_is_handed_out() -> None:
    views: list[memoryview] = []

    class Recording(FeedTransport):
        def read_into(self, view: memoryview) -> int:
            views.append(view)
            return super().read_into(view)

    pool = SimpleMemoryPool(1000)
    reader = PooledFrameReader("c", 1000, pool)
    t = Recording()
    t.feed(struct.pack(">i", 5) + b"hello")
    drain(reader, t)
    receive = reader.take()
    assert views[-1] is receive.payload and bytes(receive.payload) == b"hello"
    assert pool.available == 995


def test_take_completed_hands_out_the_release_of_the_frame() -> None:
    pool = SimpleMemoryPool(1000)
    reader = PooledFrameReader("c", 1000, pool)
    t = FeedTransport()
    t.feed(struct.pack(">i", 5) + b"he")
    drain(reader, t)
    assert reader.take_completed() is None and pool.available == 995
    t.feed(b"llo")
    drain(reader, t)
    receive = reader.take_completed()
    assert receive is not None and callable(receive.extra)
    receive.extra()
    assert pool.available == 1000


class _CountingPool(SimpleMemoryPool):
    def __init__(self) -> None:
        super().__init__(1 << 20)
        self.released: list[int] = []

    def release(self, size: int) -> None:
        self.released.append(size)
        super().release(size)


@pytest.mark.skipif(_native.loaded_kernel() is None, reason="the compiled record kernel is not built")
@pytest.mark.parametrize("size", [0, 1, 16_384])
@pytest.mark.parametrize("with_pool", [True, False])
@pytest.mark.parametrize("calls", [1, 2, 3])
def test_the_kernels_release_once_is_the_release_callables_reference(size: int, with_pool: bool, calls: int) -> None:
    """The kernel's ``release_once(pool, size)`` gives back what ``_Release(pool, size)`` does: ``pool.release(size)``
    at the first call when there is a pool and a size, nothing after (idempotent), None returned; no argument taken."""
    kernel = _native.loaded_kernel()
    assert kernel is not None
    outcomes = []
    for make in (_Release, kernel.release_once):
        pool = _CountingPool() if with_pool else None
        release = make(pool, size)
        results = [release() for _ in range(calls)]
        outcomes.append((results, pool.released if pool is not None else None))
        with pytest.raises(TypeError):
            release(1)  # type: ignore[call-arg]  # (takes no argument)
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][1] == (([size] if size else []) if with_pool else None)


def _pool_state(pool: CountingMemoryPool) -> tuple[int, ...]:
    return (pool.capacity, pool.small_frame_reserve, pool.available, pool.used, pool.refused_total,
            int(pool.is_out_of_memory()), int(pool.has_room(False)), int(pool.has_room(True)))


_OWNERS = (object(), object())


@pytest.mark.skipif(_native.loaded_kernel() is None, reason="the compiled record kernel is not built")
@settings(max_examples=300, deadline=None)
@given(
    capacity=st.sampled_from([1, 7, 100, 1 << 20, 64 << 20]),
    ops=st.lists(
        st.one_of(
            st.tuples(st.just("try_allocate"), st.integers(min_value=0, max_value=1 << 21), st.booleans()),
            st.tuples(st.just("release"), st.integers(min_value=0, max_value=1 << 21)),
            st.tuples(st.sampled_from(["try_overdraft", "end_overdraft"]), st.sampled_from([0, 1])),
        ),
        max_size=40,
    ),
)
def test_the_kernels_memory_counter_is_the_simple_memory_pool(capacity: int, ops: list[tuple[object, ...]]) -> None:
    """``new_memory_pool`` with the kernel (its ``memory_counter``) answers every call as :class:`SimpleMemoryPool`
    does and keeps the same counts, whatever the sequence of allocations, releases and overdrafts."""
    kernel = _native.loaded_kernel()
    assert kernel is not None
    pools: tuple[CountingMemoryPool, CountingMemoryPool] = (SimpleMemoryPool(capacity), new_memory_pool(capacity))
    assert type(pools[1]) is not SimpleMemoryPool
    assert _pool_state(pools[0]) == _pool_state(pools[1])
    for op in ops:
        name, *args = op
        if name in ("try_overdraft", "end_overdraft"):
            args = [_OWNERS[int(args[0])]]  # type: ignore[call-overload]
        results = [getattr(pool, str(name))(*args) for pool in pools]
        assert results[0] == results[1], op
        assert _pool_state(pools[0]) == _pool_state(pools[1]), op


def test_a_pool_of_no_capacity_is_refused_by_either() -> None:
    for capacity in (0, -1):
        with pytest.raises(ValueError, match="capacity must be positive"):
            SimpleMemoryPool(capacity)
        with pytest.raises(ValueError, match="capacity must be positive"):
            new_memory_pool(capacity)


@pytest.mark.skipif(_native.loaded_kernel() is None, reason="the compiled record kernel is not built")
def test_the_kernels_memory_counter_takes_the_references_keywords() -> None:
    pools = (SimpleMemoryPool(100), new_memory_pool(100))
    for pool in pools:
        assert pool.try_allocate(60, large=False) and pool.try_allocate(size=30, large=True)
        assert pool.has_room(large=False) and pool.has_room(large=True)  # (10 left: under the reserve, but the overdraft is free)
        with pytest.raises(TypeError):
            pool.try_allocate(1)  # type: ignore[call-arg]  # (large missing)
        with pytest.raises(TypeError):
            pool.try_allocate(1, large=True, size=2)  # type: ignore[misc]  # (size twice)
    assert _pool_state(pools[0]) == _pool_state(pools[1])

"""The broker's read-ahead frame reader: one ``recv`` for a frame's size and body (and the frames after it), frames
still handed out one at a time, counted in the pool at their own size (a frame all in the buffer as a view of it)."""

from __future__ import annotations

import socket
import struct
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.errors import InvalidReceiveError
from pykafka_client.network.transport.channel import ChannelMuteEvent
from pykafka_client.network.transport.channel_builder import DefaultChannelBuilder, Mode
from pykafka_client.network.transport.memory_pool import (
    READ_AHEAD_BYTES,
    SMALL_FRAME_BYTES,
    PooledFrameReader,
    ReadAheadFrameReader,
    SimpleMemoryPool,
)
from pykafka_client.network.transport.network_receive import FrameReader
from pykafka_client.network.transport.selector import Selector
from pykafka_client.utils.time import MockTime


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


class Chunked:
    """Hands out ``data`` in reads of at most ``steps[i]`` bytes (then whatever is asked); 0 = would block, then EOF.
    Counts the reads."""

    def __init__(self, data: bytes, steps: Sequence[int] = ()) -> None:
        self.data = data
        self.pos = 0
        self.steps = list(steps)
        self.reads = 0
        self.views: list[memoryview] = []

    def read_into(self, view: memoryview) -> int:
        self.reads += 1
        self.views.append(view)
        if self.pos >= len(self.data):
            return -1
        step = self.steps.pop(0) if self.steps else len(view)
        n = min(step, len(view), len(self.data) - self.pos)
        view[:n] = self.data[self.pos : self.pos + n]
        self.pos += n
        return n


def read_frames(reader: FrameReader, t: Chunked, max_calls: int = 10_000) -> list[bytes]:
    """Every frame the reader hands out until end of stream, releasing each (as the Processor does once answered)."""
    out: list[bytes] = []
    for _ in range(max_calls):
        n = reader.read_from(t)
        receive = reader.take_completed()
        if receive is not None:
            out.append(bytes(receive.payload))
            if callable(receive.extra):
                receive.extra()
        if n < 0:
            return out
    raise AssertionError("no end of stream")


@settings(max_examples=300, deadline=None)
@given(
    payloads=st.lists(st.binary(max_size=300), max_size=8),
    steps=st.lists(st.integers(min_value=0, max_value=400), max_size=40),
    buffer_size=st.sampled_from([4, 5, 9, 64, 301, READ_AHEAD_BYTES]),
)
def test_hands_out_the_frames_a_frame_reader_does_whatever_the_reads(
    payloads: list[bytes], steps: list[int], buffer_size: int
) -> None:
    """The reference: FrameReader reading the same bytes in the same pieces. Every frame is handed out whole and in
    order, and the pool is back to empty once they are released (none of the buffer's bytes are counted in it)."""
    data = b"".join(frame(p) for p in payloads)
    expected = read_frames(FrameReader("c", 1000), Chunked(data, steps))
    pool = SimpleMemoryPool(1 << 20)
    reader = ReadAheadFrameReader("c", 1000, pool, buffer_size)
    assert read_frames(reader, Chunked(data, steps)) == expected == payloads
    assert pool.used == 0 and not reader.bytes_pending()


def test_one_read_brings_several_frames_handed_out_one_at_a_time() -> None:
    payloads = [b"a" * 100, b"", b"b" * 16_400, b"c" * 7]
    t = Chunked(b"".join(frame(p) for p in payloads))
    pool = SimpleMemoryPool(1 << 20)
    reader = ReadAheadFrameReader("c", 1 << 20, pool)
    got = []
    for p in payloads:
        n = reader.read_from(t)
        receive = reader.take_completed()
        assert receive is not None and bytes(receive.payload) == p
        assert pool.used == len(p)  # each frame in pool memory of exactly its size
        assert callable(receive.extra)
        receive.extra()
        got.append(n)
        assert reader.has_bytes_ahead() == (p is not payloads[-1])
    assert t.reads == 1  # the size and body of each, and the frames after it: one read
    assert got == [len(t.data), 0, 0, 0]  # the bytes taken from the socket


def test_a_frame_starting_at_the_buffers_end_is_finished_from_the_socket() -> None:
    """The size split over the buffer's end and the next read; the body partly in the buffer, the rest read straight
    into the frame's memory (no second pass through the buffer)."""
    payloads = [b"x" * 10, b"y" * 40]
    data = b"".join(frame(p) for p in payloads)
    t = Chunked(data)
    reader = ReadAheadFrameReader("c", 1000, SimpleMemoryPool(1000), buffer_size=16)  # 14 + 2 bytes of the size
    assert read_frames(reader, t) == payloads
    assert t.reads == 4  # 16 bytes; 16 more (the size's rest, 14 body bytes); the body's 26 others; end of stream
    assert len(t.views[2]) == 26


def test_a_short_read_is_not_followed_by_a_read_that_would_block() -> None:
    """A read shorter than the buffer emptied the socket: the incomplete frame waits for the socket to be readable
    again, with no read in between (a would-block costs an exception in the transport)."""
    data = frame(b"z" * 100)
    t = Chunked(data, steps=[50])
    reader = ReadAheadFrameReader("c", 1000, SimpleMemoryPool(1000))
    assert reader.read_from(t) == 50 and t.reads == 1
    assert not reader.complete() and not reader.has_bytes_ahead() and reader.bytes_pending()
    assert reader.read_from(t) == 54 and reader.complete()


def test_an_oversized_frame_is_rejected_before_any_memory_is_taken() -> None:
    pool = SimpleMemoryPool(1000)
    reader = ReadAheadFrameReader("c", 100, pool)
    with pytest.raises(InvalidReceiveError):
        reader.read_from(Chunked(frame(b"q" * 101) + frame(b"ok")))
    assert pool.used == 0
    with pytest.raises(InvalidReceiveError):
        ReadAheadFrameReader("c", 100, pool).read_from(Chunked(struct.pack(">i", -1)))


@pytest.mark.parametrize("size", [10, SMALL_FRAME_BYTES + 1])
def test_waits_for_memory_with_the_bytes_read_ahead_then_resumes(size: int) -> None:
    pool = SimpleMemoryPool(4 * 1024 * 1024)
    assert pool.try_allocate(pool.capacity, large=False)  # exhausted
    blocker = object()
    assert pool.try_overdraft(blocker)
    t = Chunked(frame(b"y" * size) + frame(b"next"))
    reader = ReadAheadFrameReader("c", 1 << 20, pool)
    reader.read_from(t)
    assert reader.waiting_for_memory() and not reader.complete() and reader.has_bytes_ahead()
    assert reader.waiting_for_large() == (size > SMALL_FRAME_BYTES)
    pool.release(pool.capacity)
    pool.end_overdraft(blocker)
    assert read_frames(reader, t) == [b"y" * size, b"next"]
    assert pool.used == 0


def test_close_drops_the_bytes_read_ahead_and_gives_the_frames_memory_back() -> None:
    pool = SimpleMemoryPool(1 << 20)
    reader = ReadAheadFrameReader("c", 1 << 20, pool, buffer_size=64)
    reader.read_from(Chunked(frame(b"w" * 1000), steps=[64, 100]))
    assert pool.used == 1000 and reader.bytes_pending() and not reader.complete()
    reader.close()
    assert pool.used == 0 and not reader.bytes_pending()
    reader.read_from(Chunked(frame(b"v") + frame(b"u")))
    receive = reader.take_completed()
    assert receive is not None and callable(receive.extra) and reader.has_bytes_ahead()
    reader.close()
    assert not reader.has_bytes_ahead() and not reader.bytes_pending()


def test_the_buffer_exists_only_while_it_holds_bytes() -> None:
    """An idle connection keeps no read-ahead buffer: it goes once its last byte is handed out."""
    reader = ReadAheadFrameReader("c", 1000, SimpleMemoryPool(1000))
    assert reader._ahead is None
    t = Chunked(frame(b"one") + frame(b"two"))
    reader.read_from(t)
    assert reader._ahead is not None and reader.has_bytes_ahead()
    receive = reader.take_completed()
    assert receive is not None and bytes(receive.payload) == b"one"
    reader.read_from(t)
    assert reader._ahead is None and not reader.has_bytes_ahead()
    receive = reader.take_completed()
    assert receive is not None and bytes(receive.payload) == b"two"
    assert reader.read_from(t) == -1 and reader._ahead is None


def test_the_buffer_holds_at_least_a_size() -> None:
    with pytest.raises(ValueError):
        ReadAheadFrameReader("c", 100, SimpleMemoryPool(100), buffer_size=3)


# --- in the broker's selector --------------------------------------------------------------------


def _server_selector(builder: DefaultChannelBuilder | None = None) -> Selector:
    return Selector(time=MockTime(), channel_builder=builder or DefaultChannelBuilder(Mode.SERVER),
                    memory_pool=SimpleMemoryPool(1 << 20))


def test_a_muted_channels_frames_read_ahead_are_handed_out_after_its_unmute() -> None:
    """One frame per channel per poll still, and none while it is muted (one request in flight): the frames read
    ahead wait in the buffer, and the poll after the unmute hands out the next without the socket being readable."""
    sel = _server_selector()
    ours, peer = socket.socketpair()
    try:
        sel.register("a", ours)
        peer.sendall(frame(b"one") + frame(b"two") + frame(b"three"))
        sel.poll(0)
        assert [bytes(r.payload) for r in sel.completed_receives()] == [b"one"]
        channel = sel.channel("a")
        assert channel is not None and channel.has_bytes_buffered()
        sel.mute("a")
        channel.handle_channel_mute_event(ChannelMuteEvent.REQUEST_RECEIVED)
        peer.close()  # nothing more will come: the rest is in the buffer
        sel.poll(0)
        assert sel.completed_receives() == [] and sel.disconnected() == {}
        channel.handle_channel_mute_event(ChannelMuteEvent.RESPONSE_SENT)
        sel.unmute("a")
        got = []
        for _ in range(2):
            sel.poll(0)
            got += [bytes(r.payload) for r in sel.completed_receives()]
        assert got == [b"two", b"three"]
    finally:
        sel.close()
        peer.close()


def test_sasl_channels_keep_the_frame_at_a_time_reader() -> None:
    """A SASL authenticator reads its own frames off the transport (also to re-authenticate): nothing may be read
    ahead of them."""

    class Sasl:
        def authenticate(self, transport: object) -> None: ...

        def complete(self) -> bool:
            return True

        def wants_write(self) -> bool:
            return False

        def principal(self) -> str | None:
            return None

    def sasl(connection_id: str, host: str | None) -> Sasl:
        return Sasl()

    for factory, expected in ((None, ReadAheadFrameReader), (sasl, PooledFrameReader)):
        sel = _server_selector(DefaultChannelBuilder(Mode.SERVER, authenticator_factory=factory))
        ours, peer = socket.socketpair()
        try:
            sel.register("a", ours)
            channel = sel.channel("a")
            assert channel is not None and type(channel._reader) is expected
        finally:
            sel.close()
            peer.close()


@pytest.mark.parametrize(("skip", "expected_waits"), [(True, [True, False, True, False]), (False, [True] * 4)])
def test_a_poll_with_frames_read_ahead_skips_the_os_wait_if_the_poll_before_waited(
    skip: bool, expected_waits: list[bool]
) -> None:
    """With ``skip_wait_when_buffered`` (the broker's selectors) a poll hands out a frame read ahead without asking
    the OS for events, but never two polls in a row: every other poll still sees the other connections, writes and
    wake-ups. Without it (the default, the client's) every poll asks."""
    sel = Selector(time=MockTime(), channel_builder=DefaultChannelBuilder(Mode.SERVER),
                   memory_pool=SimpleMemoryPool(1 << 20), skip_wait_when_buffered=skip)
    waits: list[bool] = []
    select = sel._selector.select

    def counting_select(timeout: float | None = None) -> list[tuple[object, int]]:
        waits[-1] = True
        return select(timeout)  # type: ignore[return-value]

    sel._selector.select = counting_select  # type: ignore[method-assign,assignment]
    ours, peer = socket.socketpair()
    other_ours, other_peer = socket.socketpair()
    try:
        sel.register("a", ours)
        sel.register("b", other_ours)
        peer.sendall(frame(b"1") + frame(b"2") + frame(b"3") + frame(b"4"))
        got = []
        for _ in range(4):
            waits.append(False)
            sel.poll(0)
            got += [(r.source, bytes(r.payload)) for r in sel.completed_receives()]
            if len(waits) == 2:
                other_peer.sendall(frame(b"x"))  # seen by the next poll that waits
                sel.wakeup()
        assert waits == expected_waits
        # (the third poll: the event of b, then a's frame read ahead)
        assert got == [("a", b"1"), ("a", b"2"), ("b", b"x"), ("a", b"3"), ("a", b"4")]
    finally:
        sel.close()
        peer.close()
        other_peer.close()


def test_read_buffered_hands_out_a_frame_read_ahead_into_the_polls_receives() -> None:
    """``read_buffered`` (a broker Processor that answered and unmuted a connection within its round) reads what the
    next poll would for the channel's buffered bytes: one frame, appended to the list ``completed_receives`` gave;
    nothing for a muted channel nor for one with no bytes buffered; a closed peer is reported as a poll's."""
    sel = _server_selector()
    ours, peer = socket.socketpair()
    try:
        sel.register("a", ours)
        peer.sendall(frame(b"one") + frame(b"two") + frame(b"three"))
        sel.poll(0)
        receives = sel.completed_receives()
        assert [bytes(r.payload) for r in receives] == [b"one"]
        channel = sel.channel("a")
        assert channel is not None
        sel.mute("a")
        assert not sel.read_buffered(channel)  # muted: nothing read
        sel.unmute("a")
        assert sel.read_buffered(channel)
        assert sel.completed_receives() is receives and [bytes(r.payload) for r in receives] == [b"one", b"two"]
        assert sel.read_buffered(channel)
        assert [bytes(r.payload) for r in receives] == [b"one", b"two", b"three"]
        assert not sel.read_buffered(channel)  # nothing buffered any more (the socket is not read)
        assert len(receives) == 3 and sel.disconnected() == {}
        peer.sendall(frame(b"four")[:2])
        peer.close()
        sel.poll(0)  # part of a size, then the end of the stream
        assert sel.completed_receives() == [] and "a" in sel.disconnected()
    finally:
        sel.close()
        peer.close()


def _reader_state(reader: ReadAheadFrameReader, pool: SimpleMemoryPool) -> tuple[object, ...]:
    return (reader._size, reader._size_read, reader._payload_read, reader._allowed, reader._reserved,
            reader._waiting, reader._large, reader._lo, reader._hi, reader._ahead is None, pool.used,
            pool.refused_total)


@settings(max_examples=300, deadline=None)
@given(
    payloads=st.lists(st.binary(max_size=300), max_size=8),
    steps=st.lists(st.integers(min_value=0, max_value=400), max_size=40),
    buffer_size=st.sampled_from([4, 5, 9, 64, 301, READ_AHEAD_BYTES]),
    capacity=st.sampled_from([1, 100, 400, 1 << 20]),
    release_after=st.lists(st.booleans(), max_size=50),
)
def test_read_frame_is_read_from_then_take_completed(
    payloads: list[bytes], steps: list[int], buffer_size: int, capacity: int, release_after: list[bool]
) -> None:
    """``read_frame`` (its one-step path for a frame all in the buffer, else the two calls) against ``read_from`` then
    ``take_completed``, call after call on the same bytes in the same pieces, with a pool that may refuse (frames
    released or kept as the draw says): the same frames, bytes read, pool accounting and reader state."""
    data = b"".join(frame(p) for p in payloads)
    pools = SimpleMemoryPool(capacity), SimpleMemoryPool(capacity)
    readers = ReadAheadFrameReader("c", 1000, pools[0], buffer_size), ReadAheadFrameReader("c", 1000, pools[1], buffer_size)
    sources = Chunked(data, steps), Chunked(data, steps)
    kept: list[list[object]] = [[], []]
    releases = iter(release_after)
    for _ in range(200):
        receive_a, n_a = readers[0].read_frame(sources[0])
        n_b = readers[1].read_from(sources[1])
        receive_b = readers[1].take_completed() if n_b >= 0 else None
        assert n_a == n_b
        assert (receive_a is None) == (receive_b is None)
        release = next(releases, True)
        for receive, keep in ((receive_a, kept[0]), (receive_b, kept[1])):
            if receive is not None:
                assert callable(receive.extra)
                if release:
                    receive.extra()
                else:
                    keep.append(receive.extra)
        if receive_a is not None and receive_b is not None:
            assert bytes(receive_a.payload) == bytes(receive_b.payload) and receive_a.source == receive_b.source
            assert type(receive_a.payload) is memoryview and receive_a.payload.readonly == receive_b.payload.readonly
        assert _reader_state(readers[0], pools[0]) == _reader_state(readers[1], pools[1])
        if n_a < 0:
            break
        if readers[0].waiting_for_memory():  # (the pool has no room: give the frames kept back, as answers would)
            for k in kept:
                for give_back in k:
                    give_back()  # type: ignore[operator]
                k.clear()


def test_read_frame_hands_out_the_frames_in_the_buffer_without_a_read() -> None:
    payloads = [b"a" * 100, b"b" * 16_400, b"c" * 7]
    t = Chunked(b"".join(frame(p) for p in payloads))
    pool = SimpleMemoryPool(1 << 20)
    reader = ReadAheadFrameReader("c", 1 << 20, pool)
    got = []
    for _ in payloads:
        receive, n = reader.read_frame(t)
        assert receive is not None and pool.used == len(receive.payload)
        got.append((bytes(receive.payload), n))
        assert callable(receive.extra)
        receive.extra()
    assert got == [(payloads[0], len(t.data)), (payloads[1], 0), (payloads[2], 0)] and t.reads == 1
    assert not reader.has_bytes_ahead() and pool.used == 0


@settings(max_examples=300, deadline=None)
@given(
    payloads=st.lists(st.binary(min_size=1, max_size=300), max_size=8),
    steps=st.lists(st.integers(min_value=0, max_value=400), max_size=40),
    buffer_size=st.sampled_from([4, 5, 9, 17, 64, 301, READ_AHEAD_BYTES]),
)
def test_frames_kept_while_later_ones_are_read_keep_their_bytes(
    payloads: list[bytes], steps: list[int], buffer_size: int
) -> None:
    """Frames handed out whole from the buffer are views of it (no copy): no later read may write where they are.
    Every frame kept unreleased and uncopied until the stream's end (a request still in use) still holds its bytes,
    and the pool's accounting is a frame's size each, as for frames in memory of their own."""
    data = b"".join(frame(p) for p in payloads)
    pool = SimpleMemoryPool(1 << 20)
    reader = ReadAheadFrameReader("c", 1000, pool, buffer_size)
    t = Chunked(data, steps)
    kept = []
    for _ in range(10_000):
        receive, n = reader.read_frame(t)
        if receive is not None:
            kept.append(receive)
        if n < 0:
            break
    assert [bytes(r.payload) for r in kept] == payloads
    assert pool.used == sum(map(len, payloads))
    for r in kept:
        assert callable(r.extra)
        r.extra()
    assert pool.used == 0


def test_a_frame_all_in_the_buffer_is_handed_out_without_a_copy() -> None:
    payloads = [b"a" * 100, b"b" * 50]
    reader = ReadAheadFrameReader("c", 1000, SimpleMemoryPool(1000))
    t = Chunked(b"".join(frame(p) for p in payloads))
    first, _ = reader.read_frame(t)  # read into the buffer, copied (read_from's path)
    second, n = reader.read_frame(t)  # all in the buffer already: a view of it
    assert first is not None and second is not None and n == 0 and t.reads == 1
    assert bytes(second.payload) == payloads[1] and second.payload.obj is t.views[0].obj


def _selector_view(sel: Selector, pool: SimpleMemoryPool, cid: str, start: int) -> tuple[object, ...]:
    """What a read of ``cid`` left: the frames it added to the completed receives (from ``start``), the counts."""
    channel = sel.channel(cid)
    assert channel is not None
    m = sel.metrics
    return ([bytes(r.payload) for r in sel.completed_receives()[start:]], m.responses_received_total, m.bytes_received_total,
            channel.bytes_received, channel.mute_state, sel.memory_muted_count(), channel.has_bytes_buffered(),
            channel.waiting_for_memory(), pool.used, pool.refused_total, sel.disconnected())


@pytest.mark.parametrize("room", [True, False])
def test_read_buffered_of_a_frame_all_read_ahead_leaves_what_a_polls_read_does(room: bool) -> None:
    """``read_buffered`` takes a frame that is all in the read-ahead buffer without the poll's read (the reader's
    ``take_buffered_frame``): the frames, the selector's and the channel's counts, the pool's accounting and a memory
    mute when the pool has no room are those a poll reading the channel gives."""
    views = []
    for via_read_buffered in (True, False):
        pool = SimpleMemoryPool(1 << 20)
        sel = Selector(time=MockTime(), channel_builder=DefaultChannelBuilder(Mode.SERVER), memory_pool=pool)
        ours, peer = socket.socketpair()
        try:
            sel.register("a", ours)
            peer.sendall(frame(b"one") + frame(b"two") + frame(b"three"))
            sel.poll(0)
            assert [bytes(r.payload) for r in sel.completed_receives()] == [b"one"]
            channel = sel.channel("a")
            assert channel is not None
            for r in sel.completed_receives():
                assert callable(r.extra)
                r.extra()  # (the pool's release callable)
            if not room:
                assert pool.try_allocate(pool.capacity, large=False)
            sel.mute("a")
            sel.unmute("a")
            if via_read_buffered:  # (its frames join the list the poll gave)
                assert sel.read_buffered(channel)
                views.append(_selector_view(sel, pool, "a", 1))
            else:
                sel.poll(0)
                views.append(_selector_view(sel, pool, "a", 0))
            if not room:  # waits for memory, muted; resumes once the pool has room
                pool.release(pool.capacity)
                sel.poll(0)
                assert [bytes(r.payload) for r in sel.completed_receives()] == [b"two"]
        finally:
            sel.close()
            peer.close()
    assert views[0] == views[1]
    assert views[0][0] == ([b"two"] if room else [])
    assert views[0][5] == (0 if room else 1)

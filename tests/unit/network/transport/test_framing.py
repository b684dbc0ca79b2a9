"""FrameReader / SendWriter against scripted in-memory transports (no sockets)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.errors import IllegalArgumentError, InvalidReceiveError
from pykafka_client.network.transport.network_receive import UNLIMITED, FrameReader, check_receive_size
from pykafka_client.network.transport.network_send import FileRegion, SendWriter, size_prefixed
from pykafka_client.network.transport.selectable import NetworkSend


class ScriptedReader:
    """Delivers ``data`` in reads of at most ``steps[i]`` bytes; 0 = would block; then EOF."""

    def __init__(self, data: bytes, steps: Sequence[int]) -> None:
        self.data = data
        self.pos = 0
        self.steps = list(steps)
        self.largest_request = 0

    def read_into(self, view: memoryview) -> int:
        self.largest_request = max(self.largest_request, view.nbytes)
        if self.pos >= len(self.data):
            return -1
        step = self.steps.pop(0) if self.steps else len(self.data)
        n = min(step, view.nbytes, len(self.data) - self.pos)
        view[:n] = self.data[self.pos : self.pos + n]
        self.pos += n
        return n


def frame(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


def read_all(reader: FrameReader, transport: ScriptedReader, max_calls: int = 1000) -> list[bytes]:
    out = []
    for _ in range(max_calls):
        n = reader.read_from(transport)
        if reader.complete():
            out.append(bytes(reader.take().payload))
        if n < 0:
            break
    return out


def test_one_frame_in_one_read() -> None:
    t = ScriptedReader(frame(b"hello"), [])
    r = FrameReader("c", 100)
    assert r.read_from(t) == 9
    assert r.complete()
    rec = r.take()
    assert rec.source == "c" and bytes(rec.payload) == b"hello"
    assert not r.complete() and not r.bytes_pending()


@pytest.mark.parametrize("steps", [[1] * 20, [2, 1, 1, 5], [3, 0, 1, 0, 4], [4, 5], [5, 4]])
def test_size_and_payload_split_across_reads(steps: list[int]) -> None:
    t = ScriptedReader(frame(b"abcdefghi"), steps)
    r = FrameReader("c", 100)
    got = read_all(r, t)
    assert got == [b"abcdefghi"]


def test_partial_frame_is_not_complete_and_pending() -> None:
    t = ScriptedReader(frame(b"abcdef")[:6], [2, 4])
    r = FrameReader("c", 100)
    r.read_from(t)
    assert r.bytes_pending() and not r.size_read()
    r.read_from(t)
    assert r.size_read() and not r.complete()
    assert r.read_from(t) == -1  # EOF mid-frame
    assert not r.complete()


def test_several_frames_back_to_back() -> None:
    data = b"".join(frame(bytes([i]) * i) for i in range(10))
    t = ScriptedReader(data, [3] * 200)
    got = read_all(FrameReader("c", 100), t)
    assert got == [bytes([i]) * i for i in range(10)]


def test_zero_length_frame_is_delivered_empty() -> None:
    t = ScriptedReader(frame(b"") + frame(b"x"), [])
    got = read_all(FrameReader("c", 10), t)
    assert got == [b"", b"x"]


def test_exact_max_size_allowed() -> None:
    got = read_all(FrameReader("c", 8), ScriptedReader(frame(b"12345678"), []))
    assert got == [b"12345678"]


def test_max_plus_one_rejected_before_allocation() -> None:
    t = ScriptedReader(frame(b"123456789"), [])
    r = FrameReader("c", 8)
    with pytest.raises(InvalidReceiveError, match=r"size = 9 larger than 8"):
        r.read_from(t)
    assert t.largest_request == 4  # only the size was read


@pytest.mark.parametrize("raw", [b"\xff\xff\xff\xff", b"\x80\x00\x00\x00"])
def test_negative_size_rejected(raw: bytes) -> None:
    with pytest.raises(InvalidReceiveError, match=r"size = -"):
        FrameReader("c", UNLIMITED).read_from(ScriptedReader(raw + b"xx", []))


def test_huge_size_rejected_without_allocation() -> None:
    with pytest.raises(InvalidReceiveError, match="2147483647"):
        FrameReader("c", 1 << 20).read_from(ScriptedReader(b"\x7f\xff\xff\xff", []))


def test_check_receive_size_unlimited() -> None:
    check_receive_size(2**31 - 1, UNLIMITED)
    with pytest.raises(InvalidReceiveError):
        check_receive_size(-1, UNLIMITED)


def test_would_block_returns_zero() -> None:
    t = ScriptedReader(frame(b"ab"), [0, 0, 6])
    r = FrameReader("c", 10)
    assert r.read_from(t) == 0
    assert r.read_from(t) == 0
    assert r.read_from(t) == 6 and r.complete()


def test_take_before_complete_is_an_error() -> None:
    with pytest.raises(AssertionError):
        FrameReader("c").take()


# --- sends ------------------------------------------------------------------------------------------


class LimitedWriter:
    """Accepts at most ``limits[i]`` bytes per call (0 = socket full) and records the pieces."""

    def __init__(self, limits: Sequence[int]) -> None:
        self.limits = list(limits)
        self.out = bytearray()
        self.calls: list[int] = []  # number of buffers handed per write_buffers call

    def _limit(self) -> int:
        return self.limits.pop(0) if self.limits else 1 << 30

    def write_buffers(self, views: Sequence[memoryview]) -> int:
        self.calls.append(len(views))
        budget = self._limit()
        n = 0
        for v in views:
            take = min(v.nbytes, budget - n)
            self.out += v[:take]
            n += take
            if n >= budget:
                break
        return n

    def transfer_file(self, fd: int, offset: int, count: int) -> int:
        n = min(count, self._limit())
        self.out += os.pread(fd, n, offset)
        return n


def test_size_prefixed_frames_pieces_without_joining() -> None:
    record_bytes = bytearray(b"R" * 1000)
    send = size_prefixed("n1", [b"head", memoryview(record_bytes)])
    assert send.size == 4 + 4 + 1000
    assert send.buffers[0] == (1004).to_bytes(4, "big")
    assert send.buffers[2].obj is record_bytes  # type: ignore[attr-defined]


def test_multi_buffer_send_written_in_one_gathering_call() -> None:
    send = size_prefixed("n", [b"ab", b"cd", b"ef"])
    w = LimitedWriter([])
    sw = SendWriter(send)
    assert sw.write_to(w) == 10
    assert sw.completed() and send.completed() and send.written == 10
    assert w.calls == [4]
    assert bytes(w.out) == frame(b"abcdef")


@pytest.mark.parametrize("limits", [[1] * 30, [3, 0, 2, 0, 7], [5, 5], [4], [0, 0, 100]])
def test_partial_writes_resume_exactly(limits: list[int]) -> None:
    send = size_prefixed("n", [b"ab", b"", b"cdefg", bytearray(b"hij")])
    w = LimitedWriter(limits)
    sw = SendWriter(send)
    for _ in range(100):
        sw.write_to(w)
        if sw.completed():
            break
    assert bytes(w.out) == frame(b"abcdefghij")
    assert send.written == send.size


def test_file_region_piece_written_with_transfer_file() -> None:
    with tempfile.TemporaryFile() as f:
        f.write(b"0123456789")
        f.flush()
        send = size_prefixed("n", [b"hd", FileRegion(f, 3, 5), b"tl"])
        w = LimitedWriter([3, 2, 2, 100])
        sw = SendWriter(send)
        for _ in range(20):
            sw.write_to(w)
            if sw.completed():
                break
        assert bytes(w.out) == frame(b"hd34567tl")


def test_declared_size_must_match_buffers() -> None:
    with pytest.raises(IllegalArgumentError, match="declares size"):
        SendWriter(NetworkSend(destination="n", buffers=[b"abc"], size=4))


def test_unsupported_piece_type_rejected() -> None:
    with pytest.raises(IllegalArgumentError, match="cannot send"):
        size_prefixed("n", ["text"])


# --- properties -------------------------------------------------------------------------------------

@settings(max_examples=150, deadline=None)
@given(
    payloads=st.lists(st.binary(max_size=300), max_size=8),
    steps=st.lists(st.integers(min_value=0, max_value=40), max_size=200),
)
def test_any_split_of_any_frames_round_trips(payloads: list[bytes], steps: list[int]) -> None:
    data = b"".join(frame(p) for p in payloads)
    got = read_all(FrameReader("c", 300), ScriptedReader(data, steps), max_calls=10_000)
    assert got == payloads


@settings(max_examples=150, deadline=None)
@given(size=st.integers(min_value=-(2**31), max_value=2**31 - 1), max_size=st.integers(min_value=0, max_value=1 << 20))
def test_size_check_matches_definition(size: int, max_size: int) -> None:
    reader = FrameReader("c", max_size)
    transport = ScriptedReader(size.to_bytes(4, "big", signed=True), [])
    if 0 <= size <= max_size:
        reader.read_from(transport)
        assert reader.size_read()
    else:
        with pytest.raises(InvalidReceiveError):
            reader.read_from(transport)


@settings(max_examples=100, deadline=None)
@given(
    pieces=st.lists(st.binary(max_size=50), max_size=10),
    limits=st.lists(st.integers(min_value=0, max_value=30), max_size=100),
)
def test_any_partial_write_pattern_sends_exact_bytes(pieces: list[bytes], limits: list[int]) -> None:
    send = size_prefixed("n", pieces)
    writer = LimitedWriter(limits)
    sw = SendWriter(send)
    for _ in range(1000):
        sw.write_to(writer)
        if sw.completed():
            break
    assert bytes(writer.out) == frame(b"".join(pieces))


class RecordingReader(ScriptedReader):
    """A :class:`ScriptedReader` that keeps every view it was asked to read into."""

    def __init__(self, data: bytes, steps: Sequence[int]) -> None:
        super().__init__(data, steps)
        self.views: list[memoryview] = []

    def read_into(self, view: memoryview) -> int:
        self.views.append(view)
        return super().read_into(view)


def test_a_whole_frame_is_read_into_the_view_that_is_handed_out() -> None:
    """The reads of a frame that arrives at once use the reader's size view and the payload's own view, unsliced;
    that same view is the payload handed out (no view made per read)."""
    t = RecordingReader(frame(b"hello") + frame(b"again"), [4, 5, 4, 5])
    r = FrameReader("c", 100)
    r.read_from(t)
    first = r.take()
    r.read_from(t)
    second = r.take()
    size_view, payload_view = t.views[0], t.views[1]
    assert t.views[2] is size_view and size_view.nbytes == 4  # one size view for every frame
    assert payload_view is first.payload and t.views[3] is second.payload
    assert (bytes(first.payload), bytes(second.payload)) == (b"hello", b"again")


def test_a_frame_in_pieces_is_read_into_the_rest_of_its_view() -> None:
    t = RecordingReader(frame(b"hello"), [2, 2, 3, 2])
    r = FrameReader("c", 100)
    while not r.complete():
        r.read_from(t)
    assert [v.nbytes for v in t.views] == [4, 2, 5, 2]
    assert bytes(r.take().payload) == b"hello"


def test_take_completed_is_none_until_the_frame_is_whole() -> None:
    t = ScriptedReader(frame(b"hello"), [4, 2, 0, 3])
    r = FrameReader("c", 100)
    r.read_from(t)
    assert r.take_completed() is None
    r.read_from(t)
    assert r.take_completed() is None
    r.read_from(t)
    r.read_from(t)
    receive = r.take_completed()
    assert receive is not None and bytes(receive.payload) == b"hello" and r.take_completed() is None
    with pytest.raises(AssertionError):
        r.take()


class _DirtyBuffers:
    """A kernel whose ``frame_buffer`` hands out memory full of old bytes (as the allocator may), counting its
    calls; every other function is the real kernel's."""

    def __init__(self, kernel: object) -> None:
        self._kernel = kernel
        self.sizes: list[int] = []

    def frame_buffer(self, size: int) -> bytearray:
        self.sizes.append(size)
        return bytearray(b"\xaa" * size)

    def __getattr__(self, name: str) -> object:
        return getattr(self._kernel, name)


@pytest.mark.parametrize("pooled", [False, True])
def test_frame_payloads_are_read_into_unzeroed_buffers_filled_whole(pooled: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the kernel on, a frame's payload buffer is ``frame_buffer``'s (not zeroed first: the zeroing of a 16 KiB
    produce request cost as much as its parse); what was in that memory never shows, since a frame is handed out
    only once every byte of it was read, whatever the pieces it arrived in."""
    from pykafka_client.network.transport.memory_pool import PooledFrameReader, SimpleMemoryPool
    from pykafka_client.protocol.records import _native

    dirty = _DirtyBuffers(_native.kernel)
    monkeypatch.setattr(_native, "kernel", dirty)
    payloads = [bytes(range(256)) * 3, b"", b"\x00" * 100]
    reader = PooledFrameReader("c", 1 << 20, SimpleMemoryPool(1 << 20)) if pooled else FrameReader("c")
    got = read_all(reader, ScriptedReader(b"".join(frame(p) for p in payloads), [1, 3, 7, 100, 2, 500, 1]))
    assert got == payloads
    assert dirty.sizes == [768, 100]  # the empty frame needs no buffer


def test_the_kernels_frame_buffer() -> None:
    from pykafka_client.protocol.records import _native

    kernel = _native.loaded_kernel()
    if kernel is None:
        pytest.skip("the compiled record kernel is not built")
    buf = kernel.frame_buffer(16384)
    assert type(buf) is bytearray and len(buf) == 16384
    assert kernel.frame_buffer(0) == bytearray()
    with pytest.raises(ValueError):
        kernel.frame_buffer(-1)

"""The kernel's ``read_frames`` (h/iosend: a client connection's read on the plaintext socket in one compiled call)
== its reference ``BufferedFrameReader.read_frames`` with the socket's ``recv_into``: the same frames, bytes read,
end of stream, reader state and errors, whatever the frame sizes (empty, over the buffer, bad), the reads'
lengths, would-blocks and the limits on frames and bytes per call."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.network.transport.network_receive import (
    EMPTY_PAYLOAD,
    BufferedFrameReader,
    check_receive_size,
    new_receive,
)
from pykafka_client.protocol.records import _native

pytestmark = pytest.mark.skipif(not _native.native_available(), reason="the compiled record kernel is not built")


class _Socket:
    """A socket's recv_into over ``data``: each call takes at most the next scripted length; with nothing left it
    would block (BlockingIOError), or returns 0 once ``closed``."""

    def __init__(self, data: bytes, reads: list[int], closed: bool) -> None:
        self.data = data
        self.pos = 0
        self.reads = list(reads)
        self.closed = closed

    def recv_into(self, view: memoryview) -> int:
        left = len(self.data) - self.pos
        if left == 0:
            if self.closed:
                return 0
            raise BlockingIOError
        n = min(len(view), left, self.reads.pop(0) if self.reads else left)
        view[:n] = self.data[self.pos : self.pos + n]
        self.pos += n
        return n


def _state(r: BufferedFrameReader) -> tuple[Any, ...]:
    payload = r.payload
    return (r.start, r.end, bytes(r.buf[r.start : r.end]), None if payload is None else bytes(payload),
            r.payload_read)


def _run(native: bool, data: bytes, reads: list[int], closed: bool, buffer_size: int, max_size: int,
         calls: list[tuple[int, int]]) -> list[Any]:
    reader = BufferedFrameReader("node-1", max_size, buffer_size)
    sock = _Socket(data, reads, closed)
    kernel = _native.loaded_kernel()
    assert kernel is not None
    out: list[Any] = []
    for max_receives, max_bytes in calls:
        try:
            if native:
                frames, n, ended = kernel.read_frames(
                    reader, sock.recv_into, max_receives, max_bytes, new_receive, check_receive_size, EMPTY_PAYLOAD
                )
            else:
                frames, n, ended = reader.read_frames(None, max_receives, max_bytes, sock.recv_into)  # type: ignore[arg-type]
        except Exception as e:  # the same error either way
            out.append((type(e), str(e), _state(reader), sock.pos))
            break
        out.append(([(f.source, bytes(f.payload), f.extra) for f in frames], n, ended, _state(reader), sock.pos))
    return out


_frame = st.one_of(
    st.binary(max_size=40),
    st.integers(0, 300).map(lambda n: bytes(range(256)) * (n // 256) + bytes(range(n % 256))),
)


@settings(max_examples=300, deadline=None)
@given(
    frames=st.lists(_frame, max_size=8),
    bad=st.one_of(st.none(), st.sampled_from([-1, -(2**31), 10_000])),
    reads=st.lists(st.integers(1, 120), max_size=20),
    closed=st.booleans(),
    buffer_size=st.sampled_from([4, 7, 64, 65_536]),
    calls=st.lists(st.tuples(st.integers(1, 4), st.sampled_from([1, 50, 1 << 20])), min_size=1, max_size=12),
)
def test_read_frames_equals_the_reference(
    frames: list[bytes], bad: int | None, reads: list[int], closed: bool, buffer_size: int,
    calls: list[tuple[int, int]],
) -> None:
    data = b"".join(struct.pack(">i", len(f)) + f for f in frames)
    if bad is not None:
        data += struct.pack(">i", bad) + b"x" * 3
    max_size = 1000
    assert _run(True, data, reads, closed, buffer_size, max_size, calls) == _run(
        False, data, reads, closed, buffer_size, max_size, calls
    )


def test_a_recv_into_that_keeps_its_view_cannot_write_into_the_reader_after_the_call() -> None:
    kept: list[memoryview] = []

    def recv_into(view: memoryview) -> int:
        kept.append(view)
        view[:5] = struct.pack(">i", 1) + b"a"
        return 5

    reader = BufferedFrameReader("n", 100, 64)
    kernel = _native.loaded_kernel()
    assert kernel is not None
    frames, n, ended = kernel.read_frames(reader, recv_into, 16, 1 << 20, new_receive, check_receive_size, EMPTY_PAYLOAD)
    assert [bytes(f.payload) for f in frames] == [b"a"] and n == 5 and not ended
    with pytest.raises(ValueError):
        kept[0][0] = 1  # released

"""An encoded frame's bytes in memory, for tests that hold a request or response the encoders returned as chunks."""

from __future__ import annotations

from collections.abc import Iterable

from pykafka_client.protocol.types.primitives import Chunk, FileRegion


def chunk_bytes(chunk: Chunk) -> bytes:
    """One chunk's bytes (a ``FileRegion`` chunk has none in memory: the test's mistake)."""
    assert not isinstance(chunk, FileRegion), "a file region in a frame the test holds in memory"
    return bytes(chunk)


def frame_bytes(chunks: Iterable[Chunk]) -> bytes:
    """The chunks joined."""
    return b"".join(chunk_bytes(c) for c in chunks)


def sent_bytes(buffers: Iterable[object]) -> bytes:
    """A send's buffers joined (typed ``object`` where the send holds them): each must be bytes-like in memory."""
    out = bytearray()
    for b in buffers:
        assert isinstance(b, (bytes, bytearray, memoryview)), f"a {type(b).__name__} in a send the test holds in memory"
        out += b
    return bytes(out)

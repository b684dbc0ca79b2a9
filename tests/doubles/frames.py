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

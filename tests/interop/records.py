"""The records the interop tests produce and expect back, byte for byte."""

from __future__ import annotations

from dataclasses import dataclass

CODECS = ("gzip", "snappy", "lz4", "zstd")
ACKS = (0, 1, -1)
BASE_TS = 1_700_000_000_000


@dataclass(frozen=True)
class Rec:
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    timestamp: int


def make_records(n: int, tag: str) -> list[Rec]:
    """Keys, null keys, an empty value, a null value, binary bytes, headers (also repeated names), timestamps."""
    out = []
    for i in range(n):
        key = None if i % 3 == 0 else f"key-{tag}-{i}".encode()
        if i == 4:
            value: bytes | None = b""
        elif i == 5:
            value = None
        else:
            value = (f"value-{tag}-{i}-".encode() + bytes(range(i % 256))) * (1 + i % 4)
        headers: tuple[tuple[str, bytes], ...] = ()
        if i % 2:
            headers = (("h1", f"x{i}".encode()), ("h2", b"\x00\xff"))
        if i % 7 == 3:
            headers = (("dup", b"a"), ("dup", b"b"))
        out.append(Rec(key, value, headers, BASE_TS + i * 1000))
    return out

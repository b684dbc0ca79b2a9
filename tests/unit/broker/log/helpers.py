"""Builders for the log tests: real v2 batches from MemoryRecordsBuilder; a log's files read back."""

from __future__ import annotations

import os

from mini_broker.log import Log
from pykafka_client.protocol.records.builder import MemoryRecordsBuilder
from pykafka_client.protocol.records.memory_records import MemoryRecords
from pykafka_client.protocol.records.record import Record


def batch(values: list[bytes], timestamp: int = 1_700_000_000_000, timestamps: list[int] | None = None) -> bytes:
    """One uncompressed batch with base offset 0 (the log assigns the real one)."""
    builder = MemoryRecordsBuilder(write_limit=1 << 24)
    for i, value in enumerate(values):
        ts = timestamps[i] if timestamps is not None else timestamp
        assert builder.append(ts, None, value)
    return builder.build()


def records_of(data: bytes) -> list[Record]:
    return list(MemoryRecords(data, check_crcs=True).records())


def values_of(data: bytes) -> list[tuple[int, bytes | None]]:
    return [(r.offset, r.value) for r in records_of(data)]


def log_files(lg: Log) -> dict[str, bytes]:
    """The log's segment, offset index and time index files by name, after a flush (what two logs given the same
    appends must agree on byte for byte)."""
    lg.flush()
    out = {}
    for name in sorted(os.listdir(lg.dir_path)):
        if name.endswith((".log", ".index", ".timeindex")):
            with open(os.path.join(lg.dir_path, name), "rb") as f:
                out[name] = f.read()
    return out

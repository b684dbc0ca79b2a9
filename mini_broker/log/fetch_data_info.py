"""Results of log appends and reads (Java LogAppendInfo, FetchDataInfo, TimestampAndOffset)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import NamedTuple

from mini_broker.log.log_offset_metadata import LogOffsetMetadata
from pykafka_client.protocol.types import FileRegion

NO_TIMESTAMP = -1


class LogAppendInfo(NamedTuple):
    """What an append did (a named tuple: one per partition of every Produce, cheaper than a frozen dataclass). ``first_offset == -1`` for an empty append (nothing written).

    ``max_timestamp``/``offset_of_max_timestamp`` are over the appended batches (the batch's last offset
    stands for the record); ``log_append_time`` is the broker time stamped into LogAppendTime batches,
    else -1. ``num_records`` counts records, ``shallow_count`` batches; ``valid_bytes`` is the size
    written.
    """

    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time: int
    log_start_offset: int
    num_records: int
    shallow_count: int
    valid_bytes: int

    @property
    def num_messages(self) -> int:
        return self.num_records


@dataclass(frozen=True, slots=True)
class FetchDataInfo:
    """A read: where it starts and the stored bytes, as a file range (``records`` None when empty).

    ``records`` is a :class:`FileRegion` over the segment file: hand it to ``Writer.write_records`` for
    a zero-copy ``sendfile``; :meth:`to_bytes` copies the bytes when they are needed in memory. The
    range starts at the batch holding the fetch offset (it may hold earlier offsets, which clients skip)
    and may end inside a batch (clients ignore a partial trailing batch).
    """

    fetch_offset_metadata: LogOffsetMetadata
    records: FileRegion | None = None
    first_entry_incomplete: bool = False

    @property
    def size(self) -> int:
        return 0 if self.records is None else self.records.length

    def to_bytes(self) -> bytes:
        region = self.records
        if region is None or region.length == 0:
            return b""
        fd = region.file if isinstance(region.file, int) else region.file.fileno()
        out = bytearray()
        while len(out) < region.length:
            chunk = os.pread(fd, region.length - len(out), region.offset + len(out))
            if not chunk:
                break
            out += chunk
        return bytes(out)


@dataclass(frozen=True, slots=True)
class TimestampAndOffset:
    """A ListOffsets answer: the record's timestamp (-1 for the special queries) and offset."""

    timestamp: int
    offset: int
    leader_epoch: int | None = None

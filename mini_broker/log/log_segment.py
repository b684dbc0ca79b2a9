"""One segment of a partition log (Java LogSegment): ``<base offset>.log`` plus its indexes (offset, time, and
the aborted-transaction index ``.txnindex``, created with its first entry).

File names are the base offset zero-padded to 20 digits (``00000000000000000042.log``, ``.index``,
``.timeindex``). The ``.log`` file is the exact concatenation of the stored v2 batches.

Writes go to the end of the file under the owning log's lock; :attr:`size` moves only after the bytes
are written, so a reader bounded by a size it read earlier never sees a partial batch of an append in
progress. Reads use ``os.pread`` and never move a file position; a fetch can also send the bytes
straight from the file (:class:`FileRegion`, for ``sendfile``).

A deleted segment's files are unlinked at once, but its ``.log`` file object stays open until
:meth:`close`, so in-flight :class:`FileRegion`\\ s of it stay readable (the log closes it after
``file.delete.delay.ms``).
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple

from mini_broker.log.abstract_index import CorruptIndexError
from mini_broker.log.log_config import LogConfig
from mini_broker.log.log_offset_metadata import LogOffsetMetadata
from mini_broker.log.offset_index import OffsetIndex
from mini_broker.log.segment_tail import new_segment_tail
from mini_broker.log.time_index import NO_TIMESTAMP, TimeIndex
from mini_broker.log.transaction_index import TXN_INDEX_FILE_SUFFIX, TransactionIndex
from pykafka_client.protocol.records.batch_ops import BatchIterator
from pykafka_client.protocol.records.default_record_batch import DefaultRecordBatch
from pykafka_client.protocol.types import FileRegion
from pykafka_client.utils.time import Time

LOG_FILE_SUFFIX: Final = ".log"
INDEX_FILE_SUFFIX: Final = ".index"
TIME_INDEX_FILE_SUFFIX: Final = ".timeindex"

# Offset, length, epoch, magic, crc, attributes, last offset delta, base timestamp, max timestamp.
_HEADER = struct.Struct(">qiibIhiqq")
_HEADER_SIZE: Final = _HEADER.size  # 43
_INT32_MAX: Final = 2**31 - 1
_RECOVERY_CHUNK: Final = 8 << 20
_SCAN_CHUNK: Final = 16 << 10
#: batches at least this large are scanned header by header (a chunk would hold few headers anyway)
_SMALL_BATCH: Final = 4 << 10


def file_name_prefix(offset: int) -> str:
    return f"{offset:020d}"


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The header fields of a stored batch that the log needs, and where the batch is."""

    position: int
    base_offset: int
    last_offset: int
    size: int
    max_timestamp: int


class AppendedBatch(NamedTuple):
    """What :meth:`LogSegment.append` needs to know of each batch it writes (a named tuple: one per batch
    appended)."""

    relative_position: int
    last_offset: int
    max_timestamp: int
    size: int


@dataclass(frozen=True, slots=True)
class SegmentRead:
    """A read of one segment: where it starts and the byte range to send."""

    fetch_offset_metadata: LogOffsetMetadata
    region: FileRegion
    first_batch_size: int


class LogSegment:
    """A ``.log`` file and its offset and time indexes."""

    def __init__(
        self, dir_path: str, base_offset: int, config: LogConfig, time: Time, file_suffix: str = ""
    ) -> None:
        """``file_suffix`` (``".cleaned"``) names every file ``<base>.log<suffix>`` etc.: a segment the log
        cleaner writes before it swaps it in (:meth:`change_file_suffixes`)."""
        self.dir_path = dir_path
        self.base_offset = base_offset
        #: Random per segment in [0, segment.jitter.ms), so that segments of many partitions do not roll at once.
        self.roll_jitter_ms = random.randrange(config.segment_jitter_ms) if config.segment_jitter_ms > 0 else 0
        self._time = time
        self.file_suffix = file_suffix
        prefix = os.path.join(dir_path, file_name_prefix(base_offset))
        self.log_path = prefix + LOG_FILE_SUFFIX + file_suffix
        # Append mode: every write lands at the end; reads are positional (pread).
        self._file: io.FileIO = io.FileIO(self.log_path, "a+")
        self._fd = self._file.fileno()
        #: False when an index file was missing at open (the log then rebuilds the indexes).
        self.index_files_existed = os.path.exists(prefix + INDEX_FILE_SUFFIX + file_suffix) and os.path.exists(
            prefix + TIME_INDEX_FILE_SUFFIX + file_suffix
        )
        self.offset_index = OffsetIndex(prefix + INDEX_FILE_SUFFIX + file_suffix, base_offset, config.max_index_size)
        self.time_index = TimeIndex(prefix + TIME_INDEX_FILE_SUFFIX + file_suffix, base_offset, config.max_index_size)
        self.txn_index = TransactionIndex(prefix + TXN_INDEX_FILE_SUFFIX + file_suffix, base_offset)
        #: the append state (size, max timestamp, index interval count, index room, the age's base timestamp; see
        #: :mod:`mini_broker.log.segment_tail`): the kernel's when it is loaded, whose ``append_one`` is the log's
        #: common append of one batch. Its ``index_room`` is at most the room left in either index
        #: (:meth:`_index_room_left`): each index append of this segment takes one, so :meth:`should_roll` asks the
        #: indexes only once it reaches 0.
        self.tail = new_segment_tail(self._fd, base_offset, self.offset_index, self.time_index)
        self.config = config
        tail = self.tail
        tail.size = os.fstat(self._fd).st_size
        self.created_ms = time.milliseconds()
        last_ts, last_ts_offset = self.time_index.last_entry()
        if last_ts >= 0:
            tail.max_timestamp_so_far, tail.offset_of_max_timestamp_so_far = last_ts, last_ts_offset
        self._index_room_left()
        self.deleted = False

    # -- properties -----------------------------------------------------------------------------------
    @property
    def file(self) -> io.FileIO:
        return self._file

    @property
    def size(self) -> int:
        """The bytes of the whole batches written (the file's size once they are)."""
        return self.tail.size

    @property
    def max_timestamp_so_far(self) -> int:
        """The largest batch max timestamp of the segment (-1: none)."""
        return self.tail.max_timestamp_so_far

    @property
    def offset_of_max_timestamp_so_far(self) -> int:
        """The last offset of the first batch with :attr:`max_timestamp_so_far` (the base offset when none)."""
        return self.tail.offset_of_max_timestamp_so_far

    def largest_timestamp(self) -> int:
        """The segment's max record timestamp, or the file's modification time when it has none."""
        if self.max_timestamp_so_far >= 0:
            return self.max_timestamp_so_far
        try:
            return int(os.stat(self.log_path).st_mtime * 1000)
        except FileNotFoundError:
            return self._time.milliseconds()

    @property
    def config(self) -> LogConfig:
        return self._config

    @config.setter
    def config(self, config: LogConfig) -> None:
        self._config = config
        # read on every append (should_roll); computed from the config's cleanup policy, so kept per config
        self._max_segment_ms = config.max_segment_ms
        self.tail.configure(config.segment_bytes, self._max_segment_ms - self.roll_jitter_ms, config.index_interval_bytes)

    def can_convert_to_relative_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= _INT32_MAX

    def should_roll(self, messages_size: int, max_timestamp_in_messages: int, max_offset: int, now_ms: int) -> bool:
        """Kafka's roll rule: size, age (``segment.ms`` minus this segment's jitter), a full index, or
        offsets beyond int32 from the base offset."""
        tail = self.tail
        size = tail.size
        if size > self._config.segment_bytes - messages_size:
            return True
        if size > 0:
            based = tail.rolling_based_timestamp
            # (time_waited_for_roll's common case, a segment aged by its records' timestamps, without its frame)
            waited = (max_timestamp_in_messages - based if based is not None and based >= 0
                      else self.time_waited_for_roll(now_ms, max_timestamp_in_messages))
            if waited > self._max_segment_ms - self.roll_jitter_ms:
                return True
        # (an index is full only once the count of appends left reached 0: then the indexes are asked, as Kafka's
        # offsetIndex.isFull || timeIndex.isFull)
        return (tail.index_room <= 0 and self._index_room_left() <= 0) or not 0 <= max_offset - self.base_offset <= _INT32_MAX

    def _index_room_left(self) -> int:
        """The entries that still fit in both indexes (0 or less: one is full), kept as the tail's ``index_room``."""
        offsets, times = self.offset_index.room(), self.time_index.room()
        room = self.tail.index_room = offsets if offsets < times else times
        return room

    def time_waited_for_roll(self, now_ms: int, message_timestamp: int) -> int:
        """Age of the segment: by record timestamps once it holds any, else by wall time since creation."""
        tail = self.tail
        if tail.rolling_based_timestamp is None and tail.size > 0:
            first = self.read_header(0, tail.size)
            if first is not None:
                tail.rolling_based_timestamp = first.max_timestamp
        based = tail.rolling_based_timestamp
        if based is not None and based >= 0:
            return message_timestamp - based
        return now_ms - self.created_ms

    # -- writing (under the log lock) -----------------------------------------------------------------
    def append(self, data: bytes | bytearray | memoryview, batches: Sequence[AppendedBatch]) -> None:
        """Write ``data`` (the batches, offsets already assigned) at the end and index it."""
        tail = self.tail
        physical = tail.size
        if physical == 0 and batches:
            tail.rolling_based_timestamp = batches[0].max_timestamp
        size = len(data)
        try:
            written = os.write(self._fd, data)
            if written < size:
                view = memoryview(data)
                while written < size:
                    written += os.write(self._fd, view[written:])
        except BaseException:  # an OSError, or a signal handler's exception between two writes
            self.discard_partial_write(physical)
            raise
        for relative_position, last_offset, max_timestamp, batch_size in batches:
            self._index_batch(physical + relative_position, last_offset, max_timestamp, batch_size)
        tail.size = physical + size

    def discard_partial_write(self, physical: int) -> None:
        """After a write that failed part-way (ENOSPC, EIO, the file size limit): cut the file back to ``physical``,
        the end of the last whole batch, so that no byte of the failed batch stays behind and the next append (the
        file is opened O_APPEND) lands right after the last whole batch. A failure to cut is left to the error the
        write raised (the caller raises it)."""
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, physical)

    def _index_batch(self, position: int, last_offset: int, max_timestamp: int, size: int) -> None:
        tail = self.tail
        if max_timestamp > tail.max_timestamp_so_far:
            tail.max_timestamp_so_far = max_timestamp
            tail.offset_of_max_timestamp_so_far = last_offset
        if tail.bytes_since_last_index_entry > self._config.index_interval_bytes:
            self.offset_index.append(last_offset, position)
            self.time_index.maybe_append(tail.max_timestamp_so_far, tail.offset_of_max_timestamp_so_far)
            tail.index_room -= 1  # (each index took at most one entry)
            tail.bytes_since_last_index_entry = 0
        tail.bytes_since_last_index_entry += size

    def on_become_inactive(self) -> None:
        """The segment stops being the active one: record its max timestamp in the time index and fsync."""
        tail = self.tail
        if tail.max_timestamp_so_far >= 0:
            self.time_index.maybe_append(
                tail.max_timestamp_so_far, tail.offset_of_max_timestamp_so_far, skip_full_check=True
            )
            tail.index_room -= 1
        self.flush()

    def flush(self) -> None:
        os.fsync(self._fd)
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    # -- reading (any thread) -------------------------------------------------------------------------
    def read_header(self, position: int, end: int) -> BatchHeader | None:
        """The header of the batch at ``position`` if a whole batch fits before ``end``."""
        if end - position < _HEADER_SIZE:
            return None
        raw = os.pread(self._fd, _HEADER_SIZE, position)
        if len(raw) < _HEADER_SIZE:
            return None
        base_offset, length, _, _, _, _, last_delta, _, max_ts = _HEADER.unpack(raw)
        size = length + 12
        if length <= 0 or position + size > end:
            return None
        return BatchHeader(position, base_offset, base_offset + last_delta, size, max_ts)

    def iter_headers(self, start_position: int = 0, end: int | None = None) -> Iterator[BatchHeader]:
        """Headers of the whole batches from ``start_position`` up to ``end`` (default: the current size).

        Stops at the first batch that does not fit before ``end``. Reads only what it needs: a header's
        bytes while batches are large (a Fetch looking up its start batch copies ~60 bytes, not a chunk of
        records), chunks of ~16 KiB while they are small (one ``pread`` for many headers, not one per batch).
        """
        limit = self.size if end is None else end
        position = start_position
        buf = b""
        buf_start = position
        want = _HEADER_SIZE  # until a small batch is seen
        while limit - position >= _HEADER_SIZE:
            rel = position - buf_start
            if rel < 0 or rel + _HEADER_SIZE > len(buf):
                buf = os.pread(self._fd, min(want, limit - position), position)
                buf_start, rel = position, 0
                if len(buf) < _HEADER_SIZE:
                    return
            base_offset, length, _, _, _, _, last_delta, _, max_ts = _HEADER.unpack_from(buf, rel)
            size = length + 12
            if length <= 0 or position + size > limit:
                return
            want = _HEADER_SIZE if size >= _SMALL_BATCH else _SCAN_CHUNK
            yield BatchHeader(position, base_offset, base_offset + last_delta, size, max_ts)
            position += size

    def iter_batch_epochs(self) -> Iterator[tuple[int, int]]:
        """(base offset, partition leader epoch) of every whole batch (for the leader epoch cache)."""
        for header in self.iter_headers():
            raw = os.pread(self._fd, 4, header.position + 12)
            if len(raw) == 4:
                yield header.base_offset, struct.unpack(">i", raw)[0]

    def translate_offset(self, offset: int, end: int | None = None) -> BatchHeader | None:
        """The first batch whose last offset is >= ``offset`` (starting from the index), within ``end``."""
        _, position = self.offset_index.lookup(offset)
        for header in self.iter_headers(position, end):
            if header.last_offset >= offset:
                return header
        return None

    def read(self, start_offset: int, max_size: int, max_position: int, min_one_message: bool) -> SegmentRead | None:
        """Bytes from the batch holding ``start_offset`` up to ``max_size`` (and ``max_position``).

        With ``min_one_message`` the first batch is returned whole even if larger than ``max_size``.
        The range may end inside a batch (clients ignore a partial trailing batch). None when the
        segment holds no batch at or past ``start_offset`` below ``max_position``.
        """
        header = self.translate_offset(start_offset, max_position)
        if header is None:
            return None
        metadata = LogOffsetMetadata(start_offset, self.base_offset, header.position)
        adjusted_max = max(max_size, header.size) if min_one_message else max_size
        length = max(0, min(max_position - header.position, adjusted_max))
        return SegmentRead(metadata, FileRegion(self._file, header.position, length), header.size)

    def read_bytes(self, position: int, length: int) -> bytes:
        out = bytearray()
        while len(out) < length:
            chunk = os.pread(self._fd, length - len(out), position + len(out))
            if not chunk:
                break
            out += chunk
        return bytes(out)

    def read_batch(self, header: BatchHeader) -> DefaultRecordBatch:
        return DefaultRecordBatch(self.read_bytes(header.position, header.size), 0)

    def next_offset(self) -> int:
        """The offset after the last batch (the base offset when empty)."""
        _, position = self.offset_index.lookup(2**63 - 1)
        last: BatchHeader | None = None
        for last in self.iter_headers(position):  # noqa: B007 - we want the last one
            pass
        return self.base_offset if last is None else last.last_offset + 1

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int) -> tuple[int, int] | None:
        """(timestamp, offset) of the first record at or after ``starting_offset`` with timestamp >= target."""
        _, indexed_offset = self.time_index.lookup(timestamp)
        _, position = self.offset_index.lookup(max(indexed_offset, starting_offset))
        for header in self.iter_headers(position):
            if header.max_timestamp < timestamp or header.last_offset < starting_offset:
                continue
            for record in self.read_batch(header).records():
                if record.timestamp >= timestamp and record.offset >= starting_offset:
                    return record.timestamp, record.offset
        return None

    # -- recovery -------------------------------------------------------------------------------------
    def sanity_check_indexes(self, next_offset: int) -> None:
        """Raise ``CorruptIndexError`` when an index cannot be trusted (``next_offset``: after the last batch)."""
        self.offset_index.sanity_check(max(self.size, 1))
        if self.offset_index.entries() and self.offset_index.last_offset() >= next_offset:
            raise CorruptIndexError(f"{self.offset_index.path}: indexes offsets past the end of the segment")
        self.time_index.sanity_check(next_offset - 1)

    def recover(self) -> int:
        """Re-validate every batch, rebuild both indexes, and cut the file after the last valid batch.

        A batch is valid when :class:`BatchIterator` accepts it (complete, CRC ok) and its offsets lie
        in this segment and increase. The file is read in chunks (a batch larger than a chunk gets a
        chunk of its own size). Returns the number of bytes truncated.
        """
        self.offset_index.reset()
        self.time_index.reset()
        self._index_room_left()
        tail = self.tail
        tail.max_timestamp_so_far = NO_TIMESTAMP
        tail.offset_of_max_timestamp_so_far = self.base_offset
        tail.bytes_since_last_index_entry = 0
        tail.rolling_based_timestamp = None
        size = os.fstat(self._fd).st_size
        valid = 0
        next_expected = self.base_offset
        chunk_size = _RECOVERY_CHUNK
        while valid < size:
            data = self.read_bytes(valid, min(size - valid, chunk_size))
            chunk_start = valid
            it = BatchIterator(data, validate=True)
            bad = False
            for batch in it:
                if batch.base_offset < next_expected or not self.can_convert_to_relative_offset(batch.last_offset):
                    bad = True
                    break
                position = chunk_start + batch.position
                self._index_batch(position, batch.last_offset, batch.max_timestamp, batch.size_in_bytes)
                next_expected = batch.last_offset + 1
                valid = position + batch.size_in_bytes
            if bad or it.error is not None or valid >= size or chunk_start + len(data) >= size:
                break
            chunk_size = _RECOVERY_CHUNK
            if valid == chunk_start:
                # A batch larger than the chunk: read exactly that batch next time.
                (length,) = struct.unpack(">i", data[8:12]) if len(data) >= 12 else (-1,)
                if length <= 0 or length + 12 <= len(data):
                    break
                chunk_size = length + 12
        truncated = size - valid
        if truncated:
            os.ftruncate(self._fd, valid)
        tail.size = valid
        # aborted transactions whose marker was cut off go too (the log re-adds those it replays)
        self.txn_index.truncate_to(next_expected)
        return truncated

    # -- life cycle -----------------------------------------------------------------------------------
    def close(self) -> None:
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()
        # Forget the descriptor number first: a read racing with close gets EBADF, never another file
        # that reused the number.
        self._fd = -1
        self.tail.close()
        if not self._file.closed:
            self._file.close()

    def change_file_suffixes(self, new_suffix: str) -> None:
        """Rename every file of the segment from its current suffix to ``new_suffix`` (open descriptors stay
        valid: a rename does not touch them). The txn index file exists only once it has an entry."""
        old = self.file_suffix
        if old == new_suffix:
            return

        def renamed(path: str) -> str:
            return path[: len(path) - len(old)] + new_suffix if old else path + new_suffix

        for holder in (self.offset_index, self.time_index, self.txn_index):
            target = renamed(holder.path)
            if os.path.exists(holder.path):
                os.replace(holder.path, target)
            holder.path = target
        target = renamed(self.log_path)
        os.replace(self.log_path, target)
        self.log_path = target
        self.file_suffix = new_suffix

    def last_modified_ms(self) -> int:
        """The ``.log`` file's modification time (of the open file: still known after the file was deleted)."""
        try:
            return int(os.fstat(self._fd).st_mtime * 1000)
        except OSError:
            return self._time.milliseconds()

    def set_last_modified_ms(self, ms: int) -> None:
        """Set the ``.log`` file's modification time (a cleaned segment keeps its source's, as Kafka)."""
        os.utime(self.log_path, ns=(ms * 1_000_000, ms * 1_000_000))

    def delete(self) -> None:
        """Unlink the files; the ``.log`` stays open for in-flight reads until :meth:`close`."""
        self.deleted = True
        self.offset_index.delete()
        self.time_index.delete()
        self.txn_index.delete()
        try:
            os.unlink(self.log_path)
        except FileNotFoundError:
            pass

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size})"

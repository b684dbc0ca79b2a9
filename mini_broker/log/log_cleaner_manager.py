"""Which compacted log to clean next, and how far each one is clean (Java ``LogCleanerManager``).

Each data directory holds ``cleaner-offset-checkpoint`` (the format of
:class:`~mini_broker.log.checkpoint.OffsetCheckpointFile`): per compacted partition, the first offset not yet
cleaned (the *first dirty offset*). Below it the log holds at most one record per key among the segments the
cleaner rewrote; from it to the *first uncleanable offset* lies the dirty section the next clean dedupes.

The first uncleanable offset is the smallest of: the active segment's base offset (the active segment is
never cleaned), the last stable offset (open transactions are not cleaned; it is at most the high watermark),
and, with ``min.compaction.lag.ms`` > 0, the base offset of the first dirty segment holding a record newer
than the lag. The *dirty ratio* is the bytes of the segments from the first dirty offset to the first
uncleanable one over the bytes of the whole cleanable part (from the log start). :meth:`grab_filthiest_log`
picks, among compacted logs not being cleaned, those over ``min.cleanable.dirty.ratio`` or due because their
first dirty record is older than ``max.compaction.lag.ms``, and takes the one with the highest ratio.

A checkpoint below the log start offset (retention or DeleteRecords moved it) or past the log end
(truncation) counts from the log start: the whole log is dirty again.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from mini_broker.log.checkpoint import OffsetCheckpointFile
from mini_broker.log.log_segment import LogSegment
from mini_broker.log.unified_log import Log

_log = logging.getLogger(__name__)

CLEANER_OFFSET_CHECKPOINT_FILE: Final = "cleaner-offset-checkpoint"


@dataclass(frozen=True, slots=True)
class LogToClean:
    """A compacted log and its cleanable range, as measured at one moment."""

    log: Log
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    need_compaction_now: bool

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0


def first_uncleanable_offset(log: Log, first_dirty: int, now_ms: int) -> int:
    """See the module docstring."""
    segments = log.segments
    candidates = [log.active_segment.base_offset, log.last_stable_offset]
    lag = log.config.min_compaction_lag_ms
    if lag > 0:
        for segment in _non_active_from(segments, first_dirty):
            if segment.largest_timestamp() > now_ms - lag:
                candidates.append(segment.base_offset)
                break
    return min(candidates)


def _non_active_from(segments: list[LogSegment], offset: int) -> list[LogSegment]:
    """The non-active segments holding offsets at or after ``offset``."""
    out: list[LogSegment] = []
    for i, segment in enumerate(segments[:-1]):
        if segments[i + 1].base_offset > offset:
            out.append(segment)
    return out


def measure(log: Log, checkpoint: int | None, now_ms: int) -> LogToClean:
    """The cleanable range of ``log`` given its checkpointed first dirty offset."""
    start = log.log_start_offset
    first_dirty = start if checkpoint is None or checkpoint < start or checkpoint > log.log_end_offset else checkpoint
    uncleanable = max(first_dirty, first_uncleanable_offset(log, first_dirty, now_ms))
    segments = log.segments
    clean_bytes = cleanable_bytes = 0
    for i, segment in enumerate(segments[:-1]):
        upper = segments[i + 1].base_offset
        if upper <= start:
            continue
        if upper <= first_dirty:
            clean_bytes += segment.size
        elif upper <= uncleanable:
            cleanable_bytes += segment.size
    need_now = False
    lag = log.config.max_compaction_lag_ms
    dirty = _non_active_from(segments, first_dirty)
    if dirty and lag > 0:
        first = dirty[0].read_header(0, dirty[0].size)
        first_ts = first.max_timestamp if first is not None and first.max_timestamp >= 0 else -1
        need_now = first_ts >= 0 and now_ms - first_ts > lag
    return LogToClean(log, first_dirty, uncleanable, clean_bytes, cleanable_bytes, need_now)


class LogCleanerManager:
    """Checkpoints and the choice of log (see the module docstring). Thread-safe."""

    def __init__(self, log_dirs: list[str], logs: Callable[[], Mapping[tuple[str, int], Log]]) -> None:
        self.log_dirs = log_dirs
        self._logs = logs
        self._lock = threading.Lock()
        self._in_progress: set[tuple[str, int]] = set()
        self._uncleanable: set[tuple[str, int]] = set()
        #: per log, the latest delete horizon its last clean wrote: once passed, the log is cleaned again even
        #: without dirty data, to drop its tombstones and markers (KIP-534)
        self._delete_horizons: dict[tuple[str, int], int] = {}
        self._checkpoints: dict[str, OffsetCheckpointFile] = {
            d: OffsetCheckpointFile(os.path.join(d, CLEANER_OFFSET_CHECKPOINT_FILE)) for d in log_dirs
        }
        self._offsets: dict[str, dict[tuple[str, int], int]] = {d: cp.read() for d, cp in self._checkpoints.items()}
        #: the ratio of the last log chosen (the max dirty ratio gauge of Kafka)
        self.max_dirty_percent = 0

    def _dir_of(self, log: Log) -> str:
        parent = os.path.dirname(os.path.normpath(log.dir_path))
        return parent if parent in self._offsets else self.log_dirs[0]

    def checkpoint_of(self, log: Log) -> int | None:
        with self._lock:
            return self._offsets[self._dir_of(log)].get((log.topic, log.partition))

    def all_checkpoints(self) -> dict[tuple[str, int], int]:
        with self._lock:
            out: dict[tuple[str, int], int] = {}
            for offsets in self._offsets.values():
                out.update(offsets)
            return out

    def grab_filthiest_log(self, now_ms: int) -> LogToClean | None:
        """The compacted log most in need of cleaning, marked in progress (release it with :meth:`done_cleaning`),
        or None when no log qualifies."""
        with self._lock:
            best: LogToClean | None = None
            for tp, log in self._logs().items():
                if not log.config.compact or tp in self._in_progress or tp in self._uncleanable:
                    continue
                try:
                    candidate = measure(log, self._offsets[self._dir_of(log)].get(tp), now_ms)
                except OSError:
                    _log.exception("measuring the dirty section of %r failed", log)
                    continue
                eligible = candidate.cleanable_bytes > 0 and (
                    candidate.need_compaction_now or candidate.cleanable_ratio > log.config.min_cleanable_ratio
                )
                horizon = self._delete_horizons.get(tp, -1)
                if not eligible and 0 <= horizon <= now_ms and candidate.total_bytes > 0:
                    eligible = True
                    self._delete_horizons.pop(tp, None)
                if eligible and (best is None or candidate.cleanable_ratio > best.cleanable_ratio):
                    best = candidate
            if best is None:
                return None
            self.max_dirty_percent = int(100 * best.cleanable_ratio)
            self._in_progress.add((best.log.topic, best.log.partition))
            return best

    def done_cleaning(self, log: Log, end_offset: int | None, latest_delete_horizon_ms: int = -1) -> None:
        """Release ``log``; ``end_offset`` (None after a failed or aborted clean) becomes its checkpoint, unless
        the log was deleted or replaced meanwhile, and never past the log's end (a truncation after the swap)."""
        current = end_offset is not None and self.is_current(log)  # outside the lock: it reads the log table
        with self._lock:
            tp = (log.topic, log.partition)
            self._in_progress.discard(tp)
            if end_offset is None or not current:
                return
            end_offset = min(end_offset, log.log_end_offset)
            if latest_delete_horizon_ms >= 0:
                self._delete_horizons[tp] = latest_delete_horizon_ms
            log_dir = self._dir_of(log)
            self._offsets[log_dir][tp] = end_offset
            self._write(log_dir)

    def is_cleaning(self, topic: str, partition: int) -> bool:
        with self._lock:
            return (topic, partition) in self._in_progress

    def is_current(self, log: Log) -> bool:
        """``log`` is still the broker's log of its partition (not replaced by a truncation or deleted)."""
        return self._logs().get((log.topic, log.partition)) is log

    def uncleanable_count(self) -> int:
        with self._lock:
            return len(self._uncleanable)

    def mark_uncleanable(self, log: Log) -> None:
        """A clean of ``log`` failed: skip it until it is truncated or deleted (or the broker restarts)."""
        with self._lock:
            self._uncleanable.add((log.topic, log.partition))

    def truncate_checkpoint(self, log: Log, offset: int) -> None:
        """The log was cut at ``offset``: a checkpoint past it comes down to it (Kafka's ``maybeTruncateCheckpoint``)."""
        with self._lock:
            log_dir = self._dir_of(log)
            tp = (log.topic, log.partition)
            self._uncleanable.discard(tp)
            current = self._offsets[log_dir].get(tp)
            if current is not None and current > offset:
                self._offsets[log_dir][tp] = offset
                self._write(log_dir)

    def remove_checkpoint(self, log: Log) -> None:
        """The log was deleted or emptied: forget how far it was clean."""
        with self._lock:
            self._uncleanable.discard((log.topic, log.partition))
            log_dir = self._dir_of(log)
            if self._offsets[log_dir].pop((log.topic, log.partition), None) is not None:
                self._write(log_dir)

    def _write(self, log_dir: str) -> None:
        try:
            self._checkpoints[log_dir].write(self._offsets[log_dir])
        except OSError:
            _log.exception("writing %s in %s failed", CLEANER_OFFSET_CHECKPOINT_FILE, log_dir)

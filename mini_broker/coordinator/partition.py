"""A coordinator's internal partition as the coordinator sees it: the log it replays and the append it writes
through (Kafka: the runtime's ``PartitionWriter``).

* A single broker keeps the partition in its data dir (``local_log``): an append goes to the log, is fsynced when
  asked, and the high watermark follows the log end at once. A partition with nothing written yet has no
  directory: :func:`local_partitions` opens a log only when its directory exists or at its first append (Kafka
  creates 50 partitions per internal topic; a broker whose groups use a few pays for those few).
* A cluster broker serves a replicated partition while it leads it: :meth:`CoordinatorPartition.attach` (by the
  :class:`~mini_broker.coordinator.runtime.CoordinatorRuntime` on election) gives the partition's log and the
  leader's append (which stamps the leader epoch, leaves the high watermark to replication and raises
  NOT_LEADER_OR_FOLLOWER once this broker no longer leads); :meth:`~CoordinatorPartition.detach` (on resignation)
  makes every later append fail with NOT_LEADER_OR_FOLLOWER: a request that raced the resignation is refused,
  never silently dropped.

:meth:`CoordinatorPartition.batches` is the one replay reader: every batch from the log start to the log end as
it was when the replay began.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from typing import Final

from mini_broker.log.log_config import LogConfig
from mini_broker.log.unified_log import AppendOrigin, Log
from mini_broker.utils.atomic_file import atomic_write
from pykafka_client.errors import NotLeaderOrFollowerError
from pykafka_client.protocol.records import MemoryRecords, RecordBatch

_READ_CHUNK: Final = 1 << 20

#: The leader's append of a replicated partition (raises NOT_LEADER_OR_FOLLOWER once this broker no longer leads).
ReplicatedAppend = Callable[[bytes], None]


def _refuse(records: bytes) -> None:
    raise NotLeaderOrFollowerError("this broker no longer leads the coordinator's partition; find the coordinator "
                                   "again")


class CoordinatorPartition:
    """See the module docstring. ``local_log`` None and never attached: a coordinator that keeps nothing (unit
    tests); appends are then no-ops."""

    def __init__(self, local_log: Log | None, open_log: Callable[[], Log] | None = None) -> None:
        self._log = local_log
        #: opens the local log at the first append (a partition nothing was written to has no directory yet)
        self._open_log = open_log
        self._open_lock = threading.Lock()
        self._opened: list[Callable[[Log], None]] = []
        #: None: the log is the local one (appends go to it directly)
        self._replicated_append: ReplicatedAppend | None = None

    def when_opened(self, callback: Callable[[Log], None]) -> None:
        """``callback(log)`` now for an open local log, else once its first append opened it (a single broker's
        cleaner registers its coordinator logs so)."""
        if self._log is not None and self._replicated_append is None:
            callback(self._log)
        elif self._open_log is not None:
            self._opened.append(callback)

    @property
    def log(self) -> Log | None:
        """The partition's log, a lazily created local one opened now (None: nothing kept)."""
        return self._log if self._log is not None else self._open()

    @property
    def opened_log(self) -> Log | None:
        """The log if it exists (a local partition nothing was written to has none yet): what a replay reads."""
        return self._log

    @property
    def is_local(self) -> bool:
        """Whether the log is this broker's own (a single broker's; it is closed here)."""
        return self._log is not None and self._replicated_append is None

    def attach(self, log: Log, append: ReplicatedAppend) -> None:
        """Serve a replicated partition whose leader this broker became (the log stays the LogManager's)."""
        self._log, self._replicated_append = log, append

    def detach(self) -> None:
        """This broker resigned the partition's leadership: appends fail until the next :meth:`attach`."""
        if self._replicated_append is not None:
            self._replicated_append = _refuse

    def append(self, records: bytes, flush: bool = False) -> None:
        """Append one batch (raises as the log or the leader's append does). ``flush``: fsync a local log before
        returning (a replicated partition's durability is its ISR's)."""
        if self._replicated_append is not None:
            self._replicated_append(records)
            return
        log = self._log if self._log is not None else self._open()
        if log is None:
            return
        log.append(records, origin=AppendOrigin.COORDINATOR)
        if flush:
            log.flush()
        log.maybe_increment_high_watermark(log.log_end_offset)  # never lowered by a concurrent append

    def _open(self) -> Log | None:
        """Open a lazily created local log (None: this partition keeps nothing)."""
        with self._open_lock:
            if self._log is None and self._open_log is not None:
                self._log = self._open_log()
                self._open_log = None
                for callback in self._opened:
                    callback(self._log)
                self._opened.clear()
            return self._log

    def batches(self) -> Iterator[tuple[RecordBatch, int]]:
        """Replay: ``(batch, first offset to apply)`` for every batch from the log start to the log end as it is
        now (records of the first batch below the log start offset are not to be applied)."""
        log = self._log
        if log is None:
            return
        position, end = log.log_start_offset, log.log_end_offset
        while position < end:
            data = log.read(position, _READ_CHUNK).to_bytes()
            if not data:
                return
            start = position
            for batch in MemoryRecords(data).batches():
                if batch.last_offset < position:
                    continue
                yield batch, position
                position = batch.last_offset + 1
            if position == start:
                return

    def keyed_records(self) -> Iterator[tuple[int, bytes, bytes | None]]:
        """Replay: ``(offset, key, value)`` of every keyed record :meth:`batches` yields (a None value: a
        tombstone)."""
        for batch, first in self.batches():
            for record in batch.records():
                if record.offset >= first and record.key is not None:
                    yield (record.offset, bytes(record.key),
                           None if record.value is None else bytes(record.value))

    def close(self) -> None:
        """Close a local log (a replicated partition's log is the LogManager's)."""
        if self._log is not None and self._replicated_append is None:
            self._log.close()


#: The file of a single broker's coordinator directory that keeps its partition count.
PARTITION_COUNT_FILE: Final = "partition.count"


def local_partition_count(parent: str, topic: str, configured: int) -> int:
    """The partition count of a single broker's internal topic kept under ``parent``: the count it was created
    with (an existing topic keeps it, as on Kafka), 1 for a directory an older version wrote (one partition,
    ``<topic>-0``, and no count file), else ``configured``, which is then kept."""
    path = os.path.join(parent, PARTITION_COUNT_FILE)
    try:
        with open(path, encoding="ascii") as f:
            return max(1, int(f.read().strip()))
    except FileNotFoundError:
        pass
    except ValueError as e:
        raise ValueError(f"{path} does not hold a partition count ({e}); restore it or delete the directory "
                         f"{parent} (its state is then lost)") from None
    count = 1 if os.path.isdir(os.path.join(parent, f"{topic}-0")) else configured
    os.makedirs(parent, exist_ok=True)
    atomic_write(path, f"{count}\n".encode("ascii"))
    return count


def local_partitions(parent: str | None, topic: str, num_partitions: int, config: LogConfig,
                     open_log: Callable[[str, LogConfig], Log]) -> list[CoordinatorPartition]:
    """The partitions of a single broker's internal ``topic`` under ``parent`` (None: ``num_partitions`` that keep
    nothing, unit tests), as many as :func:`local_partition_count` says: a log is opened (``open_log(dir,
    config)``) when its directory exists, else at the partition's first append."""
    if parent is None:
        return [CoordinatorPartition(None) for _ in range(num_partitions)]
    out = []
    for p in range(local_partition_count(parent, topic, num_partitions)):
        path = os.path.join(parent, f"{topic}-{p}")
        if os.path.isdir(path):
            out.append(CoordinatorPartition(open_log(path, config)))
        else:
            out.append(CoordinatorPartition(None, lambda path=path: open_log(path, config)))  # type: ignore[misc]
    return out

"""The end of a partition log (:class:`~mini_broker.log.unified_log.Log` reads and moves it): the log end offset's
metadata, the high watermark and its cached metadata; and, for the common append, the active segment's append state,
the log's append checks and what the producer state lends it.

:class:`LogEnd` is the reference: plain fields, and an :meth:`LogEnd.append_client` that always declines, so that the
log's own methods (``Log.append`` and the steps it calls) do every append. :func:`new_log_end` gives the compiled
kernel's ``LogEnd`` when the kernel is loaded: the same fields in C memory, and an ``append_client`` that does a
client's common append of one batch in one call (the check, the producer's next-batch check, the offsets, the write
and the index entries, the LEO, the producer state's completion, the high watermark's raise), exactly as those methods,
declining whenever they could do anything else (several batches, a compressed or refused one, a new producer or a
sequence the general check judges, a roll, a full index, a flush, LogAppendTime, a transaction to forget).
"""

from __future__ import annotations

from typing import Any, Protocol

from crc32c import crc32c

from mini_broker.log.fetch_data_info import LogAppendInfo
from mini_broker.log.log_offset_metadata import LogOffsetMetadata
from mini_broker.log.log_validator import AppendChecks, ClientBatch
from mini_broker.log.segment_tail import SegmentTailApi
from mini_broker.producer_state.producer_state_entry import new_batch_metadata
from mini_broker.utils.positional_tuple import positional_tuple
from pykafka_client.protocol.records import _native


class LogEndApi(Protocol):
    """What a log reads and moves of its end."""

    #: the log end offset's metadata (replaced, never mutated: reads without the log's lock take it as a snapshot)
    end_metadata: LogOffsetMetadata
    high_watermark: int
    #: the high watermark's metadata when it was asked for at the current high watermark, else None
    hw_metadata: LogOffsetMetadata | None

    def set_tail(self, tail: SegmentTailApi, /) -> None:
        """The active segment's append state."""

    def close(self) -> None:
        """The log is closed (under its lock): :meth:`append_client` declines from now on, also where the close failed
        before it closed the segments' files (the caller's ``Log.append`` then raises)."""

    def configure(self, checks: AppendChecks, /) -> None:
        """The log's append checks."""

    def bind_producer_state(self, manager: Any, producers: dict[int, Any], lock: Any, unreplicated: Any, /) -> None:
        """What the producer state lends the common append: the manager, its producers, its lock, its unreplicated
        transactions."""

    def append_client(self, records: bytes | bytearray | memoryview, now: int, leader_epoch: int,
                      raise_high_watermark: bool, log_start_offset: int, recovery_point: int, /
                      ) -> LogAppendInfo | ClientBatch | None:
        """A client's common append of one batch under the log's lock, done: its LogAppendInfo. Declined, nothing
        done: the batch's header fields when it was checked and accepted (``single_client_batch``'s answer), else
        None; the caller then runs the reference."""


class LogEnd:
    """The reference :class:`LogEndApi`: fields only, every append left to the log's methods."""

    __slots__ = ("end_metadata", "high_watermark", "hw_metadata")

    def __init__(self) -> None:
        self.end_metadata = LogOffsetMetadata(0, 0, 0)
        self.high_watermark = 0
        self.hw_metadata: LogOffsetMetadata | None = None

    def set_tail(self, tail: SegmentTailApi) -> None:
        return None

    def close(self) -> None:
        return None

    def configure(self, checks: AppendChecks) -> None:
        return None

    def bind_producer_state(self, manager: Any, producers: dict[int, Any], lock: Any, unreplicated: Any) -> None:
        return None

    def append_client(self, records: bytes | bytearray | memoryview, now: int, leader_epoch: int,
                      raise_high_watermark: bool, log_start_offset: int, recovery_point: int
                      ) -> LogAppendInfo | ClientBatch | None:
        return None


def new_log_end() -> LogEndApi:
    """A log's end: the kernel's when it is loaded, else the reference's."""
    kernel = _native.kernel
    if kernel is not None:
        made: LogEndApi = kernel.log_end(positional_tuple(LogOffsetMetadata), positional_tuple(LogAppendInfo),
                                         new_batch_metadata, crc32c)
        return made
    return LogEnd()

"""The long-poll Fetch (Java DelayedFetch), independent of the API layer.

The API layer reads the log once; if that read is not enough (fewer than ``min_bytes``, no error, and
``max_wait_ms > 0``) it builds a :class:`DelayedFetch` with one :class:`FetchPartitionStatus` per
partition (the fetch position as :class:`LogOffsetMetadata`, taken from the first read's
``FetchDataInfo.fetch_offset_metadata``) and calls ``purgatory.try_complete_else_watch(fetch,
[TopicPartitionOperationKey(...) for each partition])``. After every append, or high watermark move,
it calls ``check_and_complete`` on that partition's key.

The two callbacks supplied by the API layer:

* ``end_offset_metadata(topic_partition, isolation) -> LogOffsetMetadata``: where the readable data of
  that partition ends (LEO / HW / LSO per ``isolation``). It raises a ``KafkaError`` when the partition
  cannot be read (unknown, not leader, storage error, fenced epoch): the fetch then completes at once,
  and the response carries that error.
* ``respond(fetch) -> None``: re-read every partition and send the response; called exactly once, on
  completion or on expiry (an expired fetch answers with whatever is there, possibly nothing).

Completion rule, per partition (the Kafka cases): end offset < fetch offset (truncated) -> complete;
fetch offset on an older segment than the end (segment rolled) -> complete; same segment -> add
``min(end - fetch position, partition_max_bytes)`` bytes. Complete when the total >= ``min_bytes``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from mini_broker.log.log_offset_metadata import UNKNOWN_OFFSET_METADATA, FetchIsolation, LogOffsetMetadata
from mini_broker.purgatory.delayed_operation import DelayedOperation
from pykafka_client.errors_base import KafkaError

_log = logging.getLogger(__name__)


@dataclass(slots=True)
class FetchPartitionStatus:
    """One partition of a delayed fetch: where the fetch reads from and its per-partition byte limit."""

    topic_partition: Hashable
    fetch_offset_metadata: LogOffsetMetadata
    partition_max_bytes: int


@dataclass(frozen=True, slots=True)
class FetchParams:
    """The request-level part of a fetch that the completion rule needs."""

    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation: FetchIsolation = FetchIsolation.HIGH_WATERMARK
    replica_id: int = -1


EndOffsetFn = Callable[[Hashable, FetchIsolation], LogOffsetMetadata]


class DelayedFetch(DelayedOperation):
    """A fetch parked until enough bytes are readable or ``params.max_wait_ms`` passes."""

    __slots__ = ("_end_offset_metadata", "_ready", "_respond", "error_by_partition", "expired", "params",
                 "partition_statuses")

    def __init__(
        self,
        params: FetchParams,
        partition_statuses: Sequence[FetchPartitionStatus],
        end_offset_metadata: EndOffsetFn,
        respond: Callable[[DelayedFetch], None],
        ready: Callable[[], bool] | None = None,
    ) -> None:
        """``ready``: completes the fetch whatever its bytes when True (a share fetch whose share partitions have
        records to acquire again below where it waits)."""
        super().__init__(params.max_wait_ms)
        self._ready = ready
        self.params = params
        self.partition_statuses = list(partition_statuses)
        self._end_offset_metadata = end_offset_metadata
        self._respond = respond
        self.expired = False
        #: Errors seen by the last check, by partition (the response should report them).
        self.error_by_partition: dict[Hashable, KafkaError] = {}

    def accumulated_bytes(self) -> int | None:
        """Bytes readable across partitions, or None when some partition forces completion."""
        accumulated = 0
        for status in self.partition_statuses:
            fetch_offset = status.fetch_offset_metadata
            if fetch_offset == UNKNOWN_OFFSET_METADATA:
                continue
            try:
                end_offset = self._end_offset_metadata(status.topic_partition, self.params.isolation)
            except KafkaError as e:
                self.error_by_partition[status.topic_partition] = e
                return None
            if fetch_offset.message_offset > end_offset.message_offset:
                # The log was truncated below the fetch position.
                return None
            if fetch_offset.message_offset < end_offset.message_offset:
                if fetch_offset.message_offset_only() or end_offset.message_offset_only():
                    # Cannot measure the bytes, but some data is there: answer rather than guess.
                    return None
                if fetch_offset.on_older_segment(end_offset):
                    # The fetch position is on a segment that has since rolled.
                    return None
                if fetch_offset.on_same_segment(end_offset):
                    accumulated += min(end_offset.position_diff(fetch_offset), status.partition_max_bytes)
        return accumulated

    def try_complete(self) -> bool:
        if self._ready is not None and self._ready():
            return self.force_complete()
        accumulated = self.accumulated_bytes()
        if accumulated is None or accumulated >= self.params.min_bytes:
            return self.force_complete()
        return False

    def on_expiration(self) -> None:
        self.expired = True

    def on_complete(self) -> None:
        self._respond(self)

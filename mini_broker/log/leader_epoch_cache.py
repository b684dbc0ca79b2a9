"""Leader epoch -> start offset of a partition log (Kafka: ``LeaderEpochFileCache``), sans-IO.

An entry ``(epoch, start_offset)`` says the first batch written in ``epoch`` is at ``start_offset``; entries
increase in both. Built from the batches' partition leader epochs (the log scans its segments the first time
a cluster broker asks) and kept up to date on append and truncation. :meth:`end_offset_for` is what
OffsetForLeaderEpoch answers: followers truncate to it after a leader change, consumers validate their
position with it (KIP-320).
"""

from __future__ import annotations

import bisect

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


class LeaderEpochCache:
    def __init__(self, entries: list[tuple[int, int]] | None = None) -> None:
        self._epochs: list[int] = []
        self._starts: list[int] = []
        for epoch, start in entries or []:
            self.assign(epoch, start)

    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._epochs, self._starts, strict=True))

    def latest_epoch(self) -> int:
        return self._epochs[-1] if self._epochs else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset`` (no-op when it is not newer than the last entry)."""
        if epoch < 0 or (self._epochs and epoch <= self._epochs[-1]):
            return
        # an entry at or past this start offset belongs to a discarded history
        while self._starts and self._starts[-1] >= start_offset:
            self._epochs.pop()
            self._starts.pop()
        self._epochs.append(epoch)
        self._starts.append(start_offset)

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(largest epoch <= requested, the offset where the next epoch starts or the LEO); (-1, -1) when
        the requested epoch is older than every entry or unknown."""
        if requested_epoch < 0 or not self._epochs or requested_epoch < self._epochs[0]:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        i = bisect.bisect_right(self._epochs, requested_epoch)  # first entry with epoch > requested
        epoch = self._epochs[i - 1]
        end = self._starts[i] if i < len(self._starts) else log_end_offset
        return epoch, end

    def truncate_from_end(self, end_offset: int) -> None:
        """Forget epochs that start at or past ``end_offset`` (the log was truncated there)."""
        while self._starts and self._starts[-1] >= end_offset:
            self._epochs.pop()
            self._starts.pop()

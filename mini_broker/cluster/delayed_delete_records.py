"""DeleteRecords waiting for the followers (Kafka: ``DelayedDeleteRecords``): on a cluster the leader moves
its log start offset at once, then answers only when the *low watermark* (the smallest log start offset of
the leader and its in-sync followers, which report theirs in their Fetch requests) reached the requested
offset, or REQUEST_TIMED_OUT after the request's timeout. A partition whose leadership moves meanwhile answers
NOT_LEADER_OR_FOLLOWER. Completed from the follower fetch path when a follower's log start moves."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

from mini_broker.purgatory import DelayedOperation
from pykafka_client.errors import RequestTimedOutError


@dataclass
class DeleteRecordsStatus:
    required_offset: int
    low_watermark: int = -1
    error_code: int = RequestTimedOutError.code
    pending: bool = True


#: (partition, required offset) -> (reached, low watermark, error code)
CheckLowWatermark = Callable[[Hashable, int], tuple[bool, int, int]]


class DelayedDeleteRecords(DelayedOperation):
    def __init__(self, delay_ms: int, statuses: dict[Hashable, DeleteRecordsStatus], check: CheckLowWatermark,
                 respond: Callable[[dict[Hashable, DeleteRecordsStatus]], None]) -> None:
        super().__init__(delay_ms)
        self.statuses = statuses
        self._check = check
        self._respond = respond

    def try_complete(self) -> bool:
        for tp, status in self.statuses.items():
            if not status.pending:
                continue
            reached, low, error = self._check(tp, status.required_offset)
            if error != 0:
                status.pending, status.error_code = False, error
            elif reached:
                status.pending, status.error_code, status.low_watermark = False, 0, low
        if not any(s.pending for s in self.statuses.values()):
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        self._respond(self.statuses)

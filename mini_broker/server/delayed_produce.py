"""DelayedProduce (Kafka: ``kafka.server.DelayedProduce``): an acks=all produce waiting for replication.

Each partition that appended without error starts pending with REQUEST_TIMED_OUT (what expiry answers).
``try_complete`` asks, per pending partition, whether the high watermark reached ``last offset + 1``
(``check_enough_replicas``). ReplicaManager builds one only when some partition is not replicated enough yet at
append time (a cluster broker's followers have not fetched it); on a single broker the high watermark moves with
the append, so the answer goes out without one.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

from mini_broker.purgatory.delayed_operation import DelayedOperation
from pykafka_client.errors import RequestTimedOutError


@dataclass
class ProducePartitionStatus:
    """``required_offset`` = last appended offset + 1; ``error_code`` is what the response will carry."""

    required_offset: int
    error_code: int
    acks_pending: bool


# (topic partition) -> (has the HW reached the offset?, error code if the partition is gone)
CheckReplicas = Callable[[Hashable, int], tuple[bool, int]]


class DelayedProduce(DelayedOperation):
    def __init__(self, delay_ms: int, statuses: dict[Hashable, ProducePartitionStatus], check: CheckReplicas,
                 respond: Callable[[dict[Hashable, ProducePartitionStatus]], None]) -> None:
        super().__init__(delay_ms)
        self.statuses = statuses
        self._check = check
        self._respond = respond
        for status in statuses.values():
            if status.error_code == 0:
                status.acks_pending = True
                status.error_code = RequestTimedOutError.code
            else:
                status.acks_pending = False

    def try_complete(self) -> bool:
        for tp, status in self.statuses.items():
            if not status.acks_pending:
                continue
            reached, error = self._check(tp, status.required_offset)
            if error != 0:
                status.acks_pending = False
                status.error_code = error
            elif reached:
                status.acks_pending = False
                status.error_code = 0
        if not any(s.acks_pending for s in self.statuses.values()):
            return self.force_complete()
        return False

    def on_expiration(self) -> None:
        return

    def on_complete(self) -> None:
        self._respond(self.statuses)

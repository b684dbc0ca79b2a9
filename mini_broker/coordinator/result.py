"""What a hosted coordinator's write operation decided, as a value (Kafka: the runtime's ``CoordinatorResult``).

A coordinator never appends to its partition itself: a write operation returns a :class:`CoordinatorResult`
(the records to append, the answer, and what to run once the records are in the log and once they are
durable), and :meth:`~mini_broker.coordinator.runtime.CoordinatorRuntime.write` does the append, waits for the
ISR and runs the continuations.

Error path: when the append raises (``NOT_LEADER_OR_FOLLOWER`` once this broker resigned the partition, or a log
error), ``on_failed(exception)`` gives the answer instead (:func:`append_error_code` maps the exception to the
code a client gets); a result without ``on_failed`` lets the exception reach the caller (the group coordinator's
metadata stores, as before the runtime wrote them). When the records are appended but the ISR wait fails (a
resignation before the followers had them), ``on_durable`` gets the wait's error code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from pykafka_client.errors import CoordinatorNotAvailableError, NotCoordinatorError, NotLeaderOrFollowerError

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CoordinatorResult(Generic[T]):
    """One write of a hosted coordinator (see the module docstring).

    * ``records``: one batch for the coordinator's partition (None: nothing to write);
    * ``response``: what :meth:`~mini_broker.coordinator.runtime.CoordinatorRuntime.write` returns once the
      records are appended;
    * ``flush``: fsync a local log before answering (a replicated partition's durability is its ISR's);
    * ``on_appended()``: the state change the append makes visible at once, run on the writing thread under the
      caller's locks;
    * ``on_durable(error)``: run once the ISR has the records (``error`` 0) or will not (the wait's error code,
      e.g. NOT_COORDINATOR after a resignation): at once on a single broker, on the runtime's timer thread on a
      cluster broker (so never under a replication wait's locks; it takes the locks it needs);
    * ``on_failed(exception)``: the answer when the append raised; None: the exception propagates.
    """

    records: bytes | None
    response: T
    flush: bool = False
    on_appended: Callable[[], None] | None = None
    on_durable: Callable[[int], None] | None = None
    on_failed: Callable[[Exception], T] | None = None


def append_error_code(error: Exception) -> int:
    """The code a client gets for a coordinator append that raised: NOT_COORDINATOR when this broker no longer
    leads the partition (the client finds the coordinator again), COORDINATOR_NOT_AVAILABLE for anything else
    (it retries)."""
    if isinstance(error, NotLeaderOrFollowerError):
        return int(NotCoordinatorError.code)
    return int(CoordinatorNotAvailableError.code)


__all__ = ["CoordinatorResult", "append_error_code"]

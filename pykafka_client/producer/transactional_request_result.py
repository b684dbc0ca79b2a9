"""The outcome of one transactional call (Java ``TransactionalRequestResult``).

The application thread starts an operation (``init_transactions``, ``commit_transaction``...) and waits on
its result; the Sender thread completes it. A wait that times out leaves the result pending: calling the
same operation again returns this same result (contract statement 83). ``acked`` records that the
application has seen the outcome, after which the result is no longer handed out again.
"""

from __future__ import annotations

import threading

from pykafka_client.errors import KafkaTimeoutError


class TransactionalRequestResult:
    """Completed once, by ``done`` or ``fail``, on the Sender thread; awaited on the application thread."""

    __slots__ = ("_error", "_event", "acked", "operation")

    def __init__(self, operation: str) -> None:
        self.operation = operation
        self._event = threading.Event()
        self._error: BaseException | None = None
        self.acked = False

    def done(self) -> None:
        self._event.set()

    def fail(self, error: BaseException) -> None:
        if not self._event.is_set():
            self._error = error
            self._event.set()

    def is_completed(self) -> bool:
        return self._event.is_set()

    def is_successful(self) -> bool:
        return self._event.is_set() and self._error is None

    @property
    def error(self) -> BaseException | None:
        return self._error

    def await_(self, timeout_s: float | None) -> None:
        """Wait (real time) for the outcome; raise its error, or KafkaTimeoutError if ``timeout_s`` passes first
        (the operation goes on: call it again to keep waiting)."""
        if not self._event.wait(timeout_s):
            raise KafkaTimeoutError(
                f"Timeout expired after {timeout_s} s while awaiting {self.operation}; call the same method again "
                "to wait for its outcome"
            )
        self.acked = True
        if self._error is not None:
            raise self._error

    def __repr__(self) -> str:
        state = "pending" if not self.is_completed() else ("ok" if self._error is None else f"failed: {self._error!r}")
        return f"TransactionalRequestResult({self.operation}, {state})"

"""The result of an asynchronous request (Java: ``consumer.internals.RequestFuture``).

A :class:`RequestFuture` is completed exactly once, either with a value (:meth:`complete`) or with an
exception (:meth:`raise_`). Listeners are called exactly once, in the thread that completes the
future if they were added before completion, or at once in the adding thread otherwise.

Invariants:

* A second ``complete``/``raise_`` raises :class:`IllegalStateError` and changes nothing.
* ``complete(exc)`` with an exception instance raises :class:`IllegalArgumentError` (a ``ValueError``):
  use ``raise_`` for failures.
* Completion is thread-safe (a heartbeat thread may complete a future another thread awaits); the
  internal lock is never held while a listener runs.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Generic, Protocol, TypeVar

from pykafka_client.errors import (
    CoordinatorNotAvailableError,
    IllegalArgumentError,
    IllegalStateError,
    NoAvailableBrokersError,
)

T = TypeVar("T")
S = TypeVar("S")
T_contra = TypeVar("T_contra", contravariant=True)

_INCOMPLETE = object()


class RequestFutureListener(Protocol[T_contra]):
    """Told once of a future's outcome."""

    def on_success(self, value: T_contra) -> None: ...

    def on_failure(self, exception: BaseException) -> None: ...


class RequestFutureAdapter(Generic[S, T]):
    """Maps the outcome of a ``RequestFuture[S]`` onto a ``RequestFuture[T]`` (see :meth:`RequestFuture.compose`).

    The default ``on_failure`` propagates the exception unchanged.
    """

    def on_success(self, value: S, future: RequestFuture[T]) -> None:
        raise NotImplementedError

    def on_failure(self, exception: BaseException, future: RequestFuture[T]) -> None:
        future.raise_(exception)


class _CallbackListener(Generic[T]):
    __slots__ = ("_on_success", "_on_failure")

    def __init__(
        self,
        on_success: Callable[[T], None] | None,
        on_failure: Callable[[BaseException], None] | None,
    ) -> None:
        self._on_success = on_success
        self._on_failure = on_failure

    def on_success(self, value: T) -> None:
        if self._on_success is not None:
            self._on_success(value)

    def on_failure(self, exception: BaseException) -> None:
        if self._on_failure is not None:
            self._on_failure(exception)


class RequestFuture(Generic[T]):
    """A value or an exception that arrives later, exactly once."""

    __slots__ = ("_lock", "_result", "_exception", "_listeners", "_done_event")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._result: object = _INCOMPLETE
        self._exception: BaseException | None = None
        self._listeners: list[RequestFutureListener[T]] = []
        self._done_event = threading.Event()

    # --- state ---------------------------------------------------------------------------------

    def is_done(self) -> bool:
        return self._result is not _INCOMPLETE or self._exception is not None

    def succeeded(self) -> bool:
        return self._result is not _INCOMPLETE

    def failed(self) -> bool:
        return self._exception is not None

    def should_block(self) -> bool:
        """A pending future is a poll condition: keep blocking until it is done."""
        return not self.is_done()

    def is_retriable(self) -> bool:
        """True if the future failed with a retriable error (``RetriableError`` or ``retriable=True``)."""
        exc = self._exception
        return exc is not None and bool(getattr(exc, "retriable", False))

    def value(self) -> T:
        """The success value. Raises IllegalStateError unless the future succeeded."""
        result = self._result
        if result is _INCOMPLETE:
            raise IllegalStateError("attempt to retrieve the value of a future which has not succeeded")
        return result  # type: ignore[return-value]

    def exception(self) -> BaseException:
        """The failure. Raises IllegalStateError unless the future failed."""
        exc = self._exception
        if exc is None:
            raise IllegalStateError("attempt to retrieve the exception of a future which has not failed")
        return exc

    # --- completion ----------------------------------------------------------------------------

    def complete(self, value: T) -> None:
        """Succeed with ``value`` and notify listeners (exactly once)."""
        if isinstance(value, BaseException):
            raise IllegalArgumentError("the argument to complete() cannot be an exception; use raise_()")
        with self._lock:
            if self.is_done():
                raise IllegalStateError("invalid attempt to complete a request future which is already complete")
            self._result = value
            listeners, self._listeners = self._listeners, []
            self._done_event.set()
        for listener in listeners:
            listener.on_success(value)

    def raise_(self, exception: BaseException) -> None:
        """Fail with ``exception`` and notify listeners (exactly once). Java ``raise``."""
        if not isinstance(exception, BaseException):
            raise IllegalArgumentError("raise_() needs an exception instance")
        with self._lock:
            if self.is_done():
                raise IllegalStateError("invalid attempt to fail a request future which is already complete")
            self._exception = exception
            listeners, self._listeners = self._listeners, []
            self._done_event.set()
        for listener in listeners:
            listener.on_failure(exception)

    # --- listeners -----------------------------------------------------------------------------

    def add_listener(self, listener: RequestFutureListener[T]) -> None:
        """Call ``listener`` once with the outcome (now, if the future is already done)."""
        with self._lock:
            if not self.is_done():
                self._listeners.append(listener)
                return
        if self._exception is not None:
            listener.on_failure(self._exception)
        else:
            listener.on_success(self._result)  # type: ignore[arg-type]

    def add_callbacks(
        self,
        on_success: Callable[[T], None] | None = None,
        on_failure: Callable[[BaseException], None] | None = None,
    ) -> None:
        """:meth:`add_listener` with plain functions."""
        self.add_listener(_CallbackListener(on_success, on_failure))

    def compose(self, adapter: RequestFutureAdapter[T, S]) -> RequestFuture[S]:
        """A new future completed by ``adapter`` from this one's outcome."""
        adapted: RequestFuture[S] = RequestFuture()

        def ok(value: T) -> None:
            adapter.on_success(value, adapted)

        def fail(exc: BaseException) -> None:
            adapter.on_failure(exc, adapted)

        self.add_callbacks(ok, fail)
        return adapted

    def chain(self, other: RequestFuture[T]) -> None:
        """Copy this future's outcome into ``other`` when it arrives."""
        self.add_callbacks(other.complete, other.raise_)

    def await_done(self, timeout_ms: float | None = None) -> bool:
        """Block until done or ``timeout_ms`` elapses (real time); True if done. For cross-thread use only:
        single-threaded code drives completion with ``ConsumerNetworkClient.poll(future)`` instead."""
        return self._done_event.wait(None if timeout_ms is None else timeout_ms / 1000.0)

    def __repr__(self) -> str:
        if self.succeeded():
            return f"RequestFuture(value={self._result!r})"
        if self.failed():
            return f"RequestFuture(exception={self._exception!r})"
        return "RequestFuture(<pending>)"

    # --- factories (Java static helpers) -------------------------------------------------------

    @staticmethod
    def failure(exception: BaseException) -> RequestFuture[Any]:
        future: RequestFuture[Any] = RequestFuture()
        future.raise_(exception)
        return future

    @staticmethod
    def void_success() -> RequestFuture[None]:
        future: RequestFuture[None] = RequestFuture()
        future.complete(None)
        return future

    @staticmethod
    def coordinator_not_available() -> RequestFuture[Any]:
        return RequestFuture.failure(CoordinatorNotAvailableError())

    @staticmethod
    def no_brokers_available() -> RequestFuture[Any]:
        return RequestFuture.failure(NoAvailableBrokersError("no brokers available"))


__all__ = [
    "RequestFuture",
    "RequestFutureAdapter",
    "RequestFutureListener",
]

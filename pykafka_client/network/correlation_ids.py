"""Correlation ids of client requests: 32-bit, unique, wrapping like a Java int, and never in the range
reserved for the SASL authenticator (which sends its own requests on the same connection)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from functools import partial

#: Correlation ids in ``[MIN_RESERVED, MAX_RESERVED]`` belong to the SASL authenticator.
SASL_MIN_RESERVED_CORRELATION_ID = 2**31 - 1 - 7
SASL_MAX_RESERVED_CORRELATION_ID = 2**31 - 1

_INT32_MIN = -(2**31)


class CorrelationIds:
    """Thread-safe generator (ConsumerNetworkClient.send draws ids without holding its lock).

    Ids are drawn from an ``itertools.count`` through an ``itertools.islice`` that ends where the reserved range
    begins, by :attr:`next_or_none` (C calls only, atomic under the GIL: no lock, and no Python frame, per request);
    only the draw that finds it ended takes the lock, to start the counter again at the lowest int."""

    def __init__(self, start: int = 0) -> None:
        self._lock = threading.Lock()
        #: ``next_or_none()``: the next id, or None when the counter reached the reserved range (then :meth:`next`
        #: wraps it around); a C callable (the NetworkClient's draw per request)
        self.next_or_none: Callable[[], int | None] = self._counter(start)

    @staticmethod
    def _counter(start: int) -> Callable[[], int | None]:
        """The ids from ``start`` up to the reserved range, then None."""
        below_reserved = itertools.islice(itertools.count(start), max(0, SASL_MIN_RESERVED_CORRELATION_ID - start))
        return partial(next, below_reserved, None)

    def next(self) -> int:
        draw = self.next_or_none
        cid = draw()
        if cid is not None:
            return cid
        with self._lock:
            if self.next_or_none is draw:
                # the first draw into the reserved range: skip it and wrap around like a Java int (negative ids are
                # fine); a thread that drew from the old counter meanwhile draws again from the new one
                self.next_or_none = self._counter(_INT32_MIN + 1)
                return _INT32_MIN
        return self.next()

    @property
    def next_id(self) -> int:
        """The id the next :meth:`next` returns (unless it wraps). Reading it draws that id and starts the counter at
        it again, so it is for tests and diagnostics only: not while other threads draw ids (one drawing between
        the two steps would see its id handed out again)."""
        with self._lock:
            cid = self.next_or_none()
            if cid is None:
                cid = SASL_MIN_RESERVED_CORRELATION_ID  # (the counter's next, in the reserved range: next() wraps)
            self.next_or_none = self._counter(cid)
            return cid

    @next_id.setter
    def next_id(self, value: int) -> None:
        with self._lock:
            self.next_or_none = self._counter(value)

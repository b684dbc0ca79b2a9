"""Correlation ids of client requests: 32-bit, unique, wrapping like a Java int, and never in the range
reserved for the SASL authenticator (which sends its own requests on the same connection)."""

from __future__ import annotations

import itertools
import threading

#: Correlation ids in ``[MIN_RESERVED, MAX_RESERVED]`` belong to the SASL authenticator.
SASL_MIN_RESERVED_CORRELATION_ID = 2**31 - 1 - 7
SASL_MAX_RESERVED_CORRELATION_ID = 2**31 - 1

_INT32_MIN = -(2**31)


class CorrelationIds:
    """Thread-safe generator (ConsumerNetworkClient.send draws ids without holding its lock).

    An id is drawn from an ``itertools.count`` (one C call, atomic under the GIL: no lock per request); only the
    draw that reaches the reserved range takes the lock, to start the counter again at the lowest int."""

    def __init__(self, start: int = 0) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count(start)

    def next(self) -> int:
        ids = self._ids
        cid = next(ids)
        if cid < SASL_MIN_RESERVED_CORRELATION_ID:
            return cid
        with self._lock:
            if self._ids is ids:
                # the first draw into the reserved range: skip it and wrap around like a Java int (negative ids are
                # fine); a thread that drew from the old counter meanwhile draws again from the new one
                self._ids = itertools.count(_INT32_MIN + 1)
                return _INT32_MIN
        return self.next()

    @property
    def next_id(self) -> int:
        """The id the next :meth:`next` returns (unless it wraps). Reading it draws that id and starts the counter at
        it again, so it is for tests and diagnostics only: not while other threads draw ids (one drawing between
        the two steps would see its id handed out again)."""
        with self._lock:
            cid = next(self._ids)
            self._ids = itertools.count(cid)
            return cid

    @next_id.setter
    def next_id(self, value: int) -> None:
        with self._lock:
            self._ids = itertools.count(value)

"""Correlation ids of client requests: 32-bit, unique, wrapping like a Java int, and never in the range
reserved for the SASL authenticator (which sends its own requests on the same connection)."""

from __future__ import annotations

import threading

#: Correlation ids in ``[MIN_RESERVED, MAX_RESERVED]`` belong to the SASL authenticator.
SASL_MIN_RESERVED_CORRELATION_ID = 2**31 - 1 - 7
SASL_MAX_RESERVED_CORRELATION_ID = 2**31 - 1

_INT32_MIN = -(2**31)


class CorrelationIds:
    """Thread-safe generator (ConsumerNetworkClient.send draws ids without holding its lock)."""

    def __init__(self, start: int = 0) -> None:
        self._lock = threading.Lock()
        self.next_id = start

    def next(self) -> int:
        with self._lock:
            if self.next_id >= SASL_MIN_RESERVED_CORRELATION_ID:
                # Skip the SASL range and wrap around like a Java int (negative ids are fine).
                self.next_id = _INT32_MIN
            cid = self.next_id
            self.next_id += 1
            return cid

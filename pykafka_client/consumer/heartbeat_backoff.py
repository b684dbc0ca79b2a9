"""When a group heartbeat may be retried after it failed (Java: the heartbeat request state's backoff).

Java's consumer (KIP-848) and share (KIP-932) heartbeat managers retry a failed heartbeat after an exponential
backoff: ``retry.backoff.ms`` after the first failure, doubling with each failure in a row (jitter +-20%) up to
``retry.backoff.max.ms``. A successful heartbeat starts the count again, and so do the answers that call for
the next heartbeat at once (a fenced or unknown member rejoining, a coordinator that moved).
"""

from __future__ import annotations

import random

from pykafka_client.network.exponential_backoff import ExponentialBackoff

#: Java's RequestState: the backoff doubles per failed attempt, with +-20% jitter
RETRY_BACKOFF_MULTIPLIER = 2
RETRY_BACKOFF_JITTER = 0.2


class HeartbeatBackoff:
    """Counts heartbeat failures in a row and gives the backoff before the next attempt. Sans-IO."""

    __slots__ = ("_backoff", "failed_attempts")

    def __init__(self, retry_backoff_ms: int, retry_backoff_max_ms: int, rng: random.Random | None = None) -> None:
        self._backoff = ExponentialBackoff(retry_backoff_ms, RETRY_BACKOFF_MULTIPLIER, retry_backoff_max_ms,
                                           RETRY_BACKOFF_JITTER, rng)  # fmt: skip
        #: failures since the last success or reset
        self.failed_attempts = 0

    def on_failed_attempt(self) -> int:
        """A heartbeat failed: the ms to wait before the next one (longer with each failure in a row)."""
        backoff_ms = self._backoff.backoff(self.failed_attempts)
        self.failed_attempts += 1
        return backoff_ms

    def reset(self) -> None:
        """A heartbeat succeeded, or the next one must go at once: the next failure backs off the least again."""
        self.failed_attempts = 0

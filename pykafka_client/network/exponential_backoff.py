"""Exponential backoff with jitter (Java: ``common.utils.ExponentialBackoff``).

``backoff(n) = min(max, initial * multiplier ** min(n, exp_max) * U(1 - jitter, 1 + jitter))`` where
``exp_max = log(max / initial) / log(multiplier)``. When ``max <= initial`` the value is the constant
``initial`` with no jitter at all (Kafka's "no exponential backoff" configuration).
"""

from __future__ import annotations

import math
import random as _random


class ExponentialBackoff:
    """Computes the n-th backoff; the randomness source is injectable for deterministic tests."""

    __slots__ = ("_initial", "_multiplier", "_max", "_jitter", "_exp_max", "_random", "upper_bound")

    def __init__(
        self,
        initial_interval: int,
        multiplier: int,
        max_interval: int,
        jitter: float,
        rng: _random.Random | None = None,
    ) -> None:
        self._initial = max(0, min(initial_interval, max_interval))
        self._multiplier = multiplier
        self._max = max_interval
        self._jitter = jitter
        self._exp_max = (
            math.log(max_interval / max(initial_interval, 1)) / math.log(multiplier)
            if max_interval > initial_interval
            else 0.0
        )
        self._random = rng if rng is not None else _random.Random()
        #: no :meth:`backoff` is larger than this (``max``, or ``initial`` when that is the larger); an attribute,
        #: not a property: metadata's "update due?" check reads it twice per producer I/O iteration
        self.upper_bound: int = max(self._initial, self._max)

    def backoff(self, attempts: int) -> int:
        """The backoff after ``attempts`` failures (0 for the first)."""
        if self._exp_max == 0:
            return self._initial
        exp = min(float(attempts), self._exp_max)
        term = self._initial * self._multiplier**exp
        factor = 1.0 if self._jitter < 1e-9 else self._random.uniform(1 - self._jitter, 1 + self._jitter)
        value = int(factor * term)
        return self._max if value > self._max else value

    def __repr__(self) -> str:
        return (
            f"ExponentialBackoff(initial={self._initial}, multiplier={self._multiplier}, "
            f"max={self._max}, jitter={self._jitter})"
        )

"""Connection limits of the socket server (Kafka: ``SocketServer.ConnectionQuotas``).

Counts: per IP (``max.connections.per.ip`` with ``max.connections.per.ip.overrides``), per listener
(``listener.name.<listener>.max.connections``) and broker-wide (``max.connections``; the inter-broker
listener is exempt when there is more than one listener, as in Kafka).

Accept rates (KIP-612): per listener (``listener.name.<listener>.max.connection.creation.rate``), broker-wide
(``max.connection.creation.rate``) and per IP (the ``connection_creation_rate`` quota of an ``ip`` entity,
:meth:`ConnectionQuotas.update_ip_connection_rate`).

What the Acceptor sees from :meth:`ConnectionQuotas.inc`:

* listener or broker-wide count reached: it *waits* for a slot (the socket stays unaccepted-in-effect);
* listener or broker-wide rate exceeded: it *waits* until the rate allows another connection;
* per-IP count reached: :class:`TooManyConnectionsError`, the socket is closed at once;
* per-IP rate exceeded: :class:`ConnectionThrottledError` with the throttle time, the socket is closed
  after that time (Kafka's delayed close of throttled sockets).

``dec`` is called on every close. Rates use a token bucket holding one second's worth of connections
(Kafka uses a windowed Rate sensor; the long-run rate is the same).
"""

from __future__ import annotations

import collections
import logging
import threading
from dataclasses import dataclass, field
from typing import Final

from pykafka_client.utils.time import SYSTEM_TIME, Time

log = logging.getLogger(__name__)

INT_MAX: Final = 2**31 - 1
#: Kafka's bound on how long one accept may be delayed by a rate limit
MAX_THROTTLE_S: Final = 1.0


class TooManyConnectionsError(Exception):
    """The per-IP connection limit is reached: the acceptor closes the socket at once."""


class ConnectionThrottledError(Exception):
    """The per-IP connection creation rate is exceeded: the acceptor closes the socket after ``throttle_s``."""

    def __init__(self, ip: str, throttle_s: float) -> None:
        super().__init__(f"Connection from {ip} throttled for {throttle_s * 1000:.0f} ms (connection creation rate)")
        self.ip = ip
        self.throttle_s = throttle_s


class TokenBucket:
    """``rate`` events per second with a burst of one second's worth (at least 1). Sans-IO: times are passed in."""

    def __init__(self, rate: float, now_s: float) -> None:
        self.rate = float(rate)
        self.capacity = max(self.rate, 1.0)
        self._tokens = self.capacity
        self._last = now_s

    def delay(self, now_s: float) -> float:
        """Seconds until one event is allowed (0 = now), without taking it."""
        if self.rate >= INT_MAX:
            return 0.0
        self._tokens = min(self.capacity, self._tokens + (now_s - self._last) * self.rate)
        self._last = now_s
        return 0.0 if self._tokens >= 1.0 else (1.0 - self._tokens) / self.rate

    def take(self) -> None:
        self._tokens -= 1.0


@dataclass
class _Listener:
    max_connections: int = INT_MAX
    rate: TokenBucket | None = None
    count: int = 0
    accepted_total: int = 0
    throttled_total: int = 0  # accepts delayed by the listener or broker-wide rate


@dataclass
class ConnectionQuotaMetrics:
    """Counters of the quotas (read by the socket server's gauges)."""

    accepted_total: int = 0
    rejected_total: int = 0  # per-IP count reached
    ip_throttled_total: int = 0  # per-IP rate exceeded (delayed close)
    rate_throttled_total: int = 0  # accepts delayed by a listener or broker-wide rate
    excess_closed_total: int = 0  # closed by closeExcessConnections
    per_listener: dict[str, _Listener] = field(default_factory=dict)


class ConnectionQuotas:
    """See the module docstring. Thread-safe: the Acceptors call ``inc``, the Processors ``dec``."""

    def __init__(self, max_per_ip: int, overrides: dict[str, int] | None = None, max_connections: int = INT_MAX, *,
                 max_connection_creation_rate: int = INT_MAX, protected_listener: str | None = None,
                 time: Time = SYSTEM_TIME) -> None:
        self.max_per_ip = max_per_ip
        self.overrides = dict(overrides or {})
        self.max_connections = max_connections
        self.protected_listener = protected_listener
        self._time = time
        self._counts: dict[str, int] = collections.defaultdict(int)
        self._total = 0
        self._broker_rate = TokenBucket(max_connection_creation_rate, self._now())
        self._ip_rate_quotas: dict[str | None, float] = {}  # ip (None = default) -> connections/s
        self._ip_rates: dict[str, TokenBucket] = {}
        self._listeners: dict[str, _Listener] = {}
        self.metrics = ConnectionQuotaMetrics(per_listener=self._listeners)
        self._cond = threading.Condition()
        self._closed = False
        #: whether some connection limit (broker-wide or a listener's) is finite: only then can
        #: :meth:`max_connections_exceeded` be true (the Processors skip the check each round otherwise)
        self.limited = max_connections < INT_MAX

    def _now(self) -> float:
        return self._time.nanoseconds() / 1e9

    # --- configuration -----------------------------------------------------------------------------

    def add_listener(self, listener: str, max_connections: int = INT_MAX, max_connection_creation_rate: int = INT_MAX) -> None:
        with self._cond:
            self._listeners[listener] = _Listener(max_connections, TokenBucket(max_connection_creation_rate, self._now()))
            self._update_limited()

    def update_max_connections(self, max_connections: int, listener: str | None = None) -> None:
        """Change the broker-wide (``listener`` None) or a listener's limit; Processors then close what exceeds it."""
        with self._cond:
            if listener is None:
                self.max_connections = max_connections
            else:
                self._listener(listener).max_connections = max_connections
            self._update_limited()
            self._cond.notify_all()

    def _update_limited(self) -> None:
        """Recompute :attr:`limited` (called with the lock held, after a limit changed)."""
        self.limited = self.max_connections < INT_MAX or any(
            lst.max_connections < INT_MAX for lst in self._listeners.values())

    def update_ip_connection_rate(self, ip: str | None, rate: float | None) -> None:
        """Set (or with None remove) the ``connection_creation_rate`` quota of ``ip`` (None = the default ip)."""
        with self._cond:
            if rate is None:
                self._ip_rate_quotas.pop(ip, None)
            else:
                self._ip_rate_quotas[ip] = rate
            if ip is None:
                self._ip_rates.clear()
            else:
                self._ip_rates.pop(ip, None)

    def ip_connection_rate(self, ip: str) -> float:
        q = self._ip_rate_quotas
        return q.get(ip, q.get(None, INT_MAX))

    def limit_for(self, ip: str) -> int:
        return self.overrides.get(ip, self.max_per_ip)

    def _listener(self, listener: str | None) -> _Listener:
        key = listener or ""
        found = self._listeners.get(key)
        if found is None:
            found = self._listeners[key] = _Listener()
        return found

    def _protected(self, listener: str | None) -> bool:
        return listener is not None and listener == self.protected_listener and len(self._listeners) > 1

    # --- accept / close ------------------------------------------------------------------------------

    def _slot_available(self, lst: _Listener, listener: str | None) -> bool:
        return lst.count < lst.max_connections and (self._protected(listener) or self._total < self.max_connections)

    def inc(self, ip: str, timeout_s: float | None = None, listener: str | None = None) -> None:
        """Count a new connection from ``ip`` on ``listener``; see the module docstring for what it may
        raise or wait for. ``timeout_s`` bounds the wait for a count slot (TooManyConnectionsError after it)."""
        with self._cond:
            lst = self._listener(listener)
            while not self._slot_available(lst, listener) and not self._closed:
                if not self._cond.wait(timeout=timeout_s if timeout_s is not None else 0.5) and timeout_s is not None:
                    raise TooManyConnectionsError(f"connection limit reached on listener {listener or '-'} "
                                                  f"(max.connections {self.max_connections}, listener {lst.max_connections})")
            if self._counts[ip] >= self.limit_for(ip):
                self.metrics.rejected_total += 1
                raise TooManyConnectionsError(f"Too many connections from {ip} (maximum = {self.limit_for(ip)})")
            self._wait_for_rate(lst, listener)
            ip_rate = self._ip_bucket(ip)
            if ip_rate is not None:
                throttle_s = ip_rate.delay(self._now())
                if throttle_s > 0:
                    self.metrics.ip_throttled_total += 1
                    raise ConnectionThrottledError(ip, min(throttle_s, MAX_THROTTLE_S))
                ip_rate.take()
            self._counts[ip] += 1
            self._total += 1
            lst.count += 1
            lst.accepted_total += 1
            self.metrics.accepted_total += 1

    def _wait_for_rate(self, lst: _Listener, listener: str | None) -> None:
        """Block (the acceptor) until the listener's and the broker-wide rates allow one more connection."""
        throttled = False
        while not self._closed:
            now = self._now()
            delay = lst.rate.delay(now) if lst.rate is not None else 0.0
            if not self._protected(listener):
                delay = max(delay, self._broker_rate.delay(now))
            if delay <= 0:
                break
            throttled = True
            self._cond.wait(timeout=min(delay, MAX_THROTTLE_S))
        if lst.rate is not None:
            lst.rate.take()
        if not self._protected(listener):
            self._broker_rate.take()
        if throttled:
            lst.throttled_total += 1
            self.metrics.rate_throttled_total += 1

    def _ip_bucket(self, ip: str) -> TokenBucket | None:
        rate = self.ip_connection_rate(ip)
        if rate >= INT_MAX:
            return None
        bucket = self._ip_rates.get(ip)
        if bucket is None or bucket.rate != rate:
            bucket = self._ip_rates[ip] = TokenBucket(rate, self._now())
        return bucket

    def dec(self, ip: str, listener: str | None = None) -> None:
        with self._cond:
            n = self._counts.get(ip, 0)
            if n <= 0:
                log.error("event=quota_dec_underflow ip=%s", ip)
                return
            if n == 1:
                del self._counts[ip]
            else:
                self._counts[ip] = n - 1
            self._total -= 1
            lst = self._listeners.get(listener or "")
            if lst is not None and lst.count > 0:
                lst.count -= 1
            self._cond.notify_all()

    def max_connections_exceeded(self, listener: str | None) -> bool:
        """Over the listener's limit, or over the broker-wide one on an unprotected listener (Kafka
        ``maxConnectionsExceeded``): a Processor then closes its lowest-priority channel."""
        lst = self._listeners.get(listener or "")
        if lst is not None and lst.count > lst.max_connections:
            return True
        return self._total > self.max_connections and not self._protected(listener)

    def record_excess_closed(self) -> None:
        with self._cond:
            self.metrics.excess_closed_total += 1

    def get(self, ip: str) -> int:
        with self._cond:
            return self._counts.get(ip, 0)

    def listener_count(self, listener: str) -> int:
        with self._cond:
            lst = self._listeners.get(listener)
            return lst.count if lst is not None else 0

    @property
    def total(self) -> int:
        with self._cond:
            return self._total

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

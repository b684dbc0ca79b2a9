"""Connection limits of the socket server (Kafka: ``SocketServer.ConnectionQuotas``): per IP
(``max.connections.per.ip`` with ``max.connections.per.ip.overrides``) and broker-wide (``max.connections``).
The Acceptor calls :meth:`ConnectionQuotas.inc` for each accepted socket and every close calls ``dec``."""

from __future__ import annotations

import collections
import logging
import threading
from typing import Final

log = logging.getLogger(__name__)

INT_MAX: Final = 2**31 - 1


class TooManyConnectionsError(Exception):
    """The per-IP connection limit is reached: the acceptor closes the socket at once."""


class ConnectionQuotas:
    """Connection counts per IP (``max.connections.per.ip`` + overrides) and broker-wide (``max.connections``).

    ``inc`` raises :class:`TooManyConnectionsError` over the per-IP limit; over the broker-wide limit it
    blocks (the acceptor waits for a slot) until ``dec`` or ``close``. ``dec`` is called on every close."""

    def __init__(self, max_per_ip: int, overrides: dict[str, int] | None = None, max_connections: int = INT_MAX) -> None:
        self.max_per_ip = max_per_ip
        self.overrides = dict(overrides or {})
        self.max_connections = max_connections
        self._counts: dict[str, int] = collections.defaultdict(int)
        self._total = 0
        self._cond = threading.Condition()
        self._closed = False

    def limit_for(self, ip: str) -> int:
        return self.overrides.get(ip, self.max_per_ip)

    def inc(self, ip: str, timeout_s: float | None = None) -> None:
        with self._cond:
            while self._total >= self.max_connections and not self._closed:
                if not self._cond.wait(timeout=timeout_s if timeout_s is not None else 0.5) and timeout_s is not None:
                    raise TooManyConnectionsError(f"broker-wide limit {self.max_connections} reached")
            if self._counts[ip] >= self.limit_for(ip):
                raise TooManyConnectionsError(f"Too many connections from {ip} (maximum = {self.limit_for(ip)})")
            self._counts[ip] += 1
            self._total += 1

    def dec(self, ip: str) -> None:
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
            self._cond.notify()

    def get(self, ip: str) -> int:
        with self._cond:
            return self._counts.get(ip, 0)

    @property
    def total(self) -> int:
        with self._cond:
            return self._total

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

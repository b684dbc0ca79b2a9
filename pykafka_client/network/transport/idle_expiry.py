"""Idle connection expiry (Java: ``Selector.IdleExpiryManager``), sans-IO.

Connections are kept in least-recently-active order. :meth:`IdleExpiryManager.poll_expired_connection`
returns at most one expired connection per call, the oldest, as the Java selector closes one per poll.
"""

from __future__ import annotations


class IdleExpiryManager:
    """Tracks the last activity time (monotonic ns) of each connection, oldest first."""

    def __init__(self, connections_max_idle_ms: int, now_ns: int) -> None:
        self.connections_max_idle_ns = connections_max_idle_ms * 1_000_000
        self._lru: dict[str, int] = {}
        #: before this time (monotonic ns) no connection can have expired: poll_expired_connection() returns None
        self.next_check_ns = now_ns + self.connections_max_idle_ns

    def update(self, connection_id: str, now_ns: int) -> None:
        """Mark activity: the connection becomes the most recently active."""
        self._lru.pop(connection_id, None)
        self._lru[connection_id] = now_ns

    def activity_order(self) -> dict[str, int]:
        """The live map of connection id -> last activity (ns), least recently active first: :meth:`update` is moving
        a connection's entry to the end with its new time (what the kernel's server channel path does itself)."""
        return self._lru

    def remove(self, connection_id: str) -> None:
        self._lru.pop(connection_id, None)

    def oldest(self) -> str | None:
        return next(iter(self._lru), None)

    def poll_expired_connection(self, now_ns: int) -> str | None:
        """The oldest connection if it has been idle for longer than the limit (it is removed)."""
        if now_ns < self.next_check_ns:
            return None
        if not self._lru:
            self.next_check_ns = now_ns + self.connections_max_idle_ns
            return None
        connection_id, last_active_ns = next(iter(self._lru.items()))
        expire_ns = last_active_ns + self.connections_max_idle_ns
        if now_ns > expire_ns:
            del self._lru[connection_id]
            return connection_id
        self.next_check_ns = expire_ns
        return None

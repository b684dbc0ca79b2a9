"""The background heartbeat thread of a group member (Java: AbstractCoordinator.HeartbeatThread).

It owns no state: each step asks the coordinator (``heartbeat_step``, which decides under the
coordinator lock), then polls the client with no coordinator lock held, then waits on the
coordinator's condition (woken by state changes and close). See docs/ARCHITECTURE.md, "Threads and
lock order".
"""

from __future__ import annotations

import logging
import threading

from pykafka_client.consumer.group_member import HeartbeatDriven

log = logging.getLogger(__name__)


class HeartbeatThread(threading.Thread):
    """Background heartbeats (daemon). Each step decides under the coordinator lock, then polls the
    client with no coordinator lock held (completion handlers take it briefly), then waits on the
    coordinator's condition (woken by state changes and close). While the member has not joined
    (UNJOINED, PREPARING_REBALANCE) it neither heartbeats nor polls."""

    def __init__(self, coordinator: HeartbeatDriven) -> None:
        super().__init__(
            name=f"kafka-coordinator-heartbeat-thread | {coordinator.rebalance_config.group_id}", daemon=True
        )
        self.coordinator = coordinator
        self._stop_event = threading.Event()

    def run(self) -> None:
        c = self.coordinator
        try:
            while not self._stop_event.is_set():
                wait_ms = c.heartbeat_step(c.time.hi_res_clock_ms())
                with c.lock:
                    joined = not c.state.has_not_joined_group()
                if joined:
                    # Never while (re)joining: JoinGroup responses (and the leader's assignment) must be
                    # handled by the application thread, as in Java.
                    c.client.poll_no_wakeup()
                with c.cond:
                    if self._stop_event.is_set() or c.closed:
                        break
                    c.cond.wait(wait_ms / 1000.0)
        except Exception as e:  # surfaced to the application thread by the next poll()
            log.error("heartbeat thread failed: %s", e)
            with c.lock:
                c.heartbeat_failure = e

    def shutdown(self) -> None:
        self._stop_event.set()
        with self.coordinator.cond:
            self.coordinator.cond.notify_all()
        if threading.current_thread() is not self:
            self.join(timeout=5.0)


__all__ = ["HeartbeatThread"]

"""Heartbeat, session and poll-interval timers of a group member (Java: consumer.internals.Heartbeat).

Pure bookkeeping on an injected Time: no I/O, no threads. The coordinator's lock guards it.
* heartbeat timer: when the next heartbeat is due (``heartbeat.interval.ms``; ``retry.backoff.ms``
  after a failed one);
* session timer: reset by every successful heartbeat response; expiry means the coordinator is
  presumed dead (``session.timeout.ms``);
* poll timer: reset by every ``poll()``; expiry means the application stopped polling
  (``max.poll.interval.ms``) and the member must leave the group.
"""

from __future__ import annotations

from pykafka_client.utils.time import Time


class Heartbeat:
    def __init__(
        self,
        time: Time,
        session_timeout_ms: int,
        heartbeat_interval_ms: int,
        max_poll_interval_ms: int,
        retry_backoff_ms: int,
    ) -> None:
        if heartbeat_interval_ms >= session_timeout_ms:
            raise ValueError("heartbeat.interval.ms must be lower than session.timeout.ms")
        self.time = time
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.max_poll_interval_ms = max_poll_interval_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.heartbeat_timer = time.timer(heartbeat_interval_ms)
        self.session_timer = time.timer(session_timeout_ms)
        self.poll_timer = time.timer(max_poll_interval_ms)
        self.heartbeat_in_flight = False
        self.last_heartbeat_send_ms = 0

    def update(self, now_ms: int) -> None:
        self.heartbeat_timer.update(now_ms)
        self.session_timer.update(now_ms)
        self.poll_timer.update(now_ms)

    def poll(self, now_ms: int) -> None:
        """The application called poll(): restart the max.poll.interval.ms timer."""
        self.update(now_ms)
        self.poll_timer.reset(self.max_poll_interval_ms)

    def sent_heartbeat(self, now_ms: int) -> None:
        self.last_heartbeat_send_ms = now_ms
        self.heartbeat_in_flight = True
        self.update(now_ms)
        self.heartbeat_timer.reset(self.heartbeat_interval_ms)

    def fail_heartbeat(self) -> None:
        self.heartbeat_in_flight = False
        self.heartbeat_timer.reset(self.retry_backoff_ms)

    def received_heartbeat(self) -> None:
        self.heartbeat_in_flight = False
        self.session_timer.reset(self.session_timeout_ms)

    def should_heartbeat(self, now_ms: int) -> bool:
        self.update(now_ms)
        return self.heartbeat_timer.is_expired()

    def time_to_next_heartbeat(self, now_ms: int) -> int:
        self.update(now_ms)
        return self.heartbeat_timer.remaining_ms()

    def session_timeout_expired(self, now_ms: int) -> bool:
        self.update(now_ms)
        return self.session_timer.is_expired()

    def poll_timeout_expired(self, now_ms: int) -> bool:
        self.update(now_ms)
        return self.poll_timer.is_expired()

    def reset_timeouts(self) -> None:
        self.update(self.time.hi_res_clock_ms())
        self.session_timer.reset(self.session_timeout_ms)
        self.poll_timer.reset(self.max_poll_interval_ms)
        self.heartbeat_timer.reset(self.heartbeat_interval_ms)

    def reset_session_timeout(self) -> None:
        self.update(self.time.hi_res_clock_ms())
        self.session_timer.reset(self.session_timeout_ms)

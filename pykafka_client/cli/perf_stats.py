"""The numbers ``pykafka perf produce`` prints, in the format of Kafka's ProducerPerformance: a line per
reporting window and a final line with latency percentiles; and the throttle that holds a rate."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class Throttle:
    """Hold sends to ``per_second`` (-1: no limit): the n-th send waits until ``start + n / per_second``."""

    def __init__(self, per_second: float, start: float, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.per_second = per_second
        self.start = start
        self.clock = clock
        self.sleep = sleep

    def wait_for(self, sent_so_far: int) -> None:
        if self.per_second <= 0:
            return
        due = self.start + sent_so_far / self.per_second
        delay = due - self.clock()
        if delay > 0:
            self.sleep(delay)


def percentile(sorted_values: list[int], fraction: float) -> int:
    if not sorted_values:
        return 0
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * fraction))]


class ProducerStats:
    """Latencies recorded from the producer's I/O thread; ``window_line`` every reporting interval and
    ``total_line`` at the end, as Kafka's ProducerPerformance prints them."""

    def __init__(self, start_ms: float, interval_ms: float, printer: Callable[[str], None]) -> None:
        self.lock = threading.Lock()
        self.start_ms = start_ms
        self.interval_ms = interval_ms
        self.printer = printer
        self.latencies: list[int] = []
        self.count = 0
        self.bytes = 0
        self.max_latency = 0
        self.total_latency = 0
        self.errors = 0
        self.first_error: str | None = None
        self._window_start = start_ms
        self._window = [0, 0, 0, 0]  # count, bytes, total latency, max latency

    def record(self, latency_ms: int, size: int, now_ms: float) -> None:
        with self.lock:
            self.count += 1
            self.bytes += size
            self.total_latency += latency_ms
            self.max_latency = max(self.max_latency, latency_ms)
            self.latencies.append(latency_ms)
            w = self._window
            w[0] += 1
            w[1] += size
            w[2] += latency_ms
            w[3] = max(w[3], latency_ms)
            if now_ms - self._window_start >= self.interval_ms:
                self.printer(self.window_line(now_ms))
                self._window_start = now_ms
                self._window = [0, 0, 0, 0]

    def failed(self, why: str) -> None:
        with self.lock:
            self.errors += 1
            self.first_error = self.first_error or why

    def window_line(self, now_ms: float) -> str:
        count, size, total, worst = self._window
        elapsed = max(now_ms - self._window_start, 1e-9)
        return (f"{count} records sent, {1000.0 * count / elapsed:.1f} records/sec "
                f"({1000.0 * size / elapsed / (1024 * 1024):.2f} MB/sec), {total / max(count, 1):.1f} ms avg latency, "
                f"{float(worst):.1f} ms max latency.")

    def total_line(self, now_ms: float) -> str:
        elapsed = max(now_ms - self.start_ms, 1e-9)
        lat = sorted(self.latencies)
        return (f"{self.count} records sent, {1000.0 * self.count / elapsed:f} records/sec "
                f"({1000.0 * self.bytes / elapsed / (1024 * 1024):.2f} MB/sec), "
                f"{self.total_latency / max(self.count, 1):.2f} ms avg latency, {float(self.max_latency):.2f} ms max latency, "
                f"{percentile(lat, 0.5)} ms 50th, {percentile(lat, 0.95)} ms 95th, {percentile(lat, 0.99)} ms 99th, "
                f"{percentile(lat, 0.999)} ms 99.9th.")

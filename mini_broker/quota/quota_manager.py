"""Client quota enforcement (Kafka: ``ClientQuotaManager`` for produce/fetch bytes, ``ClientRequestQuotaManager``
for request time, and ``QuotaUtils.throttleTime``), since KIP-219.

Each quota type measures a windowed rate per quota entity (Kafka's ``Rate`` over ``quota.window.num`` windows of
``quota.window.size.seconds``; the rate is computed over at least ``num - 1`` windows). When a request pushes
the rate over the bound, the throttle time is ``(rate - bound) / bound * window``: the response carries it in
``throttle_time_ms`` at once, and the channel stays muted until it has passed (``StartThrottlingResponse``,
then ``EndThrottlingResponse`` from the :class:`ThrottledChannelReaper`).

Measured values: produce request bytes (``producer_byte_rate``), fetch response bytes of consumers
(``consumer_byte_rate``), and the handler time of every request except ApiVersions as a percentage of one
thread (``request_percentage``). A quota set for a default entity applies to each user / client id
separately; one set for a named entity is shared by everything that resolves to it.
"""

from __future__ import annotations

import collections
import threading
from typing import TYPE_CHECKING, Callable, Final

from mini_broker.quota.client_quotas import (
    CLIENT_ID,
    CONSUMER_BYTE_RATE,
    IP,
    IP_KEYS,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    USER,
    ClientQuotaStore,
    Entity,
)
from mini_broker.quota.throttled_channel_reaper import ThrottledChannelReaper
from pykafka_client.utils.time import SYSTEM_TIME, Time

if TYPE_CHECKING:
    from mini_broker.metrics import BrokerMetrics

#: Kafka's ClientQuotaManagerConfig.NanosToPercentagePerSecond: 1 s of thread time = 100 (%)
NANOS_TO_PERCENTAGE: Final = 100.0 / 1e9


class WindowedRate:
    """Sum of values per second over ``samples`` windows of ``window_ms`` (Kafka ``Rate`` + ``SampledStat``)."""

    def __init__(self, samples: int, window_ms: int) -> None:
        self.samples = samples
        self.window_ms = window_ms
        self._windows: collections.deque[list[float]] = collections.deque()  # [start ms, total]

    def _purge(self, now_ms: float) -> None:
        horizon = self.samples * self.window_ms
        while self._windows and self._windows[0][0] + horizon <= now_ms:
            self._windows.popleft()

    def record(self, value: float, now_ms: float) -> None:
        self._purge(now_ms)
        if not self._windows or now_ms >= self._windows[-1][0] + self.window_ms:
            self._windows.append([now_ms, 0.0])
        self._windows[-1][1] += value

    def window_size_ms(self, now_ms: float) -> float:
        """The time the rate is measured over: since the oldest window, but at least ``samples - 1`` windows."""
        elapsed = now_ms - self._windows[0][0] if self._windows else 0.0
        full = int(elapsed // self.window_ms)
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return elapsed

    def rate(self, now_ms: float) -> float:
        self._purge(now_ms)
        size = self.window_size_ms(now_ms)
        return sum(w[1] for w in self._windows) * 1000.0 / size if size > 0 else 0.0


def throttle_time_ms(rate: WindowedRate, bound: float, now_ms: float) -> int:
    """Kafka ``QuotaUtils.throttleTime``: how long to hold the client so the rate falls back to ``bound``."""
    observed = rate.rate(now_ms)
    if observed <= bound:
        return 0
    return round((observed - bound) / bound * rate.window_size_ms(now_ms))


def _metric_tags(entity: Entity, user: str, client_id: str) -> tuple[str, str]:
    """(user, client id) tags of the sensor: a default entity part is replaced by the actual value, so a
    default quota is measured per user / client id; a missing part is empty (shared)."""
    names = dict(entity)
    tag_user = "" if USER not in names else (user if names[USER] is None else str(names[USER]))
    tag_client = "" if CLIENT_ID not in names else (client_id if names[CLIENT_ID] is None else str(names[CLIENT_ID]))
    return tag_user, tag_client


class ClientQuotaManager:
    """One quota type (``quota_key``): rates per sensor, throttle times, per-entity metrics. Thread-safe."""

    def __init__(self, store: ClientQuotaStore, quota_key: str, samples: int, window_ms: int,
                 metrics: BrokerMetrics | None = None, time: Time = SYSTEM_TIME) -> None:
        self.store = store
        self._time = time
        self.quota_key = quota_key
        self.samples = samples
        self.window_ms = window_ms
        self.max_throttle_ms = samples * window_ms
        self._metrics = metrics
        self._sensors: dict[tuple[str, str], WindowedRate] = {}
        self._lock = threading.Lock()

    def active(self) -> bool:
        return self.quota_key in self.store.keys_in_use

    def _now_ms(self) -> float:
        return self._time.nanoseconds() / 1e6

    def record_and_get_throttle_ms(self, user: str, client_id: str, value: float) -> int:
        """Record ``value`` for (user, client id) now; the throttle time to impose (0 = none)."""
        now_ms = self._now_ms()
        quota = self.store.resolve(user, client_id, self.quota_key)
        if quota is None:
            return 0
        tags = _metric_tags(quota.entity, user, client_id)
        with self._lock:
            rate = self._sensors.get(tags)
            if rate is None:
                rate = self._sensors[tags] = WindowedRate(self.samples, self.window_ms)
                self._register_gauge(tags, rate)
            rate.record(value, now_ms)
            throttle = min(throttle_time_ms(rate, quota.bound, now_ms), self.max_throttle_ms)
        if throttle > 0 and self._metrics is not None:
            self._metrics.counter("kafka_server_ClientQuota_throttle_time_ms_total", quota=self.quota_key,
                                  user=tags[0], client_id=tags[1]).inc(throttle)
        return throttle

    def _register_gauge(self, tags: tuple[str, str], rate: WindowedRate) -> None:
        if self._metrics is None:
            return
        self._metrics.gauge("kafka_server_ClientQuota_rate", lambda: rate.rate(self._now_ms()),
                            quota=self.quota_key, user=tags[0], client_id=tags[1])


class QuotaManagers:
    """The three client quota managers over one store (Kafka ``QuotaFactory.QuotaManagers``)."""

    def __init__(self, samples: int = 11, window_s: int = 1, metrics: BrokerMetrics | None = None,
                 time: Time = SYSTEM_TIME) -> None:
        self.store = ClientQuotaStore()
        window_ms = window_s * 1000
        self.produce = ClientQuotaManager(self.store, PRODUCER_BYTE_RATE, samples, window_ms, metrics, time)
        self.fetch = ClientQuotaManager(self.store, CONSUMER_BYTE_RATE, samples, window_ms, metrics, time)
        self.request = ClientQuotaManager(self.store, REQUEST_PERCENTAGE, samples, window_ms, metrics, time)
        self.reaper: ThrottledChannelReaper | None = None  # started by start()
        #: told about ip connection_creation_rate changes (the socket server's ConnectionQuotas)
        self.on_ip_quota: Callable[[str | None, float | None], None] | None = None

    def start(self) -> None:
        self.reaper = ThrottledChannelReaper()

    def shutdown(self) -> None:
        if self.reaper is not None:
            self.reaper.shutdown()

    def any_active(self) -> bool:
        return not self.store.keys_in_use <= IP_KEYS  # (a key outside IP_KEYS, without a set per call)

    def alter(self, entity: Entity, key: str, value: float | None) -> None:
        """Set (None: remove) one quota; raises InvalidQuotaError."""
        self.store.alter(entity, key, value)
        if entity[0][0] == IP and self.on_ip_quota is not None:
            self.on_ip_quota(entity[0][1], value)

    def describe(self, components: list[tuple[str, int, str | None]], strict: bool) -> list[tuple[Entity, dict[str, float]]]:
        return self.store.describe(components, strict)

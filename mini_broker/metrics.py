"""Broker metrics (Kafka's Yammer metrics, reduced) and a Prometheus text endpoint.

Names follow Kafka's MBeans, flattened the way the Prometheus JMX exporter does:
``kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Produce`` becomes
``kafka_network_RequestMetrics_TotalTimeMs{request="Produce"}``.

* :class:`Counter` - monotonic count. * :class:`Histogram` - count/sum/min/max of observations (exported
  as a Prometheus summary without quantiles). * gauges are callables sampled at scrape time.
* :class:`IdleMeter` - fraction of wall time a group of threads spent idle, over a sliding window
  (NetworkProcessorAvgIdlePercent, RequestHandlerAvgIdlePercent).

Everything is thread-safe; recording is cheap (one lock, a few adds).
"""

from __future__ import annotations

import functools
import http.server
import threading
from collections import deque
from typing import Callable, Sequence

from pykafka_client.protocol.records import _native
from pykafka_client.utils.time import SYSTEM_TIME, Time

Labels = tuple[tuple[str, str], ...]
#: a completed request's eight times (now, start, dequeued, local end, remote end, completed, response dequeued,
#: sent) into one API's instruments; False where nothing was recorded (see RequestInstruments.observer)
RequestObserver = Callable[[int, int, int, int, int, int, int, int], bool]


class Counter:
    __slots__ = ("lock", "value")

    def __init__(self, lock: threading.Lock | None = None) -> None:
        #: what an update holds: its own, or one shared with the counters made together (see :func:`inc_pair`)
        self.lock = lock if lock is not None else threading.Lock()
        self.value = 0

    def inc(self, n: int = 1) -> None:
        with self.lock:
            self.value += n


def inc_pair(first: Counter, n: int, second: Counter, m: int) -> None:
    """``first.inc(n)`` and ``second.inc(m)``: in one hold of their lock when they share it (counters made together
    by :meth:`BrokerMetrics.counters`, counted together on a per-request path), else one after the other."""
    lock = first.lock
    if lock is second.lock:
        with lock:
            first.value += n
            second.value += m
    else:
        first.inc(n)
        second.inc(m)


class Histogram:
    """Count, sum, min and max of observed values (ms, bytes...)."""

    __slots__ = ("_lock", "count", "max", "min", "sum")

    def __init__(self, lock: threading.Lock | None = None) -> None:
        self._lock = lock if lock is not None else threading.Lock()
        self.count = 0
        self.sum = 0.0
        self.min = 0.0
        self.max = 0.0

    def update(self, v: float) -> None:
        with self._lock:
            observe_each((self,), (v,))

    @property
    def mean(self) -> float:
        return self.sum / self.count if self.count else 0.0


def observe_each(histograms: tuple[Histogram, ...], values: Sequence[float]) -> None:
    """Observe each value in the histogram at its position, for a caller holding their lock (the one observation
    of :class:`Histogram`: a request's six times are recorded in one call, not one per histogram). ValueError
    unless there is one value per histogram (checked by length: ``zip``'s ``strict`` keyword costs more than the
    loop on this per-request path)."""
    if len(values) != len(histograms):
        raise ValueError(f"{len(values)} values for {len(histograms)} histograms")
    for h, v in zip(histograms, values):  # noqa: B905 (the lengths are checked above)
        if h.count == 0 or v < h.min:
            h.min = v
        if h.count == 0 or v > h.max:
            h.max = v
        h.count += 1
        h.sum += v


class IdleMeter:
    """Idle fraction of ``threads`` threads over the last ``window_ms`` (two half-window buckets).

    Each thread calls :meth:`record` with the nanoseconds it just spent idle. The value is
    ``idle_ns / (elapsed_ns * threads)`` clamped to [0, 1]; 1.0 before any sample."""

    def __init__(self, threads: int, time: Time = SYSTEM_TIME, window_ms: int = 30_000) -> None:
        self._lock = threading.Lock()
        self._time = time
        self.threads = max(1, threads)
        self._half_ns = window_ms * 1_000_000 // 2
        now = time.nanoseconds()
        # (bucket start ns, idle ns)
        self._buckets: deque[list[int]] = deque([[now, 0]], maxlen=2)

    def _roll(self, now: int) -> None:
        if now - self._buckets[-1][0] >= self._half_ns:
            self._buckets.append([now, 0])

    def record(self, idle_ns: int, now_ns: int | None = None) -> None:
        """Add ``idle_ns``; ``now_ns``: the clock's time now, when the caller has just read it."""
        with self._lock:
            now = self._time.nanoseconds() if now_ns is None else now_ns
            bucket = self._buckets[-1]
            if now - bucket[0] >= self._half_ns:
                bucket = [now, 0]
                self._buckets.append(bucket)
            bucket[1] += idle_ns

    def value(self) -> float:
        with self._lock:
            now = self._time.nanoseconds()
            self._roll(now)
            start = self._buckets[0][0]
            idle = sum(b[1] for b in self._buckets)
        elapsed = now - start
        if elapsed <= 0:
            return 1.0
        return max(0.0, min(1.0, idle / (elapsed * self.threads)))


REQUEST_TIME_METRICS = (
    "TotalTimeMs",
    "RequestQueueTimeMs",
    "LocalTimeMs",
    "RemoteTimeMs",
    "ResponseQueueTimeMs",
    "ResponseSendTimeMs",
)


_REQUEST_METRIC_PREFIX = "kafka_network_RequestMetrics_"


def request_times_ms(now: int, start: int, dequeued: int, local_end: int, remote_end: int, completed: int,
                     response_dequeued: int, sent: int) -> tuple[float, float, float, float, float, float]:
    """A request's :data:`REQUEST_TIME_METRICS` in ms from its monotonic timestamps in ns (Kafka's
    ``RequestChannel.Request.updateRequestMetrics``): received (``start``), dequeued by a handler, handled
    (``local_end``), completed remotely (``remote_end``, else the local end), its response queued (``completed``)
    and dequeued by the processor, sent (``sent``) at ``now``. -1 is unset; 0.0 for a pair with an unset or
    reversed end."""
    if remote_end < 0:
        remote_end = local_end
    return (
        max(0.0, (now - start) / 1e6) if start >= 0 and now >= 0 else 0.0,
        max(0.0, (dequeued - start) / 1e6) if start >= 0 and dequeued >= 0 else 0.0,
        max(0.0, (local_end - dequeued) / 1e6) if dequeued >= 0 and local_end >= 0 else 0.0,
        max(0.0, (remote_end - local_end) / 1e6) if local_end >= 0 and remote_end >= 0 else 0.0,
        max(0.0, (response_dequeued - completed) / 1e6) if completed >= 0 and response_dequeued >= 0 else 0.0,
        max(0.0, (sent - response_dequeued) / 1e6) if response_dequeued >= 0 and sent >= 0 else 0.0,
    )


def observe_request_times_reference(lock: threading.Lock, requests: Counter, histograms: tuple[Histogram, ...],
                                    now: int, start: int, dequeued: int, local_end: int, remote_end: int,
                                    completed: int, response_dequeued: int, sent: int) -> None:
    """One completed request: ``requests`` counts it and each histogram observes its time of
    :func:`request_times_ms`, under ``lock`` (the reference of the kernel's ``observe_request_times``)."""
    times = request_times_ms(now, start, dequeued, local_end, remote_end, completed, response_dequeued, sent)
    with lock:
        requests.value += 1
        observe_each(histograms, times)


class RequestInstruments:
    """One API's Requests counter and its :data:`REQUEST_TIME_METRICS` histograms, sharing one lock: a completed
    request takes it once, not once per instrument."""

    __slots__ = ("_lock", "_requests", "_times")

    def __init__(self, lock: threading.Lock, requests: Counter, times: tuple[Histogram, ...]) -> None:
        self._lock = lock
        self._requests = requests
        self._times = times

    def record(self, times_ms: tuple[float, ...]) -> None:
        with self._lock:
            self._requests.value += 1
            observe_each(self._times, times_ms)

    def observer(self) -> RequestObserver | None:
        """The kernel's ``observe_request_times`` of these instruments (called with the eight times of
        :meth:`record_ns`; False where it declines: then :meth:`record_ns`), None without the kernel."""
        kernel = _native.kernel
        if kernel is None:
            return None
        observe: RequestObserver = functools.partial(kernel.observe_request_times, self._lock, self._requests,
                                                     self._times)
        return observe

    def record_ns(self, now: int, start: int, dequeued: int, local_end: int, remote_end: int, completed: int,
                  response_dequeued: int, sent: int) -> None:
        """:func:`observe_request_times_reference` of these instruments, in one kernel call when it is on."""
        kernel = _native.kernel
        if kernel is None or not kernel.observe_request_times(
                self._lock, self._requests, self._times, now, start, dequeued, local_end, remote_end, completed,
                response_dequeued, sent):
            observe_request_times_reference(self._lock, self._requests, self._times, now, start, dequeued, local_end,
                                            remote_end, completed, response_dequeued, sent)


class BrokerMetrics:
    """The registry: counters, histograms and gauges keyed by (metric name, labels)."""

    def __init__(self, time: Time = SYSTEM_TIME) -> None:
        self.time = time
        self._lock = threading.Lock()
        self._counters: dict[tuple[str, Labels], Counter] = {}
        self._histograms: dict[tuple[str, Labels], Histogram] = {}
        self._gauges: dict[tuple[str, Labels], Callable[[], float]] = {}
        # api name -> its request instruments; looked up without the lock
        self._request_instruments: dict[str, RequestInstruments] = {}
        self._request_locks: dict[str, threading.Lock] = {}
        self.network_processor_idle = IdleMeter(1, time)
        self.request_handler_idle = IdleMeter(1, time)
        self.gauge("kafka_network_SocketServer_NetworkProcessorAvgIdlePercent", self.network_processor_idle.value)
        self.gauge("kafka_server_KafkaRequestHandlerPool_RequestHandlerAvgIdlePercent", self.request_handler_idle.value)

    def counter(self, name: str, **labels: str) -> Counter:
        key = (name, tuple(sorted(labels.items())))
        with self._lock:
            c = self._counters.get(key)
            if c is None:
                c = self._counters[key] = Counter(self._request_lock(name, labels))
            return c

    def counters(self, *names: str) -> tuple[Counter, ...]:
        """The counters ``names`` (no labels), those made now sharing one lock (see :func:`inc_pair`); one made
        before keeps its own."""
        shared = threading.Lock()
        out = []
        with self._lock:
            for name in names:
                key = (name, ())
                c = self._counters.get(key)
                if c is None:
                    c = self._counters[key] = Counter(shared)
                out.append(c)
        return tuple(out)

    def histogram(self, name: str, **labels: str) -> Histogram:
        key = (name, tuple(sorted(labels.items())))
        with self._lock:
            h = self._histograms.get(key)
            if h is None:
                h = self._histograms[key] = Histogram(self._request_lock(name, labels))
            return h

    def _request_lock(self, name: str, labels: dict[str, str]) -> threading.Lock | None:
        """The lock every request instrument of one API shares (see :class:`RequestInstruments`); None (a lock
        of its own) for any other instrument. Called with the registry lock held."""
        api = labels.get("request")
        if api is None or len(labels) != 1 or not name.startswith(_REQUEST_METRIC_PREFIX):
            return None
        lock = self._request_locks.get(api)
        if lock is None:
            lock = self._request_locks[api] = threading.Lock()
        return lock

    def gauge(self, name: str, fn: Callable[[], float], **labels: str) -> None:
        with self._lock:
            self._gauges[(name, tuple(sorted(labels.items())))] = fn

    def remove_gauge(self, name: str, **labels: str) -> None:
        with self._lock:
            self._gauges.pop((name, tuple(sorted(labels.items()))), None)

    def gauge_value(self, name: str, **labels: str) -> float | None:
        with self._lock:
            fn = self._gauges.get((name, tuple(sorted(labels.items()))))
        return None if fn is None else fn()

    # --- request metrics -------------------------------------------------------------------------

    def record_request(self, api_name: str, times_ms: dict[str, float]) -> None:
        """One completed request: ``times_ms`` maps each of :data:`REQUEST_TIME_METRICS` to a duration."""
        self.counter("kafka_network_RequestMetrics_Requests_total", request=api_name).inc()
        for metric, v in times_ms.items():
            self.histogram(f"kafka_network_RequestMetrics_{metric}", request=api_name).update(v)

    def record_request_times(self, api_name: str, *times_ms: float) -> None:
        """Same as :meth:`record_request` with the durations positional, in :data:`REQUEST_TIME_METRICS`
        order (the instruments of an API are looked up once)."""
        instruments = self._request_instruments.get(api_name)
        if instruments is None:
            instruments = self._new_request_instruments(api_name)
        instruments.record(times_ms)

    def record_request_ns(self, api_name: str, now: int, start: int, dequeued: int, local_end: int, remote_end: int,
                          completed: int, response_dequeued: int, sent: int) -> None:
        """:meth:`record_request_times` of :func:`request_times_ms` of a request's timestamps (the per-request hot
        path: the times and the instruments' update in one kernel call when it is on)."""
        self.request_instruments(api_name).record_ns(now, start, dequeued, local_end, remote_end, completed,
                                                     response_dequeued, sent)

    def request_instruments(self, api_name: str) -> RequestInstruments:
        """The Requests counter and time histograms of ``api_name`` (made on first use): what
        :meth:`record_request_ns` records into, for a caller that keeps them (one lookup per API, not per request)."""
        instruments = self._request_instruments.get(api_name)
        return instruments if instruments is not None else self._new_request_instruments(api_name)

    def _new_request_instruments(self, api_name: str) -> RequestInstruments:
        requests = self.counter(f"{_REQUEST_METRIC_PREFIX}Requests_total", request=api_name)
        times = tuple(self.histogram(f"{_REQUEST_METRIC_PREFIX}{m}", request=api_name) for m in REQUEST_TIME_METRICS)
        with self._lock:
            lock = self._request_locks[api_name]
        instruments = self._request_instruments[api_name] = RequestInstruments(lock, requests, times)
        return instruments

    def record_error(self, api_name: str, error: str) -> None:
        self.counter("kafka_network_RequestMetrics_Errors_total", request=api_name, error=error).inc()

    # --- export ----------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, float]:
        """Flat view for tests and logs: ``name{k="v"}`` -> value (histograms as _count/_sum/_max)."""
        out: dict[str, float] = {}
        with self._lock:
            counters = list(self._counters.items())
            hists = list(self._histograms.items())
            gauges = list(self._gauges.items())
        for (name, labels), c in counters:
            out[_fmt(name, labels)] = c.value
        for (name, labels), h in hists:
            out[_fmt(name + "_count", labels)] = h.count
            out[_fmt(name + "_sum", labels)] = h.sum
            out[_fmt(name + "_max", labels)] = h.max
        for (name, labels), fn in gauges:
            try:
                out[_fmt(name, labels)] = float(fn())
            except Exception:  # a gauge of a closed component must not break the scrape
                continue
        return out

    def render_prometheus(self) -> str:
        """Prometheus text exposition format 0.0.4."""
        lines: list[str] = []
        with self._lock:
            counters = sorted(self._counters.items())
            hists = sorted(self._histograms.items())
            gauges = sorted(self._gauges.items(), key=lambda kv: kv[0])
        typed: set[str] = set()
        for (name, labels), c in counters:
            if name not in typed:
                lines.append(f"# TYPE {name} counter")
                typed.add(name)
            lines.append(f"{_fmt(name, labels)} {c.value}")
        for (name, labels), h in hists:
            if name not in typed:
                lines.append(f"# TYPE {name} summary")
                typed.add(name)
            lines.append(f"{_fmt(name + '_count', labels)} {h.count}")
            lines.append(f"{_fmt(name + '_sum', labels)} {h.sum:.3f}")
            lines.append(f"{_fmt(name + '_max', labels)} {h.max:.3f}")
        for (name, labels), fn in gauges:
            try:
                v = float(fn())
            except Exception:
                continue
            if name not in typed:
                lines.append(f"# TYPE {name} gauge")
                typed.add(name)
            lines.append(f"{_fmt(name, labels)} {v:g}")
        return "\n".join(lines) + "\n"


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _fmt(name: str, labels: Labels) -> str:
    if not labels:
        return name
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in labels)
    return f"{name}{{{inner}}}"


class MetricsHttpServer:
    """``GET /metrics`` in Prometheus text format, served by a stdlib ThreadingHTTPServer on a daemon thread."""

    def __init__(self, metrics: BrokerMetrics, host: str = "127.0.0.1", port: int = 0) -> None:
        registry = metrics

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?")[0] not in ("/metrics", "/"):
                    self.send_error(404)
                    return
                body = registry.render_prometheus().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return

        self._server = http.server.ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="metrics-http", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def shutdown(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

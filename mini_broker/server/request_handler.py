"""The request handler pool (Kafka: ``kafka.server.KafkaRequestHandler`` / ``KafkaRequestHandlerPool``).

``num.io.threads`` threads loop on ``RequestChannel.receive_request(300)`` and call the API layer's
``handle(request)``. An exception is logged and answered by closing that request's connection; it never
ends the thread. Time spent waiting for work feeds ``RequestHandlerAvgIdlePercent``.
"""

from __future__ import annotations

import logging
import threading
from typing import Protocol

from mini_broker.metrics import IdleMeter
from mini_broker.network.request_channel import (
    CallbackRequest,
    CloseConnectionResponse,
    Request,
    RequestChannel,
    ShutdownRequest,
)
from pykafka_client.utils.time import SYSTEM_TIME, Time

log = logging.getLogger(__name__)


class RequestApis(Protocol):
    """What a handler needs from the API layer."""

    def handle(self, request: Request) -> None: ...


class KafkaRequestHandler:
    """One handler thread."""

    def __init__(self, handler_id: int, channel: RequestChannel, apis: RequestApis, pool: KafkaRequestHandlerPool,
                 time: Time = SYSTEM_TIME) -> None:
        self.id = handler_id
        self._channel = channel
        self._apis = apis
        self._pool = pool
        self._time = time
        self._thread = threading.Thread(target=self.run, name=f"data-plane-kafka-request-handler-{handler_id}", daemon=True)
        self.stopped = threading.Event()

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def run(self) -> None:
        idle_meter = self._pool.idle_meter
        try:
            while True:
                t0 = self._time.nanoseconds()
                req = self._channel.receive_request(300)
                if idle_meter is not None:
                    idle_meter.record(self._time.nanoseconds() - t0)
                if req is None:
                    continue
                if isinstance(req, ShutdownRequest):
                    return
                if isinstance(req, CallbackRequest):
                    self._run_callback(req)
                    continue
                if isinstance(req, Request):
                    self._handle(req)
        finally:
            self.stopped.set()

    def _run_callback(self, req: CallbackRequest) -> None:
        try:
            req.fn()
        except Exception:
            log.exception("event=callback_failed connection=%s", req.original.connection_id)
            self._channel.send_response(CloseConnectionResponse(req.original))

    def _handle(self, req: Request) -> None:
        req.request_dequeue_time_ns = self._time.nanoseconds()
        try:
            self._apis.handle(req)
        except Exception:
            # KafkaApis answers its own errors; anything reaching here is a bug: fail this request only.
            log.exception("event=request_failed api_key=%s api_version=%s correlation_id=%s connection=%s",
                          req.context.api_key, req.context.api_version, req.context.correlation_id, req.connection_id)
            self._channel.send_response(CloseConnectionResponse(req))


class KafkaRequestHandlerPool:
    """``num_threads`` handler threads sharing one RequestChannel."""

    def __init__(self, channel: RequestChannel, apis: RequestApis, num_threads: int, time: Time = SYSTEM_TIME,
                 idle_meter: IdleMeter | None = None) -> None:
        self._channel = channel
        self.idle_meter = idle_meter
        if self.idle_meter is not None:
            self.idle_meter.threads = num_threads
        self.handlers = [KafkaRequestHandler(i, channel, apis, self, time) for i in range(num_threads)]

    def start(self) -> None:
        for h in self.handlers:
            h.start()

    def shutdown(self, timeout_s: float = 10.0) -> None:
        """Send one ShutdownRequest per thread and wait for them (Kafka's shutdown order)."""
        for _ in self.handlers:
            self._channel.send_shutdown_request()
        for h in self.handlers:
            h.join(timeout_s)

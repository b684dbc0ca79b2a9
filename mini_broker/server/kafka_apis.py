"""Request parsing and dispatch by ApiKey (Kafka: ``kafka.server.KafkaApis`` + ``RequestContext``).

Adding an API is one module under ``mini_broker/server/apis/`` that defines ``API = ApiSpec(...)`` and one
line in :data:`mini_broker.server.apis.registry.ALL_APIS`. The handler gets the :class:`KafkaApis` (for the
broker's components and to send responses) and the :class:`Request`; it returns the response body to send
now, or ``None`` when it answers later itself (delayed operations) through :meth:`KafkaApis.send_response`,
:meth:`KafkaApis.send_no_op_response` or :meth:`KafkaApis.close_connection`.

Parsing (on the processor thread): api keys that are not enabled and versions outside the enabled range close
the connection, except ApiVersions with a too-new version, which is answered in v0 with UNSUPPORTED_VERSION and
the supported ranges (KIP-511). The ApiVersions response header is always v0 (never flexible).
"""

from __future__ import annotations

import dataclasses
import logging
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from mini_broker.network.request_channel import (
    CloseConnectionResponse,
    NoOpResponse,
    Request,
    RequestChannel,
    RequestContext,
    Response,
    SendResponse,
)
from pykafka_client.errors import MessageDecodeError, UnknownApiKeyError, UnsupportedVersionError
from pykafka_client.protocol import headers
from pykafka_client.protocol.api_keys import REQUESTS, ApiKey
from pykafka_client.protocol.types import Message, Reader
from pykafka_client.utils.time import SYSTEM_TIME, Time

if TYPE_CHECKING:
    from mini_broker.metrics import BrokerMetrics
    from mini_broker.server.context import BrokerContext

log = logging.getLogger(__name__)
#: Kafka's kafka.request.logger: one DEBUG line per completed request.
request_log = logging.getLogger("mini_broker.request")

API_VERSIONS_KEY = 18
UNSUPPORTED_VERSION_CODE = 35

Handler = Callable[["KafkaApis", Request], object]


@dataclass(frozen=True)
class ApiSpec:
    """One API the broker serves: its key, the version range it advertises and implements, its handler."""

    api_key: ApiKey
    min_version: int
    max_version: int
    handler: Handler

    @property
    def name(self) -> str:
        return _api_name(int(self.api_key))


def _api_name(key: int) -> str:
    try:
        return "".join(p.capitalize() for p in ApiKey(key).name.split("_"))
    except ValueError:
        return f"Unknown{key}"


class KafkaApis:
    """Parses frames into requests (processor threads) and handles them (handler threads)."""

    def __init__(self, channel: RequestChannel, specs: list[ApiSpec], broker: BrokerContext | None = None,
                 metrics: BrokerMetrics | None = None, time: Time = SYSTEM_TIME) -> None:
        self.channel = channel
        self.specs: dict[int, ApiSpec] = {}
        for spec in specs:
            lo, hi = REQUESTS[spec.api_key].VALID_VERSIONS
            if not lo <= spec.min_version <= spec.max_version <= hi:
                raise ValueError(f"{spec.name}: versions {spec.min_version}-{spec.max_version} outside {lo}-{hi}")
            self.specs[int(spec.api_key)] = spec
        self._broker = broker
        self.metrics = metrics
        self.time = time

    @property
    def broker(self) -> BrokerContext:
        if self._broker is None:
            raise RuntimeError("KafkaApis has no broker context")
        return self._broker

    def supported_versions(self) -> list[tuple[int, int, int]]:
        """(api_key, min, max) for every enabled API, sorted by key (the ApiVersions answer)."""
        return sorted((k, s.min_version, s.max_version) for k, s in self.specs.items())

    # --- parsing (processor thread) --------------------------------------------------------------

    def parse_request(self, processor_id: int, connection_id: str, client_address: str, listener_name: str,
                      payload: memoryview, start_time_ns: int) -> Request:
        """Decode a frame into a :class:`Request`. Raises (-> the processor closes the connection) for
        unknown keys, disabled versions and undecodable bytes. Returns a request whose body is
        :class:`UnsupportedApiVersionsRequest` for the KIP-511 case."""
        if len(payload) < 8:
            raise MessageDecodeError(f"request of {len(payload)} bytes is shorter than a request header")
        api_key, api_version, correlation_id = struct.unpack_from(">hhi", payload, 0)
        spec = self.specs.get(api_key)
        if spec is None:
            raise UnknownApiKeyError(f"Unknown or disabled api key {api_key} (version {api_version})")
        if not spec.min_version <= api_version <= spec.max_version:
            if api_key == API_VERSIONS_KEY and api_version > spec.max_version:
                ctx = RequestContext(api_key, api_version, correlation_id, None, connection_id, client_address,
                                     listener_name, header_version=1)
                return Request(processor_id, ctx, UNSUPPORTED_API_VERSIONS, len(payload), start_time_ns)
            raise UnsupportedVersionError(f"{spec.name} version {api_version} is not enabled "
                                          f"(supported {spec.min_version}-{spec.max_version})")
        # Like Kafka's RequestContext.parseRequest: the body is read field by field and trailing bytes are
        # ignored (librdkafka sends some on Metadata v12), so the strict decode_request is not used here.
        header, offset = headers.decode_request_header(payload)
        reader = Reader(payload, offset)
        body = REQUESTS[spec.api_key].read(reader, api_version)
        if reader.remaining():
            log.debug("event=trailing_request_bytes api=%s version=%s bytes=%d", spec.name, api_version,
                      reader.remaining())
        ctx = RequestContext(api_key, api_version, correlation_id, header.client_id, connection_id, client_address,
                             listener_name, header_version=headers.request_header_version(api_key, api_version))
        return Request(processor_id, ctx, body, len(payload), start_time_ns)

    # --- dispatch (handler thread) ---------------------------------------------------------------

    def handle(self, request: Request) -> None:
        spec = self.specs[request.context.api_key]
        if request.body is UNSUPPORTED_API_VERSIONS:
            self._send_unsupported_api_versions(request)
            return
        try:
            body = spec.handler(self, request)
        except Exception:
            log.exception("event=handler_error api=%s version=%s correlation_id=%s connection=%s client_id=%s",
                          spec.name, request.context.api_version, request.context.correlation_id,
                          request.connection_id, request.context.client_id)
            if self.metrics is not None:
                self.metrics.record_error(spec.name, "UNKNOWN_SERVER_ERROR")
            self.close_connection(request)
            return
        finally:
            if request.api_local_complete_time_ns < 0:
                request.api_local_complete_time_ns = self.time.nanoseconds()
        if body is not None:
            assert isinstance(body, Message), f"{spec.name} handler returned {type(body).__name__}"
            self.send_response(request, body)

    # --- responses (any thread) -------------------------------------------------------------------

    def _mark_complete(self, request: Request) -> None:
        now = self.time.nanoseconds()
        if request.api_local_complete_time_ns < 0:
            request.api_local_complete_time_ns = now
        else:
            request.api_remote_complete_time_ns = now
        request.response_complete_time_ns = now

    def send_response(self, request: Request, body: Message, on_complete: Callable[[], None] | None = None) -> None:
        """Encode ``body`` at the request's version and queue it for the owning processor."""
        ctx = request.context
        try:
            fit_to_version(body, ctx.api_version)
            pieces = headers.encode_response(body, ctx.api_key, ctx.api_version, ctx.correlation_id)
        except Exception:
            # may run on a purgatory thread: never leave the channel muted without an answer
            log.exception("event=encode_failed api=%s version=%s correlation_id=%s connection=%s",
                          _api_name(ctx.api_key), ctx.api_version, ctx.correlation_id, request.connection_id)
            self.close_connection(request)
            return
        self._mark_complete(request)
        self.channel.send_response(SendResponse(request, list(pieces), _total_size(pieces), body, on_complete))

    def send_raw_response(self, request: Request, frame_pieces: list[object]) -> None:
        self._mark_complete(request)
        self.channel.send_response(SendResponse(request, frame_pieces, _total_size(frame_pieces)))

    def send_no_op_response(self, request: Request) -> None:
        self._mark_complete(request)
        self.channel.send_response(NoOpResponse(request))

    def close_connection(self, request: Request) -> None:
        self._mark_complete(request)
        self.channel.send_response(CloseConnectionResponse(request))

    def _send_unsupported_api_versions(self, request: Request) -> None:
        from pykafka_client.protocol.messages import ApiVersionsResponse

        resp = ApiVersionsResponse(
            error_code=UNSUPPORTED_VERSION_CODE,
            api_keys=[ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
                      for k, lo, hi in self.supported_versions()],
        )
        body = resp.encode(0)
        frame = struct.pack(">ii", len(body) + 4, request.context.correlation_id) + body
        self.send_raw_response(request, [frame])

    # --- metrics (processor thread, when the response is done) -------------------------------------

    def complete_response_metrics(self, response: Response, now_ns: int) -> None:
        r = response.request
        name = _api_name(r.context.api_key)
        if request_log.isEnabledFor(logging.DEBUG):
            request_log.debug("event=request_completed api=%s version=%d correlation_id=%d client_id=%s connection=%s "
                              "response=%s total_ms=%.3f", name, r.context.api_version, r.context.correlation_id,
                              r.context.client_id, r.connection_id, type(response).__name__,
                              (now_ns - r.start_time_ns) / 1e6)
        if self.metrics is None:
            return

        def ms(a: int, b: int) -> float:
            return max(0.0, (b - a) / 1e6) if a >= 0 and b >= 0 else 0.0

        local_end = r.api_local_complete_time_ns
        remote_end = r.api_remote_complete_time_ns if r.api_remote_complete_time_ns >= 0 else local_end
        self.metrics.record_request(name, {
            "TotalTimeMs": ms(r.start_time_ns, now_ns),
            "RequestQueueTimeMs": ms(r.start_time_ns, r.request_dequeue_time_ns),
            "LocalTimeMs": ms(r.request_dequeue_time_ns, local_end),
            "RemoteTimeMs": ms(local_end, remote_end),
            "ResponseQueueTimeMs": ms(r.response_complete_time_ns, r.response_dequeue_time_ns),
            "ResponseSendTimeMs": ms(r.response_dequeue_time_ns, now_ns) if isinstance(response, SendResponse) else 0.0,
        })


def fit_to_version(msg: Message, version: int) -> None:
    """Reset, recursively, every field that ``version`` does not have to its default, so handlers can fill a
    response once for all versions (the generated writer rejects non-default values of absent fields)."""
    defaults = _defaults(type(msg))
    for fs in type(msg)._SCHEMA:
        present = fs.versions is not None and fs.versions[0] <= version <= fs.versions[1]
        value = getattr(msg, fs.name)
        if not present:
            if fs.name in defaults:
                setattr(msg, fs.name, defaults[fs.name]())
            continue
        if isinstance(value, Message):
            fit_to_version(value, version)
        elif isinstance(value, list) and value and isinstance(value[0], Message):
            for item in value:
                fit_to_version(item, version)


def _const(v: object) -> Callable[[], object]:
    return lambda: v


_DEFAULTS_CACHE: dict[type, dict[str, Callable[[], object]]] = {}


def _defaults(cls: type) -> dict[str, Callable[[], object]]:
    cached = _DEFAULTS_CACHE.get(cls)
    if cached is None:
        cached = {}
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                cached[f.name] = _const(f.default)
            elif f.default_factory is not dataclasses.MISSING:
                cached[f.name] = f.default_factory
        _DEFAULTS_CACHE[cls] = cached
    return cached


class _UnsupportedApiVersions:
    """Marker body: an ApiVersions request at a version this broker does not know (KIP-511)."""

    def __repr__(self) -> str:
        return "UnsupportedApiVersionsRequest"


UNSUPPORTED_API_VERSIONS = _UnsupportedApiVersions()


def _total_size(pieces: object) -> int:
    total = 0
    for p in pieces:  # type: ignore[attr-defined]
        if isinstance(p, (bytes, bytearray)):
            total += len(p)
        elif isinstance(p, memoryview):
            total += p.nbytes
        else:
            total += int(p.length)
    return total


__all__ = ["ApiSpec", "KafkaApis"]

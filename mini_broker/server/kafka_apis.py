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
from typing import TYPE_CHECKING, Callable, Protocol

from mini_broker.network.request_channel import (
    ANONYMOUS_PRINCIPAL,
    CloseConnectionResponse,
    EndThrottlingResponse,
    NoOpResponse,
    Request,
    RequestChannel,
    RequestContext,
    Response,
    SendResponse,
    StartThrottlingResponse,
    new_request,
    new_request_context,
    new_send_response,
)
from mini_broker.quota.quota_manager import NANOS_TO_PERCENTAGE
from pykafka_client.errors import MessageDecodeError, UnknownApiKeyError, UnsupportedVersionError
from pykafka_client.protocol import headers
from pykafka_client.protocol.api_keys import REQUESTS, ApiKey
from pykafka_client.protocol.messages import ProduceRequest, RequestHeader
from pykafka_client.protocol.records import _native
from pykafka_client.protocol.types import Chunk, Message, Reader
from pykafka_client.utils.time import SYSTEM_TIME, Time, nanoseconds_clock

if TYPE_CHECKING:
    from mini_broker.metrics import BrokerMetrics, RequestInstruments, RequestObserver
    from mini_broker.quota.quota_manager import QuotaManagers
    from mini_broker.server.context import BrokerContext

log = logging.getLogger(__name__)
#: Kafka's kafka.request.logger: one DEBUG line per completed request.
request_log = logging.getLogger("mini_broker.request")

API_VERSIONS_KEY = 18
#: a request's api key, api version and correlation id
_REQUEST_HEADER_START = struct.Struct(">hhi")
UNSUPPORTED_VERSION_CODE = 35

Handler = Callable[["KafkaApis", Request], object]
RequestReader = Callable[[memoryview, int], "tuple[str | None, Message] | None"]
#: a compiled reader of a :data:`RequestReader`'s frames, called as ``read(payload, version, argument)`` (no Python
#: frame), with its argument; it returns what the reader returns or None where it declines (then the reader runs)
NativeRead = Callable[[memoryview, int, object], "tuple[str | None, Message] | None"]
NativeReader = tuple[NativeRead, object]
#: RequestReader -> a function giving its NativeReader when the kernel is loaded (else None): see native_reader
_NATIVE_READERS: dict[RequestReader, Callable[[], NativeReader | None]] = {}


def native_reader(reader: RequestReader, native: Callable[[], NativeReader | None]) -> None:
    """Register ``native`` as the way to ``reader``'s compiled reader: the parse plans call it directly."""
    _NATIVE_READERS[reader] = native


class ResponseGate(Protocol):
    """Holds the answers of ``api_keys`` until their condition holds."""

    api_keys: frozenset[int]

    def hold(self, request: Request, body: Message, release: Callable[[], None]) -> None:
        """Call ``release()`` once ``body`` may be sent; when the wait failed, ``body``'s error codes say so
        first (it is always answered, never dropped)."""
        ...

#: APIs a network thread (Processor) handles itself, right after parsing, instead of queueing them for a
#: handler thread: their handlers never block (Fetch reads the page cache and parks in the purgatory when
#: it has to wait; ApiVersions is a constant). Under the GIL the hop to a handler thread buys no
#: parallelism for them and costs more than the work (two queues, a wakeup, three loop rounds instead
#: of two). Group and admin APIs stay on the handler threads; so does Produce, except where
#: :attr:`KafkaApis.inline_produce` is set (see :meth:`KafkaApis.handles_inline`).
INLINE_API_KEYS: frozenset[int] = frozenset({int(ApiKey.FETCH), int(ApiKey.API_VERSIONS)})
_PRODUCE_KEY = int(ApiKey.PRODUCE)


@dataclass(frozen=True)
class ApiSpec:
    """One API the broker serves: its key, the version range it advertises and implements, its handler."""

    api_key: ApiKey
    min_version: int
    max_version: int
    handler: Handler
    #: a direct reader of whole request frames (header included) at some versions: (client id, body), or None to
    #: leave the frame to the generated reader (it must return exactly what that reader returns)
    read_request: RequestReader | None = None

    @property
    def name(self) -> str:
        return _api_name(int(self.api_key))


_API_NAMES: dict[int, str] = {}


def _api_name(key: int) -> str:
    name = _API_NAMES.get(key)
    if name is None:
        try:
            name = "".join(p.capitalize() for p in ApiKey(key).name.split("_"))
        except ValueError:
            return f"Unknown{key}"
        _API_NAMES[key] = name
    return name


class KafkaApis:
    """Parses frames into requests (processor threads) and handles them (handler threads)."""

    def __init__(self, channel: RequestChannel, specs: list[ApiSpec], broker: BrokerContext | None = None,
                 metrics: BrokerMetrics | None = None, time: Time = SYSTEM_TIME,
                 inline_api_keys: frozenset[int] = INLINE_API_KEYS) -> None:
        self.channel = channel
        self.specs: dict[int, ApiSpec] = {}
        for spec in specs:
            lo, hi = REQUESTS[spec.api_key].VALID_VERSIONS
            if not lo <= spec.min_version <= spec.max_version <= hi:
                raise ValueError(f"{spec.name}: versions {spec.min_version}-{spec.max_version} outside {lo}-{hi}")
            self.specs[int(spec.api_key)] = spec
        self._broker = broker
        self.metrics = metrics
        #: api key -> (the metrics they belong to, the API's request instruments, their observer): filled by
        #: complete_response_metrics; read by the processors' compiled response path (see response_metrics_parts)
        self.request_instruments: dict[int, tuple[BrokerMetrics, RequestInstruments, RequestObserver | None]] = {}
        self.time = time
        self._now_ns = nanoseconds_clock(time)  # a request's completion times (the C clock for the system time)
        # per-request lookups done once: request classes by key (the parse plans below: spec and header version)
        self._request_classes: dict[int, type[Message]] = {k: REQUESTS[s.api_key] for k, s in self.specs.items()}
        #: (api key << 16 | version's 16 bits) -> (spec, request header version, the spec's reader's compiled reader
        #: and its argument, or None, None), for the enabled pairs seen
        self._parse_plans: dict[int, tuple[ApiSpec, int, NativeRead | None,
                                           object]] = {}
        #: api keys the processors answer on their own thread (see :data:`INLINE_API_KEYS`)
        self.inline_api_keys: frozenset[int] = frozenset(k for k in inline_api_keys if k in self.specs)
        #: non-transactional Produce handled on the network thread too (set by a single broker, whose appends wait
        #: on nothing but the partition's log lock: an acks=all one not yet replicated would park in the purgatory;
        #: see :meth:`handles_inline`)
        self.inline_produce = False
        #: client quotas (None: not enforced); set by the broker before it serves requests
        self.quotas: QuotaManagers | None = None
        #: holds the answers of some APIs until a condition holds (a cluster broker: the coordinators' appends
        #: are on the ISR; see mini_broker.cluster.coordinator_partitions); None: answers go out at once
        self.response_gate: ResponseGate | None = None

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
        api_key, api_version, correlation_id = _REQUEST_HEADER_START.unpack_from(payload, 0)
        # (an int key: no tuple to build and hash per request; versions are int16, so the low 16 bits tell them apart)
        plan = self._parse_plans.get(api_key << 16 | api_version & 0xFFFF)
        if plan is None:
            plan = self._parse_plan(api_key, api_version)
            if plan is None:  # KIP-511: an ApiVersions too new, answered in v0
                ctx = RequestContext(api_key, api_version, correlation_id, None, connection_id, client_address,
                                     listener_name, header_version=1)
                return Request(processor_id, ctx, UNSUPPORTED_API_VERSIONS, len(payload), start_time_ns)
        spec, header_version, native, native_argument = plan
        # Like Kafka's RequestContext.parseRequest: the body is read field by field and trailing bytes are
        # ignored (librdkafka sends some on Metadata v12), so the strict decode_request is not used here.
        # One Reader for header and body.
        read_request = spec.read_request
        if read_request is not None:
            # (the compiled reader first, without the reader's frame; where it declines, the reader)
            # (the kernel still on: a test may switch it off after the plan was made)
            parsed = (native(payload, api_version, native_argument) if native is not None and _native.kernel is not None
                      else None)
            if parsed is None:
                parsed = read_request(payload, api_version)
            if parsed is not None:
                # (every field positional, the defaults spelled out: no __init__ frame, no keyword dict)
                ctx = new_request_context(api_key, api_version, correlation_id, parsed[0], connection_id,
                                          client_address, listener_name, header_version, ANONYMOUS_PRINCIPAL)
                return new_request(processor_id, ctx, parsed[1], len(payload), start_time_ns, -1, -1, -1, -1, -1)
        reader = Reader(payload, 0)
        header = RequestHeader.read(reader, header_version)
        body = self._request_classes[api_key].read(reader, api_version)
        if reader.remaining():
            log.debug("event=trailing_request_bytes api=%s version=%s bytes=%d", spec.name, api_version,
                      reader.remaining())
        ctx = new_request_context(api_key, api_version, correlation_id, header.client_id, connection_id, client_address,
                                  listener_name, header_version, ANONYMOUS_PRINCIPAL)
        return new_request(processor_id, ctx, body, len(payload), start_time_ns, -1, -1, -1, -1, -1)

    def _parse_plan(self, api_key: int, api_version: int) -> tuple[
            ApiSpec, int, NativeRead | None, object] | None:
        """The enabled API's spec and the request header version at ``api_version`` (kept for the next request of
        the pair); raises for an unknown or disabled key and a version outside the enabled range, except an
        ApiVersions too new (KIP-511): None."""
        spec = self.specs.get(api_key)
        if spec is None:
            raise UnknownApiKeyError(f"Unknown or disabled api key {api_key} (version {api_version})")
        if not spec.min_version <= api_version <= spec.max_version:
            if api_key == API_VERSIONS_KEY and api_version > spec.max_version:
                return None
            raise UnsupportedVersionError(f"{spec.name} version {api_version} is not enabled "
                                          f"(supported {spec.min_version}-{spec.max_version})")
        native_of = _NATIVE_READERS.get(spec.read_request) if spec.read_request is not None else None
        native = native_of() if native_of is not None else None
        plan = self._parse_plans[api_key << 16 | api_version & 0xFFFF] = (
            spec, headers.request_header_version(api_key, api_version), *(native or (None, None)))
        return plan

    def handles_inline(self, request: Request) -> bool:
        """Whether the network thread that parsed ``request`` handles it itself (:meth:`handle`, no handler-thread
        hop): the :attr:`inline_api_keys`, and with :attr:`inline_produce` a Produce without a transactional id
        (a transactional one may wait on the transaction coordinator's lock to be verified)."""
        key = request.context.api_key
        if key in self.inline_api_keys:
            return True
        if key == _PRODUCE_KEY and self.inline_produce:
            body = request.body
            return isinstance(body, ProduceRequest) and body.transactional_id is None
        return False

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
                request.api_local_complete_time_ns = self._now_ns()
        if body is not None:
            assert isinstance(body, Message), f"{spec.name} handler returned {type(body).__name__}"
            self.send_response(request, body)

    # --- responses (any thread) -------------------------------------------------------------------

    def _mark_complete(self, request: Request) -> None:
        now = self._now_ns()
        if request.api_local_complete_time_ns < 0:
            request.api_local_complete_time_ns = now
        else:
            request.api_remote_complete_time_ns = now
        request.response_complete_time_ns = now

    def send_response(self, request: Request, body: Message, on_complete: Callable[[], None] | None = None,
                      encoded: list[Chunk] | None = None) -> None:
        """Encode ``body`` at the request's version and queue it for the owning processor (once the
        :attr:`response_gate` lets it go, for the APIs it holds). ``encoded``: the frame of ``body`` at the
        request's version already (a handler's direct encoder), sent as is unless the gate or a quota changes
        the body first."""
        gate = self.response_gate
        if gate is not None and request.context.api_key in gate.api_keys:
            gate.hold(request, body, lambda: self._send_response(request, body, on_complete))
            return
        if encoded is not None and len(encoded) == 1:
            # a direct encoder's one frame (a Produce answer) with no quota to record: :meth:`_send_response`'s path
            # with fewer calls (no encoding, the size known)
            frame = encoded[0]
            if frame.__class__ is bytes and self.send_frame(request, frame, body, on_complete):
                return
        self._send_response(request, body, on_complete, encoded)

    def send_frame(self, request: Request, frame: bytes, body: Message | None = None,
                   on_complete: Callable[[], None] | None = None) -> bool:
        """Send ``frame``, the whole answer to ``request`` (size prefix included) as a direct encoder wrote it, when
        nothing would change its body first: no :attr:`response_gate` holds the request's API and no client quota
        is active (a quota records the request and may put a throttle time in the body). False when one may: nothing
        is sent, the caller answers with the body through :meth:`send_response`. ``body``: the response object the
        frame encodes when the caller has one (kept on the :class:`SendResponse` for logs), else None."""
        gate = self.response_gate
        if gate is not None and request.context.api_key in gate.api_keys:
            return False
        quotas = self.quotas
        if quotas is not None and quotas.any_active():
            return False
        self._mark_complete(request)
        self.channel.send_response(new_send_response(request, request.context.connection_id, [frame], len(frame), 0,
                                                     None, body, on_complete))
        return True

    def _send_response(self, request: Request, body: Message, on_complete: Callable[[], None] | None,
                       encoded: list[Chunk] | None = None) -> None:
        ctx = request.context
        try:
            if encoded is not None:
                pieces = encoded
            else:
                fit_to_version(body, ctx.api_version)
                pieces = headers.encode_response(body, ctx.api_key, ctx.api_version, ctx.correlation_id)
        except Exception:
            # may run on a purgatory thread: never leave the channel muted without an answer
            log.exception("event=encode_failed api=%s version=%s correlation_id=%s connection=%s",
                          _api_name(ctx.api_key), ctx.api_version, ctx.correlation_id, request.connection_id)
            self.close_connection(request)
            return
        size = _total_size(pieces)
        quotas = self.quotas
        if quotas is not None and quotas.any_active():
            throttle_ms = self._record_quotas(request, size)
            if throttle_ms > 0:
                pieces = self._throttle(request, body, throttle_ms, pieces)
                size = _total_size(pieces)
        self._mark_complete(request)
        self.channel.send_response(new_send_response(request, request.context.connection_id, list(pieces), size, 0, None,
                                                     body, on_complete))

    def _record_quotas(self, request: Request, response_size: int) -> int:
        """Record the request against the client quotas that apply; the throttle time (KIP-219)."""
        quotas = self.quotas
        assert quotas is not None
        ctx = request.context
        if ctx.api_key == API_VERSIONS_KEY:
            return 0
        user, client_id = ctx.principal, ctx.client_id or ""
        throttle = 0
        if ctx.api_key == ApiKey.PRODUCE and quotas.produce.active():
            throttle = quotas.produce.record_and_get_throttle_ms(user, client_id, request.size)
        elif ctx.api_key == ApiKey.FETCH and quotas.fetch.active() and getattr(request.body, "replica_id", -1) < 0:
            throttle = quotas.fetch.record_and_get_throttle_ms(user, client_id, response_size)
        if quotas.request.active() and request.request_dequeue_time_ns >= 0:
            thread_ns = self.time.nanoseconds() - request.request_dequeue_time_ns
            throttle = max(throttle, quotas.request.record_and_get_throttle_ms(
                user, client_id, thread_ns * NANOS_TO_PERCENTAGE))
        return throttle

    def _throttle(self, request: Request, body: Message, throttle_ms: int, pieces: list[Chunk]) -> list[Chunk]:
        """Put ``throttle_ms`` in the response and keep the channel muted that long after it (KIP-219)."""
        ctx = request.context
        self._start_throttling(request, throttle_ms)
        current = getattr(body, "throttle_time_ms", None)
        if not isinstance(current, int):
            return pieces
        body.__setattr__("throttle_time_ms", max(current, throttle_ms))
        fit_to_version(body, ctx.api_version)  # versions without the field: back to 0, the mute still holds
        return headers.encode_response(body, ctx.api_key, ctx.api_version, ctx.correlation_id)

    def send_raw_response(self, request: Request, frame_pieces: list[object]) -> None:
        self._mark_complete(request)
        self.channel.send_response(new_send_response(request, request.context.connection_id, frame_pieces,
                                                     _total_size(frame_pieces), 0, None, None, None))

    def send_no_op_response(self, request: Request) -> None:
        """Nothing to write (acks=0 produce): unmute. A quota still records it and throttles the channel
        (Kafka's acks=0 path: no response to carry throttle_time_ms, so only the mute holds the client)."""
        if self.quotas is not None and self.quotas.any_active():
            throttle_ms = self._record_quotas(request, 0)
            if throttle_ms > 0:
                self._start_throttling(request, throttle_ms)
        self._mark_complete(request)
        self.channel.send_response(NoOpResponse(request))

    def _start_throttling(self, request: Request, throttle_ms: int) -> None:
        """StartThrottling now (queued before the answer), EndThrottling after ``throttle_ms`` (KIP-219)."""
        quotas = self.quotas
        assert quotas is not None and quotas.reaper is not None
        self.channel.send_response(StartThrottlingResponse(request))
        quotas.reaper.add(throttle_ms, lambda: self.channel.send_response(EndThrottlingResponse(request)))

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

    def response_metrics_parts(self) -> tuple[logging.Logger, dict[int, tuple[BrokerMetrics, RequestInstruments,
                                                                           RequestObserver | None]]] | None:
        """What a compiled :meth:`complete_response_metrics` of a SendResponse reads: the request logger (on at DEBUG:
        this method runs) and :attr:`request_instruments` (an api key not there, or there for other metrics: this
        method runs); None where this method is overridden (it always runs)."""
        if type(self).complete_response_metrics is not KafkaApis.complete_response_metrics:
            return None
        return request_log, self.request_instruments

    def complete_response_metrics(self, response: Response, now_ns: int) -> None:
        r = response.request
        ctx = r.context
        if request_log.isEnabledFor(logging.DEBUG):
            request_log.debug("event=request_completed api=%s version=%d correlation_id=%d client_id=%s connection=%s "
                              "response=%s total_ms=%.3f", _api_name(ctx.api_key), ctx.api_version,
                              ctx.correlation_id, ctx.client_id, r.connection_id, type(response).__name__,
                              (now_ns - r.start_time_ns) / 1e6)
        metrics = self.metrics
        if metrics is None:
            return
        # (BrokerMetrics.record_request_ns of the API's name, its instruments kept here by api key: no name lookup,
        # no frame of its own per request)
        instruments = self.request_instruments.get(ctx.api_key)
        if instruments is None or instruments[0] is not metrics:
            made = metrics.request_instruments(_api_name(ctx.api_key))
            instruments = self.request_instruments[ctx.api_key] = (metrics, made, made.observer())
        # a response that wrote nothing has no send time
        times = (now_ns, r.start_time_ns, r.request_dequeue_time_ns, r.api_local_complete_time_ns,
                 r.api_remote_complete_time_ns, r.response_complete_time_ns, r.response_dequeue_time_ns,
                 now_ns if isinstance(response, SendResponse) else -1)
        observe = instruments[2]
        if observe is None or not observe(*times):  # (the kernel's, no frame of its own; else or where it declines:)
            instruments[1].record_ns(*times)


def fit_to_version(msg: Message, version: int) -> None:
    """Reset, recursively, every field that ``version`` does not have to its default, so handlers can fill a
    response once for all versions (the generated writer rejects non-default values of absent fields)."""
    cls = type(msg)
    complete = _COMPLETE_AT.get((cls, version))
    if complete is None:
        complete = _complete_at(cls, version, cls, set())
    if complete:
        return  # every field of the whole tree is in this version: nothing to reset, no walk through the lists
    absent, structs = _fit_plan(cls, version)
    for name, default in absent:
        setattr(msg, name, default())
    for name in structs:
        value = getattr(msg, name)
        if isinstance(value, Message):
            fit_to_version(value, version)
        elif isinstance(value, list) and value and isinstance(value[0], Message):
            for item in value:
                fit_to_version(item, version)


_PRIMITIVE_TYPES = frozenset({"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "string",
                              "bytes", "uuid", "records"})
_FitPlan = tuple[tuple[tuple[str, Callable[[], object]], ...], tuple[str, ...]]
_FIT_PLANS: dict[tuple[type, int], _FitPlan] = {}


def _fit_plan(cls: type[Message], version: int) -> _FitPlan:
    """For ``cls`` at ``version``: (absent fields with a default and its factory, present struct-typed fields)."""
    plan = _FIT_PLANS.get((cls, version))
    if plan is None:
        defaults = _defaults(cls)
        absent: list[tuple[str, Callable[[], object]]] = []
        structs: list[str] = []
        for fs in cls._SCHEMA:
            if fs.versions is not None and fs.versions[0] <= version <= fs.versions[1]:
                if fs.type.removeprefix("[]") not in _PRIMITIVE_TYPES:
                    structs.append(fs.name)
            elif fs.name in defaults:
                absent.append((fs.name, defaults[fs.name]))
        plan = _FIT_PLANS[(cls, version)] = (tuple(absent), tuple(structs))
    return plan


#: (message class, version) -> whether no struct reachable from it through the fields of that version has a field
#: the version lacks (fit_to_version has nothing to do on it)
_COMPLETE_AT: dict[tuple[type, int], bool] = {}


def _complete_at(cls: type[Message], version: int, root: type[Message], seen: set[type]) -> bool:
    """Compute (and cache) :data:`_COMPLETE_AT` for ``cls``: its plan resets nothing and every struct type of its
    present fields is complete too. A struct type that cannot be resolved (a name neither ``cls`` nor the top-level
    ``root`` defines) counts as incomplete: :func:`fit_to_version` then walks the values as before."""
    cached = _COMPLETE_AT.get((cls, version))
    if cached is not None:
        return cached
    if cls in seen:  # a recursive struct: its own fields decide, checked where the walk entered it
        return True
    seen.add(cls)
    absent, structs = _fit_plan(cls, version)
    complete = not absent
    if complete and structs:
        types = {fs.name: fs.type.removeprefix("[]") for fs in cls._SCHEMA}
        for name in structs:
            struct_cls = getattr(cls, types[name], None) or getattr(root, types[name], None)
            if not (isinstance(struct_cls, type) and issubclass(struct_cls, Message)
                    and _complete_at(struct_cls, version, root, seen)):
                complete = False
                break
    seen.discard(cls)
    if cls is root or not complete:
        _COMPLETE_AT[(cls, version)] = complete
    return complete


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
    if len(pieces) == 1:  # type: ignore[arg-type]
        first = pieces[0]  # type: ignore[index]
        if first.__class__ is bytes:  # a direct encoder's one frame
            return len(first)
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

"""A direct encoder for the ProduceResponse frames the broker sends and a direct reader for the ProduceRequest frames
it receives (#27: the broker's CPU per produce request).

:func:`encode_produce_response` writes the whole frame (size prefix, response header, body) of a ProduceResponse
at v3-v11 in one pass: one struct pack per partition and one join, instead of the generated codec's Writer, its
call per struct and its default-value checks. It covers what the Produce handler answers on its usual paths:
any error codes and messages, record errors, log append time and log start offset. Anything else (a current
leader or node endpoints: KIP-951 hints on a cluster broker; a version outside v3-v11; a value the wire cannot
hold) returns None and the caller encodes with the generated codec (``fit_to_version`` then
``headers.encode_response``), which also raises the errors for bad values. The bytes are the generated codec's
for the same body after ``fit_to_version`` (tests/unit/broker/test_produce_wire.py checks it over every version).

The body must have been built by the broker (no unknown tagged fields: the encoder writes none).

:func:`read_produce_request` reads a ProduceRequest frame (header and body, v3-v11) with ``struct.unpack_from`` on
the frame itself into the same objects the generated reader makes (records stay views into the frame). Anything it
does not take (tagged fields, null or non-UTF-8 strings, a length past the frame, trailing bytes) returns None and
the caller reads the frame with the generated reader, which raises the same errors as always.
"""

from __future__ import annotations

import struct
from typing import cast

from mini_broker.server.kafka_apis import NativeRead, NativeReader, native_reader
from pykafka_client.protocol.messages import ProduceRequest, ProduceResponse
from pykafka_client.protocol.records import _native
from pykafka_client.protocol.types import Chunk, Writer

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_FRAME_V0 = struct.Struct(">ii")  # size prefix, correlation id
_PART_V3 = struct.Struct(">ihqq")  # index, error code, base offset, log append time
_PART_V5 = struct.Struct(">ihqqq")  # ... log start offset
_MAX_STRING = 0x7FFF
_LEADER_CLASS = ProduceResponse.LeaderIdAndEpoch
#: compact varints of small counts and lengths (n + 1 for n < 127), precomputed
_SMALL_VARINTS = tuple(bytes((i,)) for i in range(128))
_NULL_STRING = b"\xff\xff"
_EMPTY_TAGS = b"\x00"
_NO_RECORD_ERRORS_V8 = b"\x00\x00\x00\x00"

MIN_VERSION = 3
MAX_VERSION = 11
_FIRST_FLEXIBLE = 9


class _Unencodable(Exception):
    """Something the direct encoder leaves to the generated codec."""


def _uvarint(n: int) -> bytes:
    if n < 128:
        return _SMALL_VARINTS[n]
    w = Writer()
    w.write_unsigned_varint(n)
    return w.to_bytes()


def _string(s: str, flexible: bool) -> bytes:
    b = s.encode("utf-8")
    if len(b) > _MAX_STRING:
        raise _Unencodable
    return _uvarint(len(b) + 1) + b if flexible else _I16.pack(len(b)) + b


def _nullable_string(s: str | None, flexible: bool) -> bytes:
    if s is None:
        return _EMPTY_TAGS if flexible else _NULL_STRING
    return _string(s, flexible)


def _record_errors(errors: list[ProduceResponse.BatchIndexAndErrorMessage], flexible: bool) -> bytes:
    if flexible:
        parts = [_uvarint(len(errors) + 1)]
        for e in errors:
            parts += (_I32.pack(e.batch_index), _nullable_string(e.batch_index_error_message, True), _EMPTY_TAGS)
    else:
        parts = [_I32.pack(len(errors))]
        for e in errors:
            parts += (_I32.pack(e.batch_index), _nullable_string(e.batch_index_error_message, False))
    return b"".join(parts)


def encode_produce_response(body: ProduceResponse, version: int, correlation_id: int) -> list[Chunk] | None:
    """The frame of ``body`` at ``version`` as one piece, or None to leave it to the generated codec (see the module
    doc)."""
    kernel = _native.kernel
    if kernel is not None:  # the usual answer (no record errors, messages or leader hints) in one call
        frame = kernel.encode_produce_response(body, version, correlation_id, _LEADER_CLASS)
        if frame is not None:
            return [frame]
    if not MIN_VERSION <= version <= MAX_VERSION or body.node_endpoints:
        return None
    try:
        return [_encode(body, version, correlation_id)]
    except (_Unencodable, struct.error, OverflowError, UnicodeEncodeError, AttributeError, TypeError):
        return None


#: a partition's bytes after its fixed fields when it has no record errors and no error message, by version
_PLAIN_TAILS = {v: (b"" if v < 8 else _NO_RECORD_ERRORS_V8 + _NULL_STRING if v < _FIRST_FLEXIBLE
                    else _SMALL_VARINTS[1] + _EMPTY_TAGS + _EMPTY_TAGS) for v in range(MIN_VERSION, MAX_VERSION + 1)}
#: topic names as written (compact or not), kept for the names seen (bounded: cleared past _MAX_NAMES)
_NAMES: dict[tuple[str, bool], bytes] = {}
_MAX_NAMES = 4096


def _topic_name(name: str, flexible: bool) -> bytes:
    key = (name, flexible)
    written = _NAMES.get(key)
    if written is None:
        written = _string(name, flexible)
        if len(_NAMES) >= _MAX_NAMES:
            _NAMES.clear()
        _NAMES[key] = written
    return written


def _encode(body: ProduceResponse, version: int, correlation_id: int) -> bytes:
    flexible = version >= _FIRST_FLEXIBLE
    with_messages = version >= 8  # record errors and the error message
    v5 = version >= 5
    part_struct = _PART_V5 if v5 else _PART_V3
    plain_tail = _PLAIN_TAILS[version]
    responses = body.responses
    parts: list[bytes] = [b"", _uvarint(len(responses) + 1) if flexible else _I32.pack(len(responses))]
    append = parts.append
    for topic in responses:
        partitions = topic.partition_responses
        append(_topic_name(topic.name, flexible))
        append(_uvarint(len(partitions) + 1) if flexible else _I32.pack(len(partitions)))
        for p in partitions:
            leader = p.current_leader  # == the default (without the dataclass __eq__: one check per partition)
            if leader.__class__ is not _LEADER_CLASS or leader.leader_id != -1 or leader.leader_epoch != -1:
                raise _Unencodable
            if v5:
                fixed = part_struct.pack(p.index, p.error_code, p.base_offset, p.log_append_time_ms,
                                         p.log_start_offset)
            else:
                fixed = part_struct.pack(p.index, p.error_code, p.base_offset, p.log_append_time_ms)
            if not with_messages or (not p.record_errors and p.error_message is None):
                append(fixed + plain_tail)
                continue
            append(fixed)
            errors = p.record_errors
            if errors:
                append(_record_errors(errors, flexible))
            else:
                append(_SMALL_VARINTS[1] if flexible else _NO_RECORD_ERRORS_V8)
            append(_nullable_string(p.error_message, flexible))
            if flexible:
                append(_EMPTY_TAGS)
        if flexible:
            append(_EMPTY_TAGS)
    append(_I32.pack(body.throttle_time_ms) + _EMPTY_TAGS if flexible else _I32.pack(body.throttle_time_ms))
    size = sum(map(len, parts)) + 4 + (1 if flexible else 0)  # + the header: correlation id (and its tags)
    parts[0] = _FRAME_V0.pack(size, correlation_id) + (_EMPTY_TAGS if flexible else b"")
    return b"".join(parts)


_U8 = struct.Struct(">B").unpack_from
_I16_AT = _I16.unpack_from
_I32_AT = _I32.unpack_from
_HI_AT = struct.Struct(">hi").unpack_from
_TopicData = ProduceRequest.TopicProduceData
_PartitionData = ProduceRequest.PartitionProduceData
_HEADER_FIXED = 8  # api key, api version, correlation id


class _NotTaken(Exception):
    """Something the direct reader leaves to the generated reader."""


class _Cursor:
    """Reads the fields of one frame; raises :class:`_NotTaken` where the generated reader would decide."""

    __slots__ = ("buf", "end", "flexible", "pos")

    def __init__(self, buf: memoryview, pos: int, flexible: bool) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf)
        self.flexible = flexible

    def length(self) -> int:
        """A length or count: int16/int32 (non-flexible) or unsigned varint n+1 (flexible); -1 for null."""
        pos = self.pos
        if self.flexible:
            if pos >= self.end:
                raise _NotTaken
            buf = self.buf
            b = buf[pos]
            if b < 0x80:
                self.pos = pos + 1
                return b - 1
            # a longer varint (a records field of 127+ bytes): up to 4 bytes here (28 bits, past any frame);
            # longer ones are the generated reader's to judge
            value, shift = b & 0x7F, 7
            for i in range(pos + 1, min(pos + 4, self.end)):
                b = buf[i]
                value |= (b & 0x7F) << shift
                if b < 0x80:
                    self.pos = i + 1
                    return value - 1
                shift += 7
            raise _NotTaken
        (n,) = _I32_AT(self.buf, pos)
        self.pos = pos + 4
        return int(n)

    def string(self, nullable: bool) -> str | None:
        buf, pos = self.buf, self.pos
        if self.flexible:
            n = self.length()
            pos = self.pos
        else:
            (n,) = _I16_AT(buf, pos)
            pos += 2
        if n < 0:
            if n == -1 and nullable:
                self.pos = pos
                return None
            raise _NotTaken
        if pos + n > self.end:
            raise _NotTaken
        self.pos = pos + n
        return str(buf[pos:pos + n], "utf-8")

    def no_tags(self) -> None:
        if self.flexible:
            if self.pos >= self.end or self.buf[self.pos] != 0:
                raise _NotTaken
            self.pos += 1


def read_produce_request(payload: memoryview, version: int) -> tuple[str | None, ProduceRequest] | None:
    """(client id, body) of a whole ProduceRequest frame at ``version`` (header included), or None to leave it to
    the generated reader (see the module doc). The compiled kernel's ``read_produce_request`` when it is on (the
    common frame: header and body in one call), else or where it declines :func:`_read`, its reference."""
    kernel = _native.kernel
    if kernel is not None:
        parsed = kernel.read_produce_request(payload, version, ProduceRequest)
        if parsed is not None:
            return parsed
    if not MIN_VERSION <= version <= MAX_VERSION or payload.format != "B" or payload.ndim != 1:
        return None
    try:
        return _read(payload, version)
    except (_NotTaken, struct.error, UnicodeDecodeError):
        return None


def _native_read_produce_request() -> NativeReader | None:
    """The kernel's reader and its argument (what :func:`read_produce_request` calls first), None without it."""
    kernel = _native.kernel
    return None if kernel is None else (cast("NativeRead", kernel.read_produce_request), ProduceRequest)


native_reader(read_produce_request, _native_read_produce_request)


def _read(buf: memoryview, version: int) -> tuple[str | None, ProduceRequest]:
    flexible = version >= _FIRST_FLEXIBLE
    header = _Cursor(buf, _HEADER_FIXED, False)  # the client id is never a compact string
    client_id = header.string(True)
    r = _Cursor(buf, header.pos, flexible)
    r.no_tags()  # the header's
    transactional_id = r.string(True)
    acks, timeout_ms = _HI_AT(buf, r.pos)
    r.pos += 6
    topic_count = r.length()
    if topic_count < 0 or topic_count > r.end - r.pos:
        raise _NotTaken
    end = r.end
    topics = []
    for _ in range(topic_count):
        name = r.string(False)
        assert name is not None
        partition_count = r.length()
        if partition_count < 0 or partition_count > end - r.pos:
            raise _NotTaken
        partitions = []
        for _ in range(partition_count):
            (index,) = _I32_AT(buf, r.pos)
            r.pos += 4
            n = r.length()
            pos = r.pos
            if n < 0:
                if n != -1:
                    raise _NotTaken
                records = None
            elif pos + n > end:
                raise _NotTaken
            else:
                records = buf[pos:pos + n]
                r.pos = pos + n
            r.no_tags()
            partitions.append(_PartitionData(index, records, None))
        r.no_tags()
        topics.append(_TopicData(name, partitions, None))
    r.no_tags()
    if r.pos != end:
        raise _NotTaken
    return client_id, ProduceRequest(transactional_id, acks, timeout_ms, topics, None)


__all__ = ["MAX_VERSION", "MIN_VERSION", "encode_produce_response", "read_produce_request"]

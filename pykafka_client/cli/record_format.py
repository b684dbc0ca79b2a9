"""kcat-style output formats for ``pykafka consume --format``: ``%t`` topic, ``%p`` partition, ``%o``
offset, ``%T`` timestamp (ms), ``%k`` key, ``%s`` value, ``%h`` headers (``k=v,k2=v2``), ``%K`` / ``%S``
key / value length (-1 for null), ``%%`` a percent sign; escapes ``\\n``, ``\\r``, ``\\t``, ``\\\\``.
Keys, values and headers are written as their bytes, unchanged. :class:`MessageFormat` renders records as
Kafka's console consumer does (its ``print.*`` properties)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from pykafka_client.consumer.consumer_record import ConsumerRecord, TimestampType


class RecordRenderer(Protocol):
    """Turns a record into the bytes a console consumer prints for it."""

    def render(self, record: ConsumerRecord[Any, Any]) -> bytes: ...


Part = Callable[[ConsumerRecord[Any, Any]], bytes]

_ESCAPES = {"n": b"\n", "r": b"\r", "t": b"\t", "\\": b"\\"}


def _length(b: bytes | None) -> bytes:
    return str(-1 if b is None else len(b)).encode()


def _headers(headers: Sequence[tuple[str, bytes | None]]) -> bytes:
    return b",".join(k.encode("utf-8") + b"=" + (v or b"") for k, v in headers)


_FIELDS: dict[str, Part] = {
    "t": lambda r: r.topic.encode("utf-8"),
    "p": lambda r: str(r.partition).encode(),
    "o": lambda r: str(r.offset).encode(),
    "T": lambda r: str(r.timestamp).encode(),
    "k": lambda r: r.key or b"",
    "s": lambda r: r.value or b"",
    "h": lambda r: _headers(r.headers),
    "K": lambda r: _length(r.key),
    "S": lambda r: _length(r.value),
}


class RecordFormat:
    """A compiled ``--format`` string; ``render(record)`` gives the bytes to write."""

    def __init__(self, spec: str) -> None:
        self.parts: list[bytes | Part] = []
        literal = bytearray()
        i = 0
        while i < len(spec):
            c = spec[i]
            if c in "%\\" and i + 1 < len(spec):
                nxt = spec[i + 1]
                if c == "%" and nxt == "%":
                    literal += b"%"
                elif c == "%" and nxt in _FIELDS:
                    if literal:
                        self.parts.append(bytes(literal))
                        literal.clear()
                    self.parts.append(_FIELDS[nxt])
                elif c == "\\" and nxt in _ESCAPES:
                    literal += _ESCAPES[nxt]
                else:
                    raise ValueError(
                        f"unknown {'field' if c == '%' else 'escape'} {c}{nxt} in --format {spec!r} "
                        "(fields: %t %p %o %T %k %s %h %K %S %%; escapes: \\n \\r \\t \\\\)"
                    )
                i += 2
                continue
            if c in "%\\":
                raise ValueError(f"--format {spec!r} ends with a lone {c!r}")
            literal += c.encode("utf-8")
            i += 1
        if literal:
            self.parts.append(bytes(literal))

    def render(self, record: ConsumerRecord[Any, Any]) -> bytes:
        return b"".join(p if isinstance(p, bytes) else p(record) for p in self.parts)


class MessageFormat:
    """A record as Kafka's console consumer prints it (its default formatter's ``print.*`` properties): the
    timestamp (``CreateTime:ms``, ``LogAppendTime:ms`` or ``NO_TIMESTAMP``), ``Partition:N``, ``Offset:N``,
    the headers (``k:v`` joined by ``headers_separator``, ``NO_HEADERS`` when none), the key and the value,
    each one asked for followed by ``key_separator`` when another comes after it; a null key, value or
    header value is ``null_literal``; then ``line_separator``."""

    def __init__(self, print_timestamp: bool = False, print_partition: bool = False, print_offset: bool = False,
                 print_headers: bool = False, print_key: bool = False, print_value: bool = True,
                 key_separator: bytes = b"\t", line_separator: bytes = b"\n", headers_separator: bytes = b",",
                 null_literal: bytes = b"null") -> None:
        self.fields: list[Part] = []
        if print_timestamp:
            self.fields.append(_timestamp)
        if print_partition:
            self.fields.append(lambda r: b"Partition:" + str(r.partition).encode())
        if print_offset:
            self.fields.append(lambda r: b"Offset:" + str(r.offset).encode())
        if print_headers:
            self.fields.append(lambda r: headers_separator.join(
                k.encode("utf-8") + b":" + (null_literal if v is None else v) for k, v in r.headers) or b"NO_HEADERS")
        if print_key:
            self.fields.append(lambda r: null_literal if r.key is None else bytes(r.key))
        if print_value:
            self.fields.append(lambda r: null_literal if r.value is None else bytes(r.value))
        self.key_separator = key_separator
        self.line_separator = line_separator

    def render(self, record: ConsumerRecord[Any, Any]) -> bytes:
        return self.key_separator.join(f(record) for f in self.fields) + self.line_separator


_TIMESTAMP_NAMES = {TimestampType.CREATE_TIME: b"CreateTime:", TimestampType.LOG_APPEND_TIME: b"LogAppendTime:"}


def _timestamp(record: ConsumerRecord[Any, Any]) -> bytes:
    name = _TIMESTAMP_NAMES.get(record.timestamp_type)
    return b"NO_TIMESTAMP" if name is None else name + str(record.timestamp).encode()

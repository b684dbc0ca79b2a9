"""kcat-style output formats for ``pykafka consume --format``: ``%t`` topic, ``%p`` partition, ``%o``
offset, ``%T`` timestamp (ms), ``%k`` key, ``%s`` value, ``%h`` headers (``k=v,k2=v2``), ``%K`` / ``%S``
key / value length (-1 for null), ``%%`` a percent sign; escapes ``\\n``, ``\\r``, ``\\t``, ``\\\\``.
Keys, values and headers are written as their bytes, unchanged."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pykafka_client.consumer.consumer_record import ConsumerRecord

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

"""The decoded record (Java ``Record``): an immutable named tuple.

``key``/``value`` are ``bytes`` or ``None``; ``headers`` is a list of ``(key, value)`` pairs where the
key is a ``str`` and the value ``bytes`` or ``None``. Header keys are decoded as UTF-8 with
``surrogateescape`` so that any bytes round-trip exactly. A named tuple because decoders create one
per record on the hot path and ``tuple.__new__`` is the cheapest object construction in CPython.
"""

from __future__ import annotations

from typing import NamedTuple

from pykafka_client.protocol.records.timestamp_type import TimestampType

Header = tuple[str, "bytes | None"]


class Record(NamedTuple):
    """One record of a batch, with its absolute offset and effective timestamp.

    For a batch with ``LOG_APPEND_TIME`` the timestamp is the batch's max timestamp, as in Java.
    """

    offset: int
    timestamp: int
    timestamp_type: TimestampType
    key: bytes | None
    value: bytes | None
    headers: list[Header]

    def has_key(self) -> bool:
        return self.key is not None

    def has_value(self) -> bool:
        return self.value is not None

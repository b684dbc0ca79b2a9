"""The decoded record (Java ``Record``): a small slotted value object.

``key``/``value`` are ``bytes`` or ``None``; ``headers`` is a list of ``(key, value)`` pairs where the
key is a ``str`` and the value ``bytes`` or ``None``. Header keys are decoded as UTF-8 with
``surrogateescape`` so that any bytes round-trip exactly.
"""

from __future__ import annotations

from pykafka_client.protocol.records.record_batch import TimestampType

Header = tuple[str, "bytes | None"]


class Record:
    """One record of a batch, with its absolute offset and effective timestamp.

    For a batch with ``LOG_APPEND_TIME`` the timestamp is the batch's max timestamp, as in Java.
    """

    __slots__ = ("headers", "key", "offset", "timestamp", "timestamp_type", "value")

    def __init__(
        self,
        offset: int,
        timestamp: int,
        timestamp_type: TimestampType,
        key: bytes | None,
        value: bytes | None,
        headers: list[Header],
    ) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.timestamp_type = timestamp_type
        self.key = key
        self.value = value
        self.headers = headers

    def has_key(self) -> bool:
        return self.key is not None

    def has_value(self) -> bool:
        return self.value is not None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record):
            return NotImplemented
        return (
            self.offset == other.offset
            and self.timestamp == other.timestamp
            and self.timestamp_type == other.timestamp_type
            and self.key == other.key
            and self.value == other.value
            and self.headers == other.headers
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"Record(offset={self.offset}, timestamp={self.timestamp}, "
            f"timestamp_type={self.timestamp_type.name}, key={self.key!r}, value={self.value!r}, "
            f"headers={self.headers!r})"
        )

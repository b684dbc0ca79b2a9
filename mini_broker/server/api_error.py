"""An exception as the (error code, error message) pair of a response (Kafka: ``ApiError.fromThrowable``).

The code is its own field, and a client prints ``[Error <code>] <NAME>: <message>``, so the message field
carries only the exception's own message: never ``str(exc)`` of a broker error, which already holds the code
and name (the text came out doubled). A broker error raised without a message sends none (null), as Kafka
does for a generic one; the client then shows the error's standard description.
"""

from __future__ import annotations

from pykafka_client.errors import CorruptRecordError, KafkaStorageError, MessageDecodeError, UnknownServerError
from pykafka_client.errors_base import BrokerResponseError


def error_code(e: BaseException) -> int:
    """The wire error code for ``e``: its own for a broker error, else the closest Kafka code."""
    if isinstance(e, BrokerResponseError):
        return int(e.code)
    if isinstance(e, MessageDecodeError):
        return CorruptRecordError.code
    if isinstance(e, OSError):
        return KafkaStorageError.code
    return UnknownServerError.code


def error_message(e: BaseException) -> str | None:
    """The text for an ``error_message`` field: the exception's message only (None when it has none)."""
    if isinstance(e, BrokerResponseError):
        return e.message or None
    return str(e) or None

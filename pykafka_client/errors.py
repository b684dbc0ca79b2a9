"""Every exception pykafka_client raises, in one place.

* :class:`KafkaError` is the root. ``RetriableError`` / ``InvalidMetadataError`` mark errors worth
  retrying (the latter after a metadata refresh).
* Broker error codes map to one class each (``errors_generated``); :func:`for_code` looks one up and
  :func:`raise_for_code` raises it for a non-zero code.
* Client-side errors (configuration, state, timeouts, wakeups, bad bytes on the wire) are below.
"""

from __future__ import annotations

from pykafka_client.errors_base import (
    BrokerResponseError,
    InvalidMetadataError,
    KafkaError,
    RetriableError,
)
from pykafka_client.errors_generated import *  # noqa: F403
from pykafka_client.errors_generated import BROKER_ERRORS, UnknownServerError
from pykafka_client.errors_generated import __all__ as _generated_all

# Every public name, so ``from pykafka_client.errors import KafkaError`` type-checks under
# ``mypy --strict`` (no implicit re-export). tests/unit/test_errors.py checks nothing is missing.
__all__ = [
    "BROKER_ERRORS",
    "AuthenticationError",
    "BrokerResponseError",
    "BufferExhaustedError",
    "CommitFailedError",
    "ConcurrentModificationError",
    "ConfigurationError",
    "CorrelationIdMismatchError",
    "DisconnectError",
    "IllegalArgumentError",
    "IllegalStateError",
    "InvalidMetadataError",
    "InvalidOffsetError",
    "InvalidReceiveError",
    "KafkaError",
    "KafkaTimeoutError",
    "LogTruncationError",
    "MessageDecodeError",
    "NoAvailableBrokersError",
    "NoOffsetForPartitionError",
    "OffsetOutOfRangeClientError",
    "ProducerClosedError",
    "ProtocolError",
    "RebalanceInProgressClientError",
    "RecordDeserializationError",
    "RetriableError",
    "SerializationError",
    "SslAuthenticationError",
    "TransactionAbortedError",
    "UnknownApiKeyError",
    "WakeupException",
    "for_code",
    "raise_for_code",
]
__all__ += _generated_all

# --- client-side errors -----------------------------------------------------------------------


class IllegalStateError(KafkaError):
    """An operation was called in a state that does not allow it (Java IllegalStateException)."""


class IllegalArgumentError(KafkaError, ValueError):
    """An argument is out of its valid range (Java IllegalArgumentException)."""


class ConfigurationError(KafkaError, ValueError):
    """A configuration key is unknown or its value is invalid. The message names the key."""


class KafkaTimeoutError(RetriableError, TimeoutError):
    """An operation did not finish within its timeout (Java TimeoutException)."""


class DisconnectError(RetriableError):
    """The connection to a broker was lost before a response arrived (Java DisconnectException)."""


class NoAvailableBrokersError(InvalidMetadataError):
    """No broker could be found to send a request to (Java NoAvailableBrokersException)."""


class WakeupException(KafkaError):
    """A blocking call was interrupted by ``wakeup()`` from another thread."""


class AuthenticationError(KafkaError):
    """Authentication with a broker failed (SSL handshake or SASL). Not retriable."""


class SslAuthenticationError(AuthenticationError):
    """The TLS handshake failed: certificate or hostname verification, protocol mismatch."""


class SerializationError(KafkaError):
    """A key or value could not be serialized or deserialized."""


# --- protocol / wire errors ---------------------------------------------------------------------


class ProtocolError(KafkaError):
    """Bytes received from a peer do not follow the Kafka protocol."""


class MessageDecodeError(ProtocolError):
    """A message could not be decoded: truncated, a length that lies, an invalid value.

    ``offset`` is the byte position in the buffer where decoding failed, when known.
    """

    def __init__(self, message: str, offset: int | None = None) -> None:
        self.offset = offset
        super().__init__(message if offset is None else f"{message} (at byte {offset})")


class InvalidReceiveError(ProtocolError):
    """A frame's 4-byte size is negative or larger than the configured maximum receive size."""


class UnknownApiKeyError(ProtocolError):
    """A request or response names an API key this library does not know."""


class CorrelationIdMismatchError(ProtocolError):
    """A response's correlation id is not the one expected next on the connection."""


def for_code(code: int) -> type[BrokerResponseError]:
    """The exception class for a broker error code; unknown codes map to UnknownServerError."""
    return BROKER_ERRORS.get(code, UnknownServerError)


def raise_for_code(code: int, message: str | None = None) -> None:
    """Raise the exception for ``code`` unless it is 0 (NONE)."""
    if code != 0:
        cls = BROKER_ERRORS.get(code)
        if cls is None:
            raise UnknownServerError(f"unknown error code {code}" + (f": {message}" if message else ""))
        raise cls(message)



# --- consumer client-side errors (owner: consumer) -------------------------------------------------


class InvalidOffsetError(KafkaError):
    """A partition has no valid position to fetch from (Java InvalidOffsetException).

    ``partitions`` lists the affected partitions (TopicPartition tuples)."""

    def __init__(self, message: str, partitions: object = ()) -> None:
        self.partitions = set(partitions)  # type: ignore[call-overload]
        super().__init__(message)


class NoOffsetForPartitionError(InvalidOffsetError):
    """No committed offset and ``auto.offset.reset=none`` (Java NoOffsetForPartitionException)."""


class OffsetOutOfRangeClientError(InvalidOffsetError):
    """A fetch position is out of range and ``auto.offset.reset=none`` (Java OffsetOutOfRangeException).

    ``offsets`` maps each partition to the position that was out of range."""

    def __init__(self, message: str, offsets: dict[object, int]) -> None:
        self.offsets = dict(offsets)
        super().__init__(message, offsets.keys())


class LogTruncationError(OffsetOutOfRangeClientError):
    """The log was truncated below the consumer's position after a leader change (KIP-320) and
    ``auto.offset.reset=none`` (Java LogTruncationException).

    ``offsets`` maps each partition to the fetch position that was validated; ``divergent_offsets`` maps it
    to the first offset known to diverge (an ``OffsetAndMetadata`` with the leader epoch), or None when the
    new leader could not say. The consumer keeps the partition unvalidated until the application seeks."""

    def __init__(self, message: str, offsets: dict[object, int], divergent_offsets: dict[object, object]) -> None:
        self.divergent_offsets = dict(divergent_offsets)
        super().__init__(message, offsets)


class CommitFailedError(KafkaError):
    """An offset commit cannot be completed because the group rebalanced or this member was fenced
    (Java CommitFailedException). Not retriable: the partitions may now belong to another member."""


class RebalanceInProgressClientError(RetriableError):
    """A synchronous commit was attempted while this member is rebalancing; retry after the next poll."""


class ConcurrentModificationError(KafkaError):
    """A non-thread-safe client was used from two threads at once (Java ConcurrentModificationException)."""


class RecordDeserializationError(SerializationError):
    """A record's key or value could not be deserialized; ``partition`` and ``offset`` say which one,
    so the application can seek past it."""

    def __init__(self, message: str, partition: object, offset: int) -> None:
        self.partition = partition
        self.offset = offset
        super().__init__(f"{message} (partition {partition}, offset {offset})")


# --- producer client-side errors (owner: producer) -------------------------------------------------


class BufferExhaustedError(KafkaTimeoutError):
    """``send()`` could not get ``buffer.memory`` space within ``max.block.ms`` (Java BufferExhaustedException)."""


class ProducerClosedError(IllegalStateError):
    """The producer was closed before the record could be sent, or ``send()`` was called after ``close()``."""


class TransactionAbortedError(KafkaError):
    """A record could not be sent because its transaction was aborted (Java TransactionAbortedException):
    it was still buffered when ``abort_transaction()`` ran or the transaction entered an abortable error.
    Send it again in a new transaction."""

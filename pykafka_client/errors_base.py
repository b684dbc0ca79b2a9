"""The roots of the error taxonomy (Java: KafkaException, ApiException, RetriableException, ...).

Every exception the library raises derives from :class:`KafkaError`. Errors a broker reports by
code derive from :class:`BrokerResponseError`; the retriable ones also from :class:`RetriableError`,
and those that mean "the cached metadata is stale" from :class:`InvalidMetadataError`.
"""

from __future__ import annotations

from typing import ClassVar


class KafkaError(Exception):
    """Base of every error raised by pykafka_client and mini_broker."""

    retriable: ClassVar[bool] = False
    invalid_metadata: ClassVar[bool] = False


class RetriableError(KafkaError):
    """A transient error: the same operation may succeed if retried (Java RetriableException)."""

    retriable: ClassVar[bool] = True


class InvalidMetadataError(RetriableError):
    """Retriable, and the client's cached metadata should be refreshed before the retry."""

    invalid_metadata: ClassVar[bool] = True


class BrokerResponseError(KafkaError):
    """An error code returned by a broker. Subclasses exist for every known code."""

    code: ClassVar[int] = -1
    name: ClassVar[str] = "UNKNOWN_SERVER_ERROR"
    description: ClassVar[str] = ""

    def __init__(self, message: str | None = None) -> None:
        self.message = message
        super().__init__(message if message else f"{self.name}: {self.description}")

    def __str__(self) -> str:
        base = f"[Error {self.code}] {self.name}"
        return f"{base}: {self.message}" if self.message else f"{base}: {self.description}"

"""How the network layer words errors in its log lines and exceptions (one place, so they read alike)."""

from __future__ import annotations

import errno

from pykafka_client.errors_base import KafkaError


def describe_error(error: BaseException) -> str:
    """The error's text, led by its class name unless the text already names it (broker errors do)."""
    text = str(error)
    if isinstance(error, KafkaError) and text:
        return text
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def describe_connect_error(error: BaseException | None) -> str:
    """What went wrong with a connect, in words: "connection refused" for ECONNREFUSED."""
    if error is None:
        return "the connection failed"
    if isinstance(error, ConnectionRefusedError) or getattr(error, "errno", None) == errno.ECONNREFUSED:
        return "connection refused"
    return str(error) or type(error).__name__

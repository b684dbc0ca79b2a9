"""How the network layer words errors in its log lines and exceptions (one place, so they read alike)."""

from __future__ import annotations

import enum
import errno
import socket

from pykafka_client.errors_base import KafkaError


def describe_error(error: BaseException) -> str:
    """The error's text, led by its class name unless the text already names it (broker errors do)."""
    text = str(error)
    if isinstance(error, KafkaError) and text:
        return text
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class ConnectFailureCause(enum.Enum):
    """Why a connection could not be set up, in the words the messages use."""

    REFUSED = "connection refused"
    NAME_NOT_RESOLVED = "name not resolved"
    TIMED_OUT = "timed out"
    UNREACHABLE = "network unreachable"
    CLOSED_DURING_SETUP = "connection closed during setup"
    AUTHENTICATION_FAILED = "authentication failed"
    OTHER = "connection failed"


_UNREACHABLE_ERRNOS = {errno.ENETUNREACH, errno.EHOSTUNREACH}


def classify_connect_error(error: BaseException | None) -> ConnectFailureCause:
    """The cause of a failed connect from the exception the resolver or the socket raised."""
    if error is None:
        return ConnectFailureCause.OTHER
    code = getattr(error, "errno", None)
    if isinstance(error, ConnectionRefusedError) or code == errno.ECONNREFUSED:
        return ConnectFailureCause.REFUSED
    if isinstance(error, socket.gaierror):
        return ConnectFailureCause.NAME_NOT_RESOLVED
    if isinstance(error, TimeoutError) or code == errno.ETIMEDOUT:
        return ConnectFailureCause.TIMED_OUT
    if code in _UNREACHABLE_ERRNOS:
        return ConnectFailureCause.UNREACHABLE
    return ConnectFailureCause.OTHER


def describe_connect_error(error: BaseException | None) -> str:
    """What went wrong with a connect, in words: "connection refused" for ECONNREFUSED, "name not resolved
    (<the resolver's words>)" for a host name that does not resolve, "timed out (...)", ..."""
    if error is None:
        return "the connection failed"
    cause = classify_connect_error(error)
    if cause is ConnectFailureCause.REFUSED:
        return str(cause.value)
    if cause is ConnectFailureCause.OTHER:
        return str(error) or type(error).__name__
    text = str(error.strerror) if isinstance(error, OSError) and error.strerror else str(error)
    return f"{cause.value} ({text})" if text else cause.value

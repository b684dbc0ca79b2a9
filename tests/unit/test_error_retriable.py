"""Every error class the library defines carries a bool ``retriable`` (and ``invalid_metadata``), so
callers decide on a retry by reading the attribute, never by probing with ``getattr``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pykafka_client
from pykafka_client import errors
from pykafka_client.errors_base import KafkaError, RetriableError
from pykafka_client.network.transport.channel import PeerClosedError
from pykafka_client.producer.kafka_producer import _RecordsFailed

#: Signals that never reach a caller, so they need no ``retriable``: the transport's (OSError subclasses the
#: Selector catches and turns into a disconnect) and send_batch's "stop appending at this record".
INTERNAL_SIGNALS: set[type[BaseException]] = {PeerClosedError, _RecordsFailed}


def _library_error_classes() -> set[type[BaseException]]:
    found: set[type[BaseException]] = set()
    for info in pkgutil.walk_packages(pykafka_client.__path__, "pykafka_client."):
        module = importlib.import_module(info.name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, BaseException) and obj.__module__.startswith("pykafka_client."):
                found.add(obj)
    return found


def test_every_library_error_class_is_a_kafka_error_with_bool_flags() -> None:
    classes = _library_error_classes() - INTERNAL_SIGNALS
    assert len(classes) > 150
    for cls in classes:
        assert issubclass(cls, KafkaError), f"{cls.__module__}.{cls.__qualname__} does not derive from KafkaError"
        assert isinstance(cls.retriable, bool), cls
        assert isinstance(cls.invalid_metadata, bool), cls
        assert cls.retriable == issubclass(cls, RetriableError), cls


def test_every_class_exported_by_errors_has_bool_retriable() -> None:
    exported = [obj for obj in vars(errors).values() if inspect.isclass(obj) and issubclass(obj, BaseException)]
    assert KafkaError in exported and RetriableError in exported
    for cls in exported:
        assert isinstance(getattr(cls, "retriable", None), bool), cls

"""Every generated message round-trips at every valid version (hypothesis, strategies from _SCHEMA)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykafka_client.protocol.messages import MESSAGE_CLASSES
from pykafka_client.protocol.types import Message

from .strategies import message_at

NAMES = sorted(MESSAGE_CLASSES)


def versions(cls: type[Message]) -> range:
    lo, hi = cls.VALID_VERSIONS
    return range(lo, hi + 1)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_round_trip_every_version(name: str, data: st.DataObject) -> None:
    cls = MESSAGE_CLASSES[name]
    for v in versions(cls):
        obj = data.draw(message_at(cls, v), label=f"v{v}")
        encoded = obj.encode(v)
        decoded = cls.decode(encoded, v)
        assert decoded == obj, f"{name} v{v}"
        assert decoded.encode(v) == encoded, f"{name} v{v} re-encode"


@pytest.mark.parametrize("name", NAMES)
def test_defaults_round_trip(name: str) -> None:
    cls = MESSAGE_CLASSES[name]
    for v in versions(cls):
        obj = cls()
        if any(f.type == "records" and f.nullable_versions is None for f in obj._SCHEMA):
            continue
        try:
            encoded = obj.encode(v)
        except Exception as e:  # non-nullable struct fields with null defaults are the caller's to fill
            pytest.fail(f"{name} v{v}: default instance does not encode: {e!r}")
        assert cls.decode(encoded, v) == obj

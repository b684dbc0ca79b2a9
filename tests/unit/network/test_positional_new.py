"""network.transport.positional_new == the class itself: the kernel's ``slots_constructor`` builds the network
client's per-request objects (ClientRequest, NetworkSend, InFlightRequest, ClientResponse, NetworkReceive) without
their __init__, with every slot as ``cls(*values)`` sets it."""

from __future__ import annotations

import gc
import sys
from dataclasses import dataclass, fields
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.network.client_request import ClientRequest
from pykafka_client.network.client_response import ClientResponse
from pykafka_client.network.in_flight_requests import InFlightRequest
from pykafka_client.network.transport.positional_new import positional_new
from pykafka_client.network.transport.selectable import NetworkReceive, NetworkSend
from pykafka_client.protocol.records import _native

CLASSES = [ClientRequest, NetworkSend, InFlightRequest, ClientResponse, NetworkReceive]
needs_kernel = pytest.mark.skipif(not _native.native_available(), reason="the compiled record kernel is not built")

values = st.one_of(st.none(), st.integers(), st.text(max_size=5), st.booleans(), st.lists(st.integers(), max_size=3))


def _slots(obj: object) -> list[tuple[str, Any]]:
    return [(f.name, getattr(obj, f.name)) for f in fields(obj)]  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(CLASSES), st.data())
def test_same_object_as_the_class_makes(cls: type, data: st.DataObject) -> None:
    args = [data.draw(values) for _ in fields(cls)]
    made: Any = positional_new(cls)(*args)
    expected = cls(*args)
    assert type(made) is cls
    assert _slots(made) == _slots(expected)
    assert all(getattr(made, f.name) is a for f, a in zip(fields(cls), args, strict=True))
    assert gc.is_tracked(made) == gc.is_tracked(expected)


@needs_kernel
def test_the_kernel_builds_them_and_holds_its_own_references() -> None:
    make = positional_new(NetworkSend)
    assert type(make) is not type  # the kernel's, not the class
    buffers = [b"x"]
    before = sys.getrefcount(buffers)
    send = make("1", buffers, 1, 0, None)
    assert sys.getrefcount(buffers) == before + 1
    send.written = 1
    assert send.completed()
    del send
    assert sys.getrefcount(buffers) == before


@needs_kernel
def test_wrong_argument_counts_and_classes_are_refused() -> None:
    make = positional_new(NetworkSend)
    with pytest.raises(TypeError):
        make("1", [], 0)  # every field is required, defaults included
    with pytest.raises(TypeError):
        make("1", [], 0, 0, None, extra=1)
    kernel = _native.loaded_kernel()
    assert kernel is not None
    with pytest.raises(TypeError):
        kernel.slots_constructor(NetworkSend, ("destination", "destination"))
    with pytest.raises(TypeError):
        kernel.slots_constructor(NetworkSend, ("nope",))


def test_only_slotted_dataclasses_without_post_init() -> None:
    @dataclass
    class Plain:
        x: int

    @dataclass(slots=True)
    class Post:
        x: int

        def __post_init__(self) -> None:
            self.x += 1

    for cls in (Plain, Post, int):
        with pytest.raises(TypeError):
            positional_new(cls)

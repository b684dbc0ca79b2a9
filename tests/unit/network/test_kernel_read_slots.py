"""The kernel's reads of slotted attributes at cached offsets (``records/kernel/slot_access.c.h``: ``cached_read``,
``cached_get``) against Python's ``getattr``: the hot objects of the producer's I/O thread keep what the kernel reads
of them in ``__slots__`` (Selector, NetworkClient, DefaultMetadataUpdater, Metadata, Sender, RecordAccumulator,
KafkaChannel); each slot read through the kernel's ``read_slot`` gives what ``getattr`` gives, at the slot's offset
while the class is unchanged, and by name (as Python would) once a class changes, a subclass overrides the attribute
with a property, or the slot is unset. Then the client's poll: a metadata whose deadline is a property is read by
name, the poll asking the updater exactly when the reference does."""

from __future__ import annotations

import weakref
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.errors import IllegalStateError
from pykafka_client.network.metadata import Metadata
from pykafka_client.network.metadata_updater import DefaultMetadataUpdater
from pykafka_client.network.network_client import NetworkClient
from pykafka_client.network.transport.channel import KafkaChannel
from pykafka_client.network.transport.selector import Selector
from pykafka_client.producer.record_accumulator import RecordAccumulator
from pykafka_client.producer.sender import Sender
from pykafka_client.protocol.records import _native
from pykafka_client.utils.time import MockTime

kernel = _native.loaded_kernel()
needs_kernel = pytest.mark.skipif(kernel is None, reason="the compiled record kernel is not built")

HOT_CLASSES: list[type[Any]] = [Selector, NetworkClient, DefaultMetadataUpdater, Metadata, Sender, RecordAccumulator,
                           KafkaChannel]


def _slot_names(cls: type[Any]) -> list[str]:
    names: list[str] = []
    for klass in cls.__mro__:
        for name in klass.__dict__.get("__slots__", ()):
            if name not in ("__dict__", "__weakref__") and name not in names:
                names.append(name)
    return names


#: (class, slot name) of every slot the kernel may read
SLOTS = [(cls, name) for cls in HOT_CLASSES for name in _slot_names(cls)]

values = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.text(max_size=5),
                   st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=2), st.integers(), max_size=2))


def _blank(cls: type[Any]) -> Any:
    """An instance of ``cls`` without its ``__init__``: every slot unset."""
    return object.__new__(cls)


def _read(obj: object, name: str) -> tuple[Any, bool]:
    assert kernel is not None
    return kernel.read_slot(obj, name)


def test_the_kernel_reads_slots_of_each_hot_class() -> None:
    # what the kernel reads of them each request: a regression drops a name from __slots__ back into the dict
    expected = {
        Selector: {"closed", "nonblocking", "pending_completed_sends", "polled_sends", "polled_receives",
                   "polled_disconnects", "polled_connects", "reauthentications_scheduled"},
        NetworkClient: {"selector", "client_id", "in_flight_requests", "default_request_timeout_ms", "api_versions",
                        "metadata_recovery_strategy", "send_state", "metadata_updater"},
        DefaultMetadataUpdater: {"update_deadline"},
        Metadata: {"no_update_before_ms"},
        Sender: {"client", "metadata", "accumulator", "guarantee_message_order", "max_request_size", "acks",
                 "request_timeout_ms", "transaction_manager", "in_flight_batches", "metrics", "completion"},
        RecordAccumulator: {"closed", "topic_items", "linger_ms", "adaptive_partitioning", "delivery_timeout_ms",
                            "next_batch_expiry_ms"},
        KafkaChannel: {"id", "state", "bytes_sent", "send_writer", "plain_sendmsg"},
    }
    for cls, names in expected.items():
        assert names <= set(_slot_names(cls)), cls
        # everything else still goes to the instance dict, and the instances can be weakly referenced
        obj = _blank(cls)
        obj.not_a_slot = 1
        assert obj.__dict__ == {"not_a_slot": 1}
        assert weakref.ref(obj)() is obj


@needs_kernel
@settings(max_examples=60, deadline=None)
@given(st.sampled_from(SLOTS), values, values)
def test_slot_reads_equal_getattr_at_the_offset(slot: tuple[type[Any], str], first: Any, second: Any) -> None:
    cls, name = slot
    obj = _blank(cls)
    with pytest.raises(AttributeError):
        getattr(obj, name)
    with pytest.raises(AttributeError):  # an unset slot: by name, which raises as getattr does
        _read(obj, name)
    setattr(obj, name, first)
    assert _read(obj, name) == (getattr(obj, name), True)
    setattr(obj, name, second)  # the same call site, the value changed: read anew at the offset
    got, by_offset = _read(obj, name)
    assert got is getattr(obj, name) and by_offset
    other = _blank(cls)  # another instance of the class: its own value
    setattr(other, name, first)
    assert _read(other, name) == (first, True)


@needs_kernel
@settings(max_examples=40, deadline=None)
@given(st.sampled_from(SLOTS), values, values)
def test_a_subclass_overriding_a_slot_with_a_property_is_read_by_name(
    slot: tuple[type[Any], str], stored: Any, shown: Any
) -> None:
    cls, name = slot
    base = _blank(cls)
    setattr(base, name, stored)
    assert _read(base, name) == (stored, True)  # the call site's cache now holds the base class
    sub = type("Overriding", (cls,), {name: property(lambda self: shown)})
    obj = _blank(sub)
    assert _read(obj, name) == (getattr(obj, name), False)
    assert _read(obj, name)[0] is shown
    assert _read(base, name) == (stored, True)  # the base class still at its offset


@needs_kernel
@settings(max_examples=40, deadline=None)
@given(st.sampled_from(SLOTS), values, values)
def test_a_class_change_is_seen(slot: tuple[type[Any], str], stored: Any, shown: Any) -> None:
    cls, name = slot
    # a subclass of its own (the real class is not changed): its slot inherited, then replaced, then restored
    sub = type("Changing", (cls,), {})
    obj = _blank(sub)
    setattr(obj, name, stored)
    assert _read(obj, name) == (stored, True)
    sub_any: Any = sub
    setattr(sub_any, name, property(lambda self: shown))  # the class changed: its version tag too
    assert _read(obj, name) == (getattr(obj, name), False)
    assert _read(obj, name)[0] is shown
    delattr(sub_any, name)  # the inherited slot again: its value kept
    assert _read(obj, name) == (stored, True)


@needs_kernel
def test_a_class_without_the_slot_is_read_by_name() -> None:
    class Plain:
        def __init__(self) -> None:
            self.no_update_before_ms = 5

    class Slotted:
        __slots__ = ("no_update_before_ms",)
        no_update_before_ms: int

    s = Slotted()
    s.no_update_before_ms = 3
    assert _read(s, "no_update_before_ms") == (3, True)
    assert _read(Plain(), "no_update_before_ms") == (5, False)
    assert _read(s, "no_update_before_ms") == (3, True)
    with pytest.raises(AttributeError):
        _read(Plain(), "other")


class PropertyDeadlineMetadata(Metadata):
    """A metadata whose update deadline is a property (the client's poll reads it through its updater)."""

    def __init__(self) -> None:
        self.shown_deadline = 0
        super().__init__()

    @property
    def no_update_before_ms(self) -> int:
        return self.shown_deadline

    @no_update_before_ms.setter
    def no_update_before_ms(self, value: int) -> None:
        self.stored_deadline = value


def _client(metadata: Metadata) -> tuple[NetworkClient, list[int]]:
    client = NetworkClient(Selector(time=MockTime()), metadata, time=MockTime())
    asked: list[int] = []
    updater = client.metadata_updater

    def maybe_update(now_ms: int) -> int:
        asked.append(now_ms)
        return 1000

    updater.maybe_update = maybe_update  # type: ignore[method-assign]
    return client, asked


@pytest.mark.parametrize("due", [False, True])
def test_the_poll_reads_a_deadline_property_by_name(due: bool) -> None:
    metadata = PropertyDeadlineMetadata()
    client, asked = _client(metadata)
    # with the kernel, the client's poll is its ClientPollPath's (else NetworkClient.poll, the reference)
    assert (type(client.poll_state).__name__ == "ClientPollPath") == (kernel is not None)
    try:
        now = 10_000
        metadata.shown_deadline = now + (-1 if due else 50_000)
        client.poll(0, now)
        assert asked == ([now] if due else [])
        # the slot under the property still holds what the metadata last set: never read
        metadata.shown_deadline = now + (50_000 if due else -1)
        client.poll(0, now + 1)
        assert asked == ([now] if due else [now + 1])
    finally:
        client.close()


@pytest.mark.parametrize("due", [False, True])
def test_the_poll_reads_the_slotted_deadline(due: bool) -> None:
    metadata = Metadata()
    client, asked = _client(metadata)
    try:
        now = 10_000
        metadata.no_update_before_ms = now + (-1 if due else 50_000)
        client.poll(0, now)
        assert asked == ([now] if due else [])
    finally:
        client.close()


def _selector_polls() -> list[tuple[Selector, Any]]:
    """Two selectors: one polled by its compiled poll (with the kernel), one by its reference ``poll``."""
    compiled = Selector(time=MockTime())
    poll = compiled.compiled_poll()
    assert (poll is not None) == (kernel is not None)
    reference = Selector(time=MockTime())
    return [(compiled, poll if poll is not None else compiled.poll), (reference, reference.poll)]


def test_a_closed_selector_read_from_its_slot_refuses_to_poll() -> None:
    for selector, poll in _selector_polls():
        try:
            selector.closed = True  # (the flag alone: the slot the poll reads)
            with pytest.raises(IllegalStateError):
                poll(0)
        finally:
            selector.closed = False
            selector.close()


def test_a_nonblocking_selector_read_from_its_slot_defers_its_wait() -> None:
    for selector, poll in _selector_polls():
        try:
            selector.nonblocking = True
            assert poll(7) == 0
            assert selector.deferred_timeout_ms == 7
        finally:
            selector.close()

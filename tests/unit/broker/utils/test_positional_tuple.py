"""positional_tuple: the kernel's tuple_constructor makes what the named tuple's own constructor (and
``tuple.__new__(cls, values)``) makes, for the broker's per-append named tuples, and refuses what it cannot make."""

from __future__ import annotations

import gc
from collections import namedtuple
from typing import Any, NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mini_broker.log.fetch_data_info import LogAppendInfo
from mini_broker.log.log_offset_metadata import LogOffsetMetadata
from mini_broker.log.log_segment import AppendedBatch
from mini_broker.log.log_validator import AssignedOffsets
from mini_broker.producer_state.producer_state_entry import BatchMetadata
from mini_broker.producer_state.producer_state_manager import PendingAppend
from mini_broker.utils.positional_tuple import positional_tuple
from pykafka_client.protocol.records import _native
from pykafka_client.structs import TopicPartition

native = pytest.mark.skipif(not _native.native_available(), reason="the compiled record kernel is not built")

#: the named tuples the produce path builds with it
CLASSES: list[type[tuple[Any, ...]]] = [LogAppendInfo, LogOffsetMetadata, AppendedBatch, AssignedOffsets, BatchMetadata,
                                        PendingAppend, TopicPartition]
values = st.one_of(st.integers(), st.none(), st.text(max_size=4), st.lists(st.integers(), max_size=3),
                   st.dictionaries(st.integers(), st.integers(), max_size=2))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(CLASSES), st.data())
def test_it_makes_what_the_class_makes(cls: type[tuple[Any, ...]], data: st.DataObject) -> None:
    items = data.draw(st.lists(values, min_size=len(cls._fields), max_size=len(cls._fields)))  # type: ignore[attr-defined]
    made = positional_tuple(cls)(*items)
    expected = cls(*items)  # type: ignore[arg-type]
    assert type(made) is cls and made == expected and tuple(made) == tuple.__new__(cls, items)
    assert all(a is b for a, b in zip(made, items, strict=True))  # the same objects, not copies
    assert [getattr(made, f) for f in cls._fields] == list(items)  # type: ignore[attr-defined]
    assert hash(made) == hash(expected) if all(isinstance(v, (int, str, type(None))) for v in items) else True
    assert gc.is_tracked(made) == gc.is_tracked(expected)  # tracked: its items may hold cycles
    assert repr(made) == repr(expected)


@native
def test_the_kernel_builds_them() -> None:
    for cls in CLASSES:
        made = positional_tuple(cls)
        assert made is not cls and cls.__name__ in repr(made)


@native
def test_the_wrong_number_of_values_or_keywords_raise_as_the_class_does() -> None:
    make = positional_tuple(AppendedBatch)
    with pytest.raises(TypeError):
        make(1, 2, 3)
    with pytest.raises(TypeError):
        make(1, 2, 3, 4, 5)
    with pytest.raises(TypeError):
        make(1, 2, 3, size=4)


def test_what_is_not_a_named_tuple_is_refused() -> None:
    class WithDict(namedtuple("Base", "a")):  # (no __slots__: a __dict__)
        pass

    class Plain(tuple):  # type: ignore[type-arg]
        __slots__ = ()

    for cls in (WithDict, Plain, tuple, int):
        with pytest.raises(TypeError):
            positional_tuple(cls)  # type: ignore[type-var]


def test_a_named_tuple_with_its_own_new_is_made_by_the_class_itself() -> None:
    """A ``__new__`` of the class's own decides what an instance holds: the class itself is the constructor."""
    class Overridden(NamedTuple):
        a: int

    def new(cls: type, a: int) -> Overridden:
        return tuple.__new__(cls, (a * 2,))

    Overridden.__new__ = new  # type: ignore[assignment]
    make = positional_tuple(Overridden)
    assert make is Overridden
    assert make(2) == (4,)


@native
def test_the_kernel_refuses_what_it_cannot_make() -> None:
    kernel = _native.loaded_kernel()
    assert kernel is not None

    class WithDict(tuple):  # type: ignore[type-arg]
        pass

    for cls, n in ((tuple, 1), (int, 1), (WithDict, 1), (AppendedBatch, -1), (AppendedBatch, 65)):
        with pytest.raises(TypeError):
            kernel.tuple_constructor(cls, n)

"""Hypothesis strategies for generated message classes, built from each class's ``_SCHEMA``.

``message_at(cls, version)`` draws an instance whose fields present at ``version`` hold random values
(respecting nullability at that version) and whose absent fields keep their defaults, so
``decode(encode(x)) == x`` must hold exactly.
"""

from __future__ import annotations

import functools
import sys
import uuid
from collections.abc import Hashable
from typing import Any, cast

from hypothesis import strategies as st

from pykafka_client.protocol.types import FieldSchema, Message

INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}

TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=6)
UUIDS = st.one_of(st.just(uuid.UUID(int=0)), st.builds(lambda b: uuid.UUID(bytes=b), st.binary(min_size=16, max_size=16)))


def in_range(v: int, r: tuple[int, int] | None) -> bool:
    return r is not None and r[0] <= v <= r[1]


def struct_class(owner: type[Message], name: str) -> type[Message]:
    """The generated class of struct ``name`` in the module of ``owner`` (aliases ``_T_<name>``)."""
    mod = sys.modules[owner.__module__]
    cls: type[Message] = getattr(mod, f"_T_{name}")
    return cls


def is_flexible(cls: type[Message], version: int) -> bool:
    return cls.FLEXIBLE_VERSIONS_MIN is not None and version >= cls.FLEXIBLE_VERSIONS_MIN


def scalar(t: str, f: FieldSchema) -> st.SearchStrategy[Any]:
    if t in INT_RANGES:
        lo, hi = INT_RANGES[t]
        return st.one_of(st.integers(lo, hi), st.sampled_from([lo, hi, 0, -1 if lo < 0 else 1]))
    if t == "bool":
        return st.booleans()
    if t == "float64":
        return st.floats(allow_nan=False)
    if t == "string":
        return TEXT
    if t == "bytes":
        return st.binary(max_size=8)
    if t == "records":
        return st.binary(max_size=24)
    if t == "uuid":
        return UUIDS
    raise AssertionError(f"unknown type {t} of {f.json_name}")


def field_value(owner: type[Message], f: FieldSchema, version: int, depth: int) -> st.SearchStrategy[Any]:
    t = f.type
    nullable = in_range(version, f.nullable_versions)
    if t.startswith("[]"):
        elem = t[2:]
        if elem[:1].isupper():
            es = message_at(struct_class(owner, elem), version, depth + 1)
        else:
            es = scalar(elem, f)
        s: st.SearchStrategy[Any] = st.lists(es, max_size=3 if depth < 3 else 1)
    elif t[:1].isupper():
        s = message_at(struct_class(owner, t), version, depth + 1)
    else:
        s = scalar(t, f)
    if nullable:
        s = st.one_of(st.none(), s)
    return s


def unknown_tags(known: set[int]) -> st.SearchStrategy[list[tuple[int, bytes]] | None]:
    tag = st.integers(0, 300).filter(lambda t: t not in known)
    pairs = st.dictionaries(tag, st.binary(max_size=4), max_size=2)
    return st.one_of(st.none(), pairs.map(lambda d: sorted(d.items()) or None))


def message_at(cls: type[Message], version: int, depth: int = 0) -> st.SearchStrategy[Message]:
    """Instances of ``cls`` valid to encode at ``version``."""
    return _message_at(cast(Hashable, cls), version, depth)


@functools.cache
def _message_at(cls: Any, version: int, depth: int) -> st.SearchStrategy[Message]:
    """``message_at``, one strategy per class, version and depth (a message class is hashable, though to a type
    checker ``type[Message]`` is not: Message's instances are unhashable)."""
    kwargs: dict[str, st.SearchStrategy[Any]] = {}
    known_tags = {f.tag for f in cls._SCHEMA if f.tag is not None}
    for f in cls._SCHEMA:
        if in_range(version, f.versions):
            kwargs[f.name] = field_value(cls, f, version, depth)
    if is_flexible(cls, version):
        kwargs["unknown_tagged_fields"] = unknown_tags(known_tags)
    return st.builds(cls, **kwargs)

"""Type checks of public method arguments, with messages that say what was expected.

A str passed where a collection is expected would otherwise be iterated character by character (``"orders"``
-> topics ``o``, ``r``, ...) or fail deep inside with an unrelated error; these checks raise
:class:`TypeError` at the call, naming the method, the argument, what it takes and what it got.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeVar

T = TypeVar("T")

_SHOWN = 60


def describe(value: object) -> str:
    """``str 'orders'``: the type and a shortened repr, for error messages."""
    shown = repr(value)
    if len(shown) > _SHOWN:
        shown = shown[: _SHOWN - 3] + "..."
    return f"{type(value).__name__} {shown}"


def list_argument(method: str, name: str, value: object, element: type[T], expected: str) -> list[T]:
    """``value`` as a list of ``element``; TypeError when it is a str, bytes, a mapping, not iterable, or
    holds an element of another type. ``expected`` reads after "expects <name> as", e.g.
    ``"a list of topic names (str)"``."""
    if isinstance(value, (str, bytes, bytearray, Mapping)) or not isinstance(value, Iterable):
        raise TypeError(f"{method}() expects {name} as {expected}, got {describe(value)}")
    items = list(value)
    for item in items:
        if not isinstance(item, element):
            raise TypeError(f"{method}() expects {name} as {expected}, but an element is {describe(item)}")
    return items


def mapping_argument(method: str, name: str, value: object, expected: str) -> Mapping[object, object]:
    """``value`` when it is a Mapping, else TypeError naming what was expected."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{method}() expects {name} as {expected}, got {describe(value)}")
    return value

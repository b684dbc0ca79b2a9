"""Named tuples of the broker's per-request path built from their items without their Python ``__new__`` (a produce
append makes about seven: the log's append info, assigned offsets, appended batch and end offset metadata, the
producer state's batch metadata and pending append, the request's topic-partition).

:func:`positional_tuple` gives, for a named tuple class whose ``__new__`` is the one ``collections.namedtuple``
generates (``typing.NamedTuple`` classes too), a callable that takes every field's value positionally, in field order,
and returns what ``cls(*values)`` (and ``tuple.__new__(cls, values)``) returns: the compiled kernel's
``tuple_constructor`` (no Python frame, no intermediate tuple) when it is loaded and the class's ``__new__`` is the
generated one, else the class itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pykafka_client.protocol.records import _native

T = TypeVar("T", bound=tuple[Any, ...])


def positional_tuple(cls: type[T]) -> Callable[..., T]:
    """A callable building ``cls`` from all its fields' values, positional in field order (``cls(*values)``)."""
    fields = getattr(cls, "_fields", None)
    if not (issubclass(cls, tuple) and isinstance(fields, tuple)) or "__dict__" in dir(cls):
        raise TypeError(f"{cls.__name__} is not a named tuple class without a __dict__")
    kernel = _native.loaded_kernel()
    # the generated __new__ is told by the module name collections.namedtuple gives it (a CPython detail): where it
    # is not found (a __new__ of the class's own decides what an instance holds, or another Python names it
    # otherwise), the class itself, which is always right
    generated_new = getattr(cls.__new__, "__module__", "") == f"namedtuple_{cls.__name__}"
    if kernel is None or not generated_new:
        return cls
    made: Callable[..., T] = kernel.tuple_constructor(cls, len(fields))
    return made

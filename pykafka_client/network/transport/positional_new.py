"""Instances of the network client's per-request classes built from every field's value, without their Python
``__init__`` (four objects a produce request on the producer's I/O thread: ClientRequest, NetworkSend,
InFlightRequest, ClientResponse).

:func:`positional_new` gives, for a dataclass with ``slots=True`` whose fields are all set by ``__init__`` and
which has no ``__post_init__``, a callable that takes every field's value positionally, in field order, and returns
what ``cls(*values)`` returns: the compiled kernel's ``slots_constructor`` (no Python frame) when it is loaded,
else the class itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields, is_dataclass
from typing import Any, TypeVar

from pykafka_client.protocol.records import _native

T = TypeVar("T")


def positional_new(cls: type[T]) -> Callable[..., T]:
    """A callable building ``cls`` from all its fields' values, positional in field order (``cls(*values)``)."""
    if not is_dataclass(cls) or "__slots__" not in cls.__dict__ or hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} is not a slotted dataclass without __post_init__")
    names = tuple(f.name for f in fields(cls))
    if not all(f.init for f in fields(cls)):
        raise TypeError(f"{cls.__name__} has fields that __init__ does not set")
    kernel = _native.loaded_kernel()
    if kernel is None:
        return cls
    made: Callable[..., Any] = kernel.slots_constructor(cls, names)
    return made

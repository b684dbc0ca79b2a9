"""The compiled-against-reference driver of the kernel's equivalence tests: two worlds, one on the compiled path and
one on the pure-Python reference, given the same operations in the same order."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar


class World(Protocol):
    def state(self) -> object: ...

    def close(self) -> None: ...


W = TypeVar("W", bound=World)
Op = TypeVar("Op")


def run_in_lockstep(compiled: W, reference: W, ops: Iterable[Op], outcome: Callable[[W, Op], object]) -> None:
    """Apply each operation to both worlds (compiled first) and assert, after each, that both gave the same outcome
    and are in the same state; the failing assertion names the operation. Both worlds are closed at the end."""
    try:
        assert compiled.state() == reference.state()
        for op in ops:
            assert outcome(compiled, op) == outcome(reference, op), op
            assert compiled.state() == reference.state(), op
    finally:
        compiled.close()
        reference.close()

"""What one admin API is, for the generic driver ``admin/api_driver.py`` (Java: ``AdminApiHandler``,
``AdminApiLookupStrategy`` and ``AdminApiDriver``, here sans-IO and synchronous).

A call is about a set of keys (topics, partitions, group or transactional ids, broker ids). The driver runs
two stages for them until every key is completed or failed, or the call's timer expires:

* **lookup**: the handler's :class:`LookupStrategy` maps keys to the broker to ask (any least-loaded broker,
  the controller, a named broker, each partition's leader, each id's coordinator), grouped by broker; it may
  fail a key (the partition does not exist) or leave it unmapped (no leader yet: looked up again after a
  backoff).
* **fulfilment**: one request per broker about its keys, built by the :class:`AdminApiHandler` at the version
  both sides support, whose answer is an :class:`ApiResult` per key: a value, an error that fails only that
  key, ``unmapped`` (the target was stale: NOT_LEADER_OR_FOLLOWER, NOT_COORDINATOR; only those keys go back to
  the lookup) or ``retry`` (ask the same broker again after a backoff: COORDINATOR_LOAD_IN_PROGRESS). An error
  that must stop the whole call (a broker-level error) is raised from ``handle_response``.

The handlers live in ``admin/handlers/``, one module per API, the lookup strategies in ``admin/lookups.py``,
and the table ``admin/api_table.py`` names the entry point of every AdminClient operation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from pykafka_client.errors import DisconnectError
from pykafka_client.network.metadata import Metadata
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.structs import Node
from pykafka_client.utils.time import Timer

K = TypeVar("K")
V = TypeVar("V")

#: where to send a request: the node, or None while none is known or connectable
Target = Callable[[], "Node | None"]

COORDINATOR_LOAD_IN_PROGRESS = 14
#: COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR: find the coordinator again
COORDINATOR_MOVED = frozenset({15, 16})
#: UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH,
#: UNKNOWN_LEADER_EPOCH: the partition's leader moved (or the partition went): look it up again
LEADER_MOVED = frozenset({3, 5, 6, 74, 75})
#: the leader has no offset to give yet (a leader change in progress): ask it again
OFFSET_NOT_AVAILABLE = 78
#: NOT_CONTROLLER: the controller moved; its keys are looked up again (refreshed metadata) and resent
NOT_CONTROLLER = 41


@dataclass
class ApiResult(Generic[K, V]):
    """The answer of one request (or, merged, of a whole call), per key, in the order the broker answered:
    ``completed`` its value, ``failed`` its error (final); ``unmapped``: look the key up again (its target was
    stale), ``retry``: ask the same broker again after a backoff; for these two, the error to raise when the
    call's time runs out first (None: a timeout naming the key)."""

    completed: dict[K, V] = field(default_factory=dict)
    failed: dict[K, BaseException] = field(default_factory=dict)
    unmapped: dict[K, BaseException | None] = field(default_factory=dict)
    retry: dict[K, BaseException | None] = field(default_factory=dict)

    def merge(self, other: ApiResult[K, V]) -> None:
        """Take ``other``'s completed and failed keys (a key's first error wins)."""
        self.completed.update(other.completed)
        for key, error in other.failed.items():
            self.failed.setdefault(key, error)

    def fail(self, key: K, error: BaseException) -> None:
        self.failed.setdefault(key, error)

    def coordinator_error(self, key: K, code: int, error: BaseException) -> None:
        """A coordinator's error about ``key``: loading, ask it again; moved or not available, find it again;
        anything else fails the key."""
        if code == COORDINATOR_LOAD_IN_PROGRESS:
            self.retry[key] = error
        elif code in COORDINATOR_MOVED:
            self.unmapped[key] = error
        else:
            self.fail(key, error)

    def partition_error(self, key: K, code: int, error: BaseException) -> None:
        """A partition leader's error about ``key``: the leader moved, look it up again; no offset yet, ask it
        again; anything else fails the key. (Asked again until the call's timeout, which then names the key.)"""
        if code in LEADER_MOVED:
            self.unmapped[key] = None
        elif code == OFFSET_NOT_AVAILABLE:
            self.retry[key] = None
        else:
            self.fail(key, error)

    def controller_error(self, keys: Iterable[K], code: int, error: BaseException) -> None:
        """A controller's top-level error for the request's ``keys``: NOT_CONTROLLER, find the controller again
        and resend (Java's handleNotControllerError); anything else fails them."""
        for key in keys:
            if code == NOT_CONTROLLER:
                self.unmapped[key] = error
            else:
                self.fail(key, error)

    def look_up_unanswered(self, keys: Iterable[K]) -> None:
        """The keys of ``keys`` the broker said nothing about go back to the lookup."""
        for key in keys:
            if not any(key in answered for answered in (self.completed, self.failed, self.unmapped, self.retry)):
                self.unmapped[key] = None

    def first_error(self) -> BaseException | None:
        """The first key's error (the call raises it after every key was attempted), None when none failed."""
        return next(iter(self.failed.values()), None)

    def raise_first_error(self) -> None:
        error = self.first_error()
        if error is not None:
            raise error


class UnreachableTargetError(DisconnectError):
    """The broker a request was for could not be reached: the connection was lost before the answer, a new one
    was refused, or the broker left the metadata. ``node_id``: that broker (None: not known)."""

    def __init__(self, message: str, node_id: int | None) -> None:
        super().__init__(message)
        self.node_id = node_id


@dataclass
class LookupResult(Generic[K]):
    """What a lookup found: ``mapped`` the keys grouped by the broker to ask, in the order the requests are
    sent; ``failed`` keys that cannot be looked up (only they fail); ``unmapped`` keys not found yet, looked up
    again after a backoff, with the error to raise when the time runs out first (None: a timeout)."""

    mapped: list[tuple[Target, list[K]]] = field(default_factory=list)
    failed: dict[K, BaseException] = field(default_factory=dict)
    unmapped: dict[K, BaseException | None] = field(default_factory=dict)


class TargetFinder(Protocol):
    """What a lookup strategy may ask of the AdminContext."""

    @property
    def metadata(self) -> Metadata: ...

    def least_loaded(self) -> Node | None: ...

    def controller_or_any(self) -> Node | None: ...

    def broker_target(self, broker_id: int) -> Target: ...

    def refresh_metadata(self, timer: Timer, what: str) -> None: ...

    def send(self, api_key: ApiKey, build: Callable[[int], Any], target: Target, timer: Timer) -> tuple[Node, Any]:
        """Send ``build(version)`` (the newest version both sides support) once ``target()`` is ready; the
        node that answered and its response body."""
        ...


class LookupStrategy(Protocol[K]):
    """How a handler finds the brokers its keys go to (Java ``AdminApiLookupStrategy``)."""

    @property
    def description(self) -> str:
        """What is looked up (the timeout's message names it)."""
        ...

    @property
    def targets_move(self) -> bool:
        """True when a key's broker can change under a call (a coordinator, a partition leader): a target that
        cannot be reached (disconnected, refusing connections, gone from the metadata) sends its keys back to the
        lookup, which may name another broker. False: the same target is asked again until the call's timeout."""
        ...

    def lookup(self, finder: TargetFinder, keys: Sequence[K], timer: Timer, stale: bool) -> Iterable[LookupResult[K]]:
        """Where ``keys`` go. The results are taken one at a time and their requests sent before the next one is
        made (a group's coordinator is found just before its request). ``stale``: these keys were looked up
        before and their targets were stale or not found (a lookup that reads cached metadata refreshes it)."""
        ...


@runtime_checkable
class AdminApiHandler(Protocol[K, V]):
    """One admin API, per call (see the module docstring)."""

    @property
    def api_key(self) -> ApiKey: ...

    @property
    def lookup(self) -> LookupStrategy[K]: ...

    def build_request(self, version: int, keys: list[K]) -> Any:
        """The request about ``keys`` at ``version`` (the newest both sides support)."""
        ...

    def handle_response(self, node: Node, keys: list[K], response: Any) -> ApiResult[K, V]:
        """``node``'s answer about ``keys``: per key a value, an error, or to ask again; raise to stop the call."""
        ...


@runtime_checkable
class FallbackApi(Protocol[K]):
    """A handler whose API older brokers lack: to a broker without ``api_key`` the driver sends
    ``build_fallback_request`` of ``fallback_api_key`` instead, and its answer goes to ``handle_response``."""

    @property
    def fallback_api_key(self) -> ApiKey: ...

    def build_fallback_request(self, version: int, keys: list[K]) -> Any: ...

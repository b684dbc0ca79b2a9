"""What one admin API is, for the generic driver :meth:`AdminContext.run` (Java: ``AdminApiHandler``,
``AdminApiLookupStrategy`` and ``AdminApiDriver``, here sans-IO and synchronous).

An :class:`AdminApiHandler` is built per call (it holds the call's arguments). It names its ``api_key``, its
``lookup`` (how the keys it is asked about map to the brokers to ask: any least-loaded broker, the controller,
a named broker), builds the request for a group of keys at the negotiated version, and turns the answer into
an :class:`ApiResult`: a value or an error per key, or ``lookup_again`` when the target was stale (the
controller moved), so the driver finds the target again and resends. An error that must stop the whole call
(a broker-level error) is raised from ``handle_response``.

The handlers live in ``admin/handlers/``, one module per API, and the table ``admin/api_table.py`` names the
entry point of every AdminClient operation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from pykafka_client.admin.admin_calls import broker_error, raise_for_absent_partitions
from pykafka_client.network.metadata import Metadata
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.structs import Node
from pykafka_client.utils.time import Timer

K = TypeVar("K")
V = TypeVar("V")

#: where to send a request: the node, or None while none is known or connectable
Target = Callable[[], "Node | None"]

#: NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS: find the coordinator again
COORDINATOR_MOVED = frozenset({16, 15, 14})


def coordinator_moved(results: Sequence[Any]) -> bool:
    """Whether a coordinator's per-group results (one group asked) say it moved or is loading."""
    return bool(results) and results[0].error_code in COORDINATOR_MOVED


@dataclass
class ApiResult(Generic[K, V]):
    """The answer of one request (or, merged, of a whole call): per key its value or its error, in the order
    the broker answered; ``lookup_again``: the target was stale, find it again and resend every key."""

    completed: dict[K, V] = field(default_factory=dict)
    failed: dict[K, BaseException] = field(default_factory=dict)
    lookup_again: bool = False

    def merge(self, other: ApiResult[K, V]) -> None:
        self.completed.update(other.completed)
        for key, error in other.failed.items():
            self.failed.setdefault(key, error)

    def first_error(self) -> BaseException | None:
        """The first key's error (the call raises it after every key was attempted), None when none failed."""
        return next(iter(self.failed.values()), None)

    def raise_first_error(self) -> None:
        error = self.first_error()
        if error is not None:
            raise error


class TargetFinder(Protocol):
    """What a lookup strategy may ask of the AdminContext."""

    @property
    def metadata(self) -> Metadata: ...

    def least_loaded(self) -> Node | None: ...

    def controller_or_any(self) -> Node | None: ...

    def broker_target(self, broker_id: int) -> Target: ...

    def find_coordinator(self, group_id: str, timer: Timer, key_type: int = 0) -> int: ...

    def refresh_metadata(self, timer: Timer, what: str) -> None: ...

    def backoff(self, timer: Timer) -> None: ...


class LookupStrategy(Protocol[K]):
    """How a handler finds the brokers its keys go to (Java ``AdminApiLookupStrategy``)."""

    @property
    def description(self) -> str:
        """What is looked up, for the message of a metadata timeout when it must be looked up again."""
        ...

    def targets(self, finder: TargetFinder, keys: Sequence[K], timer: Timer) -> Iterable[tuple[Target, list[K]]]:
        """The keys grouped by the broker to ask, in the order the requests are sent (looked up lazily: a
        coordinator is found just before its request is sent)."""
        ...

    def before_lookup_again(self, finder: TargetFinder, timer: Timer) -> None:
        """What happens before the keys of a stale target are looked up again (refresh, back off)."""
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
        """``node``'s answer about ``keys``: a value or an error per key; raise to stop the whole call."""
        ...


class _RefreshBeforeLookingAgain:
    """Looking up again after a stale answer: fresh metadata, then a backoff."""

    description: str

    def before_lookup_again(self, finder: TargetFinder, timer: Timer) -> None:
        finder.refresh_metadata(timer, self.description)
        finder.backoff(timer)


@dataclass(frozen=True)
class LeastLoaded(_RefreshBeforeLookingAgain):
    """Every key to the least-loaded broker, in one request."""

    description: str = "any broker"

    def targets(self, finder: TargetFinder, keys: Sequence[Any], timer: Timer) -> list[tuple[Target, list[Any]]]:
        return [(finder.least_loaded, list(keys))]


@dataclass(frozen=True)
class Controller(_RefreshBeforeLookingAgain):
    """Every key to the controller (any broker while none is known), in one request; a NOT_CONTROLLER answer
    refreshes the metadata and resends."""

    description: str = "controller"

    def targets(self, finder: TargetFinder, keys: Sequence[Any], timer: Timer) -> list[tuple[Target, list[Any]]]:
        return [(finder.controller_or_any, list(keys))]


@dataclass(frozen=True)
class EachBroker(_RefreshBeforeLookingAgain):
    """Each key is a broker id: one request to each broker (waited for while not in the metadata)."""

    description: str = "each broker"

    def targets(self, finder: TargetFinder, keys: Sequence[int], timer: Timer) -> list[tuple[Target, list[int]]]:
        return [(finder.broker_target(broker_id), [broker_id]) for broker_id in keys]


@dataclass(frozen=True)
class BrokerOrAny(_RefreshBeforeLookingAgain, Generic[K]):
    """Keys grouped by ``broker_of(key)``: the keys of a broker id go to that broker, those of None to the
    least-loaded broker; one request per group, in the order the groups first appear."""

    broker_of: Callable[[K], int | None]
    description: str = "the broker of a resource"

    def targets(self, finder: TargetFinder, keys: Sequence[K], timer: Timer) -> list[tuple[Target, list[K]]]:
        groups: dict[int | None, list[K]] = {}
        for key in keys:
            groups.setdefault(self.broker_of(key), []).append(key)
        return [(finder.least_loaded if broker_id is None else finder.broker_target(broker_id), items)
                for broker_id, items in groups.items()]


@dataclass(frozen=True)
class GroupCoordinator:
    """Each key is a group id: one request to its coordinator, found (FindCoordinator) just before the request
    is sent; when the answer says the coordinator moved or is loading, back off and find it again."""

    description: str = "group coordinator"

    def targets(self, finder: TargetFinder, keys: Sequence[str], timer: Timer) -> Iterator[tuple[Target, list[str]]]:
        for group_id in keys:
            yield finder.broker_target(finder.find_coordinator(group_id, timer)), [group_id]

    def before_lookup_again(self, finder: TargetFinder, timer: Timer) -> None:
        finder.backoff(timer)


@dataclass(frozen=True)
class CurrentLeaders(_RefreshBeforeLookingAgain):
    """Each key is a partition: grouped by its leader in fresh metadata (one refresh, no waiting): a partition
    the cluster does not have raises UnknownTopicOrPartitionError, one without a leader LeaderNotAvailableError.
    ``description``: why the leaders are looked up (the metadata timeout's message)."""

    description: str = "partition leaders"

    def targets(self, finder: TargetFinder, keys: Sequence[tuple[str, int]], timer: Timer
                ) -> list[tuple[Target, list[tuple[str, int]]]]:
        finder.refresh_metadata(timer, self.description)
        cluster = finder.metadata.fetch()
        raise_for_absent_partitions(cluster, keys)
        by_leader: dict[int, list[tuple[str, int]]] = {}
        for tp in keys:
            leader = cluster.leader_for((tp[0], tp[1]))
            if leader is None:
                raise broker_error(5, None, f"partition {tp[0]}-{tp[1]} has no leader; try again shortly")
            by_leader.setdefault(leader.id, []).append(tp)
        return [(finder.broker_target(leader_id), tps) for leader_id, tps in by_leader.items()]

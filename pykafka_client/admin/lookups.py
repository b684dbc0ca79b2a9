"""The lookup stage of the admin driver (Java: the ``AdminApiLookupStrategy`` implementations): where each key
of a call goes. See :class:`~pykafka_client.admin.api_handler.LookupStrategy`.

The simple targets (any broker, the controller, named brokers) refresh the metadata when looked up again
after a stale answer. :class:`PartitionLeaders` reads each partition's leader from the metadata: a partition
the cluster does not have fails its key, one without a leader is looked up again after a backoff.
:class:`Coordinators` asks FindCoordinator for group or transactional ids: batched (v4 ``coordinator_keys``)
when the broker supports it, one key per request otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Generic, TypeVar

from pykafka_client.admin.admin_calls import absent_partition_error, broker_error, raise_for_absent_partitions
from pykafka_client.admin.api_handler import LookupResult, Target, TargetFinder
from pykafka_client.errors import for_code
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import FindCoordinatorRequest, FindCoordinatorResponse
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import Timer

K = TypeVar("K")

#: FindCoordinator key types
GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
#: the FindCoordinator version that takes several keys in one request (KIP-699)
BATCHED_FIND_COORDINATOR_VERSION = 4


def grouped(finder: TargetFinder, by_broker: dict[int, list[K]]) -> list[tuple[Target, list[K]]]:
    """Keys grouped by broker id, as targets: one request per broker, in the order the brokers first appear."""
    return [(finder.broker_target(broker_id), keys) for broker_id, keys in by_broker.items()]


class _RefreshWhenStale:
    """A lookup from the metadata, refreshed first when the keys' targets were stale. Its targets do not move
    under a call: an unreachable one is asked again until the call's timeout."""

    description: str
    targets_move = False

    def _fresh(self, finder: TargetFinder, timer: Timer, stale: bool) -> None:
        if stale:
            finder.refresh_metadata(timer, self.description)


@dataclass(frozen=True)
class LeastLoaded(_RefreshWhenStale):
    """Every key to the least-loaded broker, in one request."""

    description: str = "any broker"

    def lookup(self, finder: TargetFinder, keys: Sequence[K], timer: Timer, stale: bool) -> list[LookupResult[K]]:
        self._fresh(finder, timer, stale)
        return [LookupResult(mapped=[(finder.least_loaded, list(keys))])]


@dataclass(frozen=True)
class Controller(_RefreshWhenStale):
    """Every key to the controller (any broker while none is known), in one request; a NOT_CONTROLLER answer
    refreshes the metadata and resends."""

    description: str = "controller"

    def lookup(self, finder: TargetFinder, keys: Sequence[K], timer: Timer, stale: bool) -> list[LookupResult[K]]:
        self._fresh(finder, timer, stale)
        return [LookupResult(mapped=[(finder.controller_or_any, list(keys))])]


@dataclass(frozen=True)
class EachBroker(_RefreshWhenStale):
    """Each key is a broker id: one request to each broker (waited for while not in the metadata)."""

    description: str = "each broker"

    def lookup(self, finder: TargetFinder, keys: Sequence[int], timer: Timer, stale: bool
               ) -> list[LookupResult[int]]:
        self._fresh(finder, timer, stale)
        return [LookupResult(mapped=grouped(finder, {broker_id: [broker_id] for broker_id in keys}))]


#: the key of :class:`AllBrokers` that stands for every broker of the cluster
ALL_BROKERS = None


@dataclass(frozen=True)
class AllBrokers(_RefreshWhenStale):
    """Keys are broker ids, and :data:`ALL_BROKERS`, which the lookup replaces by the id of every broker in the
    metadata (fetched first while only the bootstrap addresses are known); one request to each broker, whose
    answers the call merges (Java ``AllBrokersStrategy``)."""

    description: str = "brokers"

    def lookup(self, finder: TargetFinder, keys: Sequence[int | None], timer: Timer, stale: bool
               ) -> list[LookupResult[int | None]]:
        self._fresh(finder, timer, stale)
        ids: dict[int, list[int | None]] = {}
        for key in keys:
            if key is not ALL_BROKERS:
                ids[key] = [key]
                continue
            nodes = finder.metadata.fetch().nodes
            if not stale and (not nodes or any(n.id < 0 for n in nodes)):  # only the bootstrap addresses so far
                finder.refresh_metadata(timer, self.description)
            ids.update((n.id, [n.id]) for n in finder.metadata.fetch().nodes)
        return [LookupResult(mapped=grouped(finder, ids))]


@dataclass(frozen=True)
class BrokerOrAny(_RefreshWhenStale, Generic[K]):
    """Keys grouped by ``broker_of(key)``: the keys of a broker id go to that broker, those of None to the
    least-loaded broker; one request per group, in the order the groups first appear."""

    broker_of: Callable[[K], int | None]
    description: str = "the broker of a resource"

    def lookup(self, finder: TargetFinder, keys: Sequence[K], timer: Timer, stale: bool) -> list[LookupResult[K]]:
        self._fresh(finder, timer, stale)
        groups: dict[int | None, list[K]] = {}
        for key in keys:
            groups.setdefault(self.broker_of(key), []).append(key)
        return [LookupResult(mapped=[(finder.least_loaded if broker_id is None else finder.broker_target(broker_id),
                                      items) for broker_id, items in groups.items()])]


@dataclass(frozen=True)
class CurrentLeaders:
    """Each key is a partition: grouped by its leader in fresh metadata (one refresh, no waiting): a partition
    the cluster does not have raises UnknownTopicOrPartitionError, one without a leader LeaderNotAvailableError,
    for the whole call. ``description``: why the leaders are looked up (the metadata timeout's message)."""

    description: str = "partition leaders"
    targets_move = False

    def lookup(self, finder: TargetFinder, keys: Sequence[tuple[str, int]], timer: Timer, stale: bool
               ) -> list[LookupResult[tuple[str, int]]]:
        finder.refresh_metadata(timer, self.description)
        cluster = finder.metadata.fetch()
        raise_for_absent_partitions(cluster, keys)
        by_leader: dict[int, list[tuple[str, int]]] = {}
        for tp in keys:
            leader = cluster.leader_for((tp[0], tp[1]))
            if leader is None:
                raise broker_error(5, None, f"partition {tp[0]}-{tp[1]} has no leader; try again shortly")
            by_leader.setdefault(leader.id, []).append(tp)
        return [LookupResult(mapped=grouped(finder, by_leader))]


@dataclass(frozen=True)
class PartitionLeaders:
    """Each key is a partition: grouped by its leader (Java ``PartitionLeaderStrategy``). The cached metadata
    serves while it names every leader; otherwise, and when the keys' leaders were stale, it is refreshed
    first. A partition the cluster does not have fails its key (UnknownTopicOrPartitionError), one without a
    leader (an election in progress) is looked up again after a backoff, until the call's timeout. A leader that
    cannot be reached (its broker died) is looked up again in refreshed metadata, as one answering
    NOT_LEADER_OR_FOLLOWER."""

    description: str = "partition leaders"
    targets_move = True

    def lookup(self, finder: TargetFinder, keys: Sequence[TopicPartition], timer: Timer, stale: bool
               ) -> list[LookupResult[TopicPartition]]:
        cluster = finder.metadata.fetch()
        if stale or any(cluster.leader_for((tp[0], tp[1])) is None for tp in keys):
            finder.refresh_metadata(timer, f"{self.description} of {', '.join(f'{t}-{p}' for t, p in keys)}")
            cluster = finder.metadata.fetch()
        result: LookupResult[TopicPartition] = LookupResult()
        by_leader: dict[int, list[TopicPartition]] = {}
        for tp in keys:
            absent = absent_partition_error(cluster, tp)
            leader = cluster.leader_for((tp[0], tp[1]))
            if absent is not None:
                result.failed[tp] = absent
            elif leader is None:
                result.unmapped[tp] = None
            else:
                by_leader.setdefault(leader.id, []).append(tp)
        result.mapped = grouped(finder, by_leader)
        return [result]


@dataclass(frozen=True)
class Coordinators:
    """Each key is a group id (``key_type`` 0) or a transactional id (1), sent to its coordinator, found with
    FindCoordinator (Java ``CoordinatorStrategy``). ``batched``: every key is looked up at once (one
    FindCoordinator v4 for all of them, one per key from a broker older than v4) and the keys of a coordinator
    go in one request; otherwise each key is looked up just before its own request. A retriable lookup error
    (COORDINATOR_NOT_AVAILABLE) looks the key up again after a backoff; any other fails only its key. A
    coordinator that cannot be reached (its broker died) is looked up again, as one that answers NOT_COORDINATOR
    (Java ``AdminApiDriver`` on a disconnect)."""

    key_type: int
    batched: bool
    description: str
    targets_move = True

    def lookup(self, finder: TargetFinder, keys: Sequence[str], timer: Timer, stale: bool
               ) -> Iterator[LookupResult[str]]:
        if self.batched:
            yield self.find(finder, keys, timer)
        else:
            for key in keys:
                yield self.find(finder, [key], timer)

    def find(self, finder: TargetFinder, keys: Sequence[str], timer: Timer) -> LookupResult[str]:
        """The coordinators of ``keys``: as many FindCoordinator requests as the broker's version needs."""
        result: LookupResult[str] = LookupResult()
        by_node: dict[int, list[str]] = {}
        todo = list(keys)
        while todo:
            asked: list[tuple[int, list[str]]] = []
            _, response = finder.send(ApiKey.FIND_COORDINATOR, partial(self.build_request, keys=todo, asked=asked),
                                      finder.least_loaded, timer)
            version, sent = asked[-1]
            self.handle_response(version, sent, response, result, by_node)
            todo = todo[len(sent):]
        result.mapped = grouped(finder, by_node)
        return result

    def build_request(self, version: int, keys: list[str], asked: list[tuple[int, list[str]]]
                      ) -> FindCoordinatorRequest:
        """The lookup of ``keys`` (only the first before v4); appends the version and the keys it asks about to
        ``asked``."""
        if version >= BATCHED_FIND_COORDINATOR_VERSION:
            asked.append((version, keys))
            return FindCoordinatorRequest(key_type=self.key_type, coordinator_keys=keys)
        asked.append((version, keys[:1]))
        return FindCoordinatorRequest(key=keys[0], key_type=self.key_type)

    def handle_response(self, version: int, keys: list[str], response: FindCoordinatorResponse,
                        result: LookupResult[str], by_node: dict[int, list[str]]) -> None:
        """Each asked key's coordinator (the answer of a request at ``version``) into ``by_node``, or its error
        into ``result``; a key the broker did not answer for is looked up again."""
        assert isinstance(response, FindCoordinatorResponse)
        if version >= BATCHED_FIND_COORDINATOR_VERSION:
            answers = {c.key: (c.error_code, c.error_message, c.node_id) for c in response.coordinators}
        else:
            answers = {keys[0]: (response.error_code, response.error_message, response.node_id)}
        what = "transactional id" if self.key_type == TRANSACTION_KEY_TYPE else "group"
        for key in keys:
            code, message, node_id = answers.get(key, (None, None, -1))
            if code is None:
                result.unmapped[key] = None
            elif code:
                error = broker_error(code, message, f"finding the coordinator of {what} {key!r}")
                if for_code(code).retriable:
                    result.unmapped[key] = error
                else:
                    result.failed[key] = error
            else:
                by_node.setdefault(node_id, []).append(key)


#: the group coordinators: each group looked up just before its request
GROUP_COORDINATOR = Coordinators(GROUP_KEY_TYPE, batched=False, description="group coordinator")
#: the transaction coordinators: every transactional id looked up at once, one request per coordinator
TRANSACTION_COORDINATORS = Coordinators(TRANSACTION_KEY_TYPE, batched=True, description="transaction coordinator")

"""The client's cached cluster metadata and its refresh policy (Java: ``clients.Metadata``).

Thread-safe (one lock; never held while calling out). Times are monotonic ms passed by the caller.

Refresh policy:

* An update is due when requested (:meth:`request_update`) or when the data is older than
  ``metadata.max.age.ms``, but never sooner than the retry backoff after the last attempt
  (exponential from ``retry.backoff.ms`` to ``retry.backoff.max.ms``, growing with failed attempts).
* Leader epochs never go backwards: a response carrying an older epoch for a partition keeps the cached
  partition; an out-of-band higher epoch (from a fetch or produce response) makes the cached leader
  unknown until metadata with that epoch arrives.
* Leader hints from produce and fetch responses (KIP-951, :meth:`update_partition_leadership`): a hinted
  leader with a newer epoch replaces the cached one at once, without waiting for a metadata round trip.
* The error each topic had in the last response that named it (UNKNOWN_TOPIC_OR_PARTITION for a topic that
  does not exist and was not auto-created, LEADER_NOT_AVAILABLE while it is being created, ...) is kept
  until a response names the topic without error (:meth:`topic_error`), so a caller that times out waiting
  for the topic can say why.
* Fatal errors (authentication, set via :meth:`fatal_error`) and topic errors (invalid / unauthorized
  topics from the last response) are raised once by :meth:`maybe_throw_any_exception`, then cleared.
* With ``metadata.recovery.strategy=rebootstrap`` the node list is reset to the bootstrap servers
  (:meth:`rebootstrap`) when no known broker can be reached.
"""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import replace

from pykafka_client.errors import (
    BrokerResponseError,
    IllegalArgumentError,
    InvalidTopicError,
    TopicAuthorizationFailedError,
    for_code,
)
from pykafka_client.network.cluster import Cluster, LeaderAndEpoch, PartitionInfo
from pykafka_client.network.exponential_backoff import ExponentialBackoff
from pykafka_client.protocol.messages import MetadataRequest, MetadataResponse
from pykafka_client.structs import Node

_TOPIC_AUTHORIZATION_FAILED = 29
_INVALID_TOPIC = 17
_LEADER_NOT_AVAILABLE = 5
_LISTENER_NOT_FOUND = 72

#: Metadata response versions from which leader epochs can be trusted (Java: version >= 9).
_RELIABLE_LEADER_EPOCH_MIN_VERSION = 9
#: :attr:`Metadata.no_update_before_ms` while an update may be due (requested, failed, being attempted, ...)
UPDATE_MAY_BE_DUE = -(2**63)


class Metadata:
    """Cached cluster metadata shared by a NetworkClient and its users."""

    #: ``no_update_before_ms`` in a slot: the kernel's client paths read it on every poll and ready, at its offset
    __slots__ = ("__dict__", "__weakref__", "no_update_before_ms")

    def __init__(
        self,
        refresh_backoff_ms: int = 100,
        refresh_backoff_max_ms: int = 1000,
        metadata_expire_ms: int = 300_000,
        *,
        allow_auto_topic_creation: bool = True,
        rng: random.Random | None = None,
    ) -> None:
        self._lock = threading.RLock()
        self.refresh_backoff_ms = refresh_backoff_ms
        self.metadata_expire_ms = metadata_expire_ms
        self._refresh_backoff = ExponentialBackoff(refresh_backoff_ms, 2, refresh_backoff_max_ms, 0.2, rng)
        self.allow_auto_topic_creation = allow_auto_topic_creation
        self._cluster = Cluster.empty()
        self._bootstrap_addresses: list[tuple[str, int]] = []
        self._last_refresh_ms = 0
        self._last_successful_refresh_ms = 0
        self._attempts = 0
        self._update_version = 0
        self._request_version = 0
        self._need_full_update = False
        self._need_partial_update = False
        self._last_seen_leader_epochs: dict[tuple[str, int], int] = {}
        self._fatal_exception: BaseException | None = None
        self._invalid_topics: set[str] = set()
        self._unauthorized_topics: set[str] = set()
        # topic -> error code of the last response that named it with an error
        self._topic_errors: dict[str, int] = {}
        self._listeners: list[Callable[[Cluster], None]] = []
        self._closed = False
        #: When the current run of update attempts started (None when the last attempt succeeded): read-only outside
        #: this class (the updater's per-poll :meth:`needs_rebootstrap` question reads it without a call).
        self.attempt_start_ms: int | None = None
        #: Before this time (ms) no update is due and none is being attempted: no update was requested and the last
        #: one succeeded, so :meth:`time_to_next_update` is ``no_update_before_ms - now`` (the time to its expiry) and
        #: :attr:`attempt_start_ms` is None (no rebootstrap is due). Set by a successful update (with nothing
        #: requested since and no retry backoff that could outlast the expiry), and back to ``UPDATE_MAY_BE_DUE`` by
        #: anything else that changes those answers (always under the lock). Read-only outside this class: the
        #: NetworkClient's per-request and per-poll questions read it instead of calling (its updater's
        #: ``update_deadline``); read without the lock, an update requested meanwhile is as if requested just after.
        self.no_update_before_ms = UPDATE_MAY_BE_DUE

    # --- bootstrap -----------------------------------------------------------------------------

    def bootstrap(self, addresses: Iterable[tuple[str, int]]) -> None:
        """Start from the bootstrap servers (nodes -1, -2, ...) and ask for a full update."""
        with self._lock:
            self._bootstrap_addresses = list(addresses)
            self._cluster = Cluster.bootstrap(self._bootstrap_addresses)
            self._need_full_update = True
            self.no_update_before_ms = UPDATE_MAY_BE_DUE
            self._update_version += 1

    def is_bootstrapped(self) -> bool:
        return bool(self._cluster.nodes)

    def rebootstrap(self) -> None:
        """Forget the known brokers and go back to the bootstrap servers (KIP-899)."""
        with self._lock:
            self._cluster = Cluster.bootstrap(self._bootstrap_addresses)
            self._need_full_update = True
            self.no_update_before_ms = UPDATE_MAY_BE_DUE
            self._update_version += 1
            self.attempt_start_ms = None

    def attempt_started(self, now_ms: int) -> None:
        """An update attempt is starting; remembers when the current run of attempts began."""
        with self._lock:
            self.no_update_before_ms = UPDATE_MAY_BE_DUE
            if self.attempt_start_ms is None:
                self.attempt_start_ms = now_ms

    def needs_rebootstrap(self, now_ms: int, rebootstrap_trigger_ms: int) -> bool:
        """True when updates have been failing for longer than ``rebootstrap_trigger_ms``."""
        start = self.attempt_start_ms
        return start is not None and now_ms - start > rebootstrap_trigger_ms

    # --- reading -------------------------------------------------------------------------------

    def fetch(self) -> Cluster:
        return self._cluster

    def update_version(self) -> int:
        return self._update_version

    def last_successful_update_ms(self) -> int:
        return self._last_successful_refresh_ms

    def last_seen_leader_epoch(self, tp: tuple[str, int]) -> int | None:
        return self._last_seen_leader_epochs.get((tp[0], tp[1]))

    def current_leader(self, tp: tuple[str, int]) -> LeaderAndEpoch:
        """The cached leader, or an unknown leader if a newer epoch was seen out of band."""
        key = (tp[0], tp[1])
        with self._lock:
            epoch = self._last_seen_leader_epochs.get(key)
            info = self._cluster.partitions.get(key)
            if info is None or (epoch is not None and info.leader_epoch != epoch):
                return LeaderAndEpoch(None, epoch)
            return LeaderAndEpoch(info.leader, info.leader_epoch)

    def topic_error(self, topic: str) -> type[BrokerResponseError] | None:
        """The error ``topic`` had in the last metadata response that named it, or None (no error, or not
        asked for yet). UnknownTopicOrPartitionError: the broker does not know the topic and did not create it."""
        code = self._topic_errors.get(topic)
        return for_code(code) if code else None

    def add_listener(self, listener: Callable[[Cluster], None]) -> None:
        """Call ``listener(cluster)`` after every successful update (outside the lock)."""
        self._listeners.append(listener)

    # --- refresh policy ------------------------------------------------------------------------

    def request_update(self) -> int:
        """Ask for a full update as soon as the backoff allows; returns the current update version."""
        with self._lock:
            self._need_full_update = True
            self.no_update_before_ms = UPDATE_MAY_BE_DUE
            return self._update_version

    def request_update_for_new_topics(self) -> int:
        with self._lock:
            self._need_partial_update = True
            self.no_update_before_ms = UPDATE_MAY_BE_DUE
            return self._update_version

    def update_requested(self) -> bool:
        return self._need_full_update or self._need_partial_update

    def time_to_allow_update(self, now_ms: int) -> int:
        """Ms before another refresh may be attempted (the retry backoff after the last attempt)."""
        with self._lock:
            if self._last_refresh_ms == 0 and self._attempts == 0:
                return 0
            backoff = self._refresh_backoff.backoff(max(self._attempts - 1, 0))
            return max(self._last_refresh_ms + backoff - now_ms, 0)

    def time_to_next_update(self, now_ms: int) -> int:
        """Ms until the next update is due: 0 if requested (or expired) and the backoff has passed."""
        # The common case (no update requested, no backoff outlasting the expiry: the answer is the time to the
        # expiry) without the lock: the I/O thread asks at least twice per iteration (is_update_due, maybe_update).
        # An update requested on another thread meanwhile is as if requested just after this read; update() writes
        # the last refresh before the last successful one, read here in the other order, so a read between the two
        # sees the old successful refresh with either last refresh, and an old successful refresh is an earlier
        # expiry (at worst the locked path below decides).
        if not (self._need_full_update or self._need_partial_update):
            time_to_expire = self._last_successful_refresh_ms + self.metadata_expire_ms - now_ms
            if time_to_expire < 0:
                time_to_expire = 0
            if time_to_expire >= self._last_refresh_ms + self._refresh_backoff.upper_bound - now_ms:
                return time_to_expire
        with self._lock:
            if self._need_full_update or self._need_partial_update:  # update_requested(), once per poll
                time_to_expire = 0
            else:
                time_to_expire = self._last_successful_refresh_ms + self.metadata_expire_ms - now_ms
                if time_to_expire < 0:
                    time_to_expire = 0
                if time_to_expire >= self._last_refresh_ms + self._refresh_backoff.upper_bound - now_ms:
                    return time_to_expire  # no backoff outlasts the expiry (the common case: no jitter draw)
            return max(time_to_expire, self.time_to_allow_update(now_ms))

    def topics_to_request(self) -> list[str] | None:
        """Topics for the next request; None = all topics. Subclasses (consumer/producer) narrow it."""
        return None

    def new_metadata_request(self) -> tuple[MetadataRequest, bool]:
        """The next MetadataRequest and whether it is a partial update."""
        topics = self.topics_to_request()
        if topics is None:
            return MetadataRequest(topics=None, allow_auto_topic_creation=self.allow_auto_topic_creation), False
        body = MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=self.allow_auto_topic_creation,
        )
        return body, True

    def request_version(self) -> int:
        return self._request_version

    # --- updates -------------------------------------------------------------------------------

    def failed_update(self, now_ms: int) -> None:
        with self._lock:
            self._last_refresh_ms = now_ms
            self._attempts += 1
            self.no_update_before_ms = UPDATE_MAY_BE_DUE

    def fatal_error(self, exception: BaseException) -> None:
        with self._lock:
            self._fatal_exception = exception

    def update(self, request_version: int, response: MetadataResponse, is_partial: bool, now_ms: int,
               response_version: int = 12) -> None:
        """Apply a metadata response received at ``now_ms``."""
        with self._lock:
            self._last_refresh_ms = now_ms
            self._last_successful_refresh_ms = now_ms
            self._attempts = 0
            self.attempt_start_ms = None
            self._update_version += 1
            if not is_partial:
                self._need_full_update = False
            self._need_partial_update = False
            # (time_to_next_update's answer from now until the expiry: no backoff outlasts it, nothing requested)
            expires = now_ms + self.metadata_expire_ms
            quiet = not self._need_full_update and self.metadata_expire_ms >= self._refresh_backoff.upper_bound
            self.no_update_before_ms = expires if quiet else UPDATE_MAY_BE_DUE
            self._cluster = self._build_cluster(response, is_partial, response_version)
            cluster = self._cluster
        for listener in list(self._listeners):
            listener(cluster)

    def _build_cluster(self, response: MetadataResponse, is_partial: bool, response_version: int) -> Cluster:
        nodes = tuple(Node(int(b.node_id), str(b.host), int(b.port), b.rack) for b in response.brokers)
        by_id = {n.id: n for n in nodes}
        reliable_epochs = response_version >= _RELIABLE_LEADER_EPOCH_MIN_VERSION
        old = self._cluster
        partitions: dict[tuple[str, int], PartitionInfo] = {}
        topic_ids: dict[str, uuid.UUID] = {}
        unauthorized: set[str] = set()
        invalid: set[str] = set()
        internal: set[str] = set()
        seen_topics: set[str] = set()
        topic_errors = dict(self._topic_errors) if is_partial else {}
        for topic in response.topics:
            name = topic.name
            if name is None:
                continue
            seen_topics.add(name)
            if topic.error_code:
                topic_errors[name] = int(topic.error_code)
            else:
                topic_errors.pop(name, None)
            if topic.error_code == _TOPIC_AUTHORIZATION_FAILED:
                unauthorized.add(name)
                continue
            if topic.error_code == _INVALID_TOPIC:
                invalid.add(name)
                continue
            if topic.error_code != 0 and not topic.partitions:
                continue
            if getattr(topic, "is_internal", False):
                internal.add(name)
            tid = getattr(topic, "topic_id", None)
            if tid is not None and int(getattr(tid, "int", 0)) != 0:
                topic_ids[name] = tid
            for p in topic.partitions:
                key = (name, int(p.partition_index))
                partitions[key] = self._partition_with_epoch(key, p, by_id, reliable_epochs, old)
        if is_partial:
            for key, info in old.partitions.items():
                if key[0] not in seen_topics:
                    partitions.setdefault(key, info)
            for name, tid in old.topic_ids.items():
                if name not in seen_topics:
                    topic_ids.setdefault(name, tid)
        self._unauthorized_topics = unauthorized
        self._invalid_topics = invalid
        self._topic_errors = topic_errors
        controller_id = int(getattr(response, "controller_id", -1))
        return Cluster(
            nodes,
            partitions,
            getattr(response, "cluster_id", None),
            by_id.get(controller_id),
            topic_ids,
            frozenset(unauthorized),
            frozenset(invalid),
            frozenset(internal),
        )

    def _partition_with_epoch(
        self, key: tuple[str, int], p: MetadataResponse.MetadataResponsePartition,
        by_id: dict[int, Node], reliable_epochs: bool, old: Cluster,
    ) -> PartitionInfo:
        leader = by_id.get(int(p.leader_id)) if p.leader_id >= 0 else None
        epoch = int(p.leader_epoch) if p.leader_epoch >= 0 else None
        info = PartitionInfo(
            key[0], key[1], leader, epoch, tuple(p.replica_nodes), tuple(p.isr_nodes),
            tuple(getattr(p, "offline_replicas", ()) or ()), int(p.error_code),
        )
        if reliable_epochs and epoch is not None:
            current = self._last_seen_leader_epochs.get(key)
            if current is None or epoch >= current:
                self._last_seen_leader_epochs[key] = epoch
                return info
            # Older than what we have seen: keep the cached partition (epochs never regress).
            cached = old.partitions.get(key)
            if cached is not None:
                return cached
            return PartitionInfo(key[0], key[1], None, None, info.replicas, info.in_sync_replicas,
                                 info.offline_replicas, info.error_code)
        self._last_seen_leader_epochs.pop(key, None)
        return PartitionInfo(key[0], key[1], leader, None, info.replicas, info.in_sync_replicas,
                             info.offline_replicas, info.error_code)

    def update_last_seen_epoch_if_newer(self, tp: tuple[str, int], leader_epoch: int) -> bool:
        """Record an out-of-band leader epoch (from a fetch/produce response). True if it was newer,
        in which case the cached leader becomes unknown and a full update is requested."""
        if leader_epoch < 0:
            raise IllegalArgumentError(f"invalid leader epoch {leader_epoch} (must be non-negative)")
        key = (tp[0], tp[1])
        with self._lock:
            old = self._last_seen_leader_epochs.get(key)
            if old is None or leader_epoch <= old:
                return False
            self._last_seen_leader_epochs[key] = leader_epoch
            self._need_full_update = True
            self.no_update_before_ms = UPDATE_MAY_BE_DUE
            return True

    # --- KIP-951 ------------------------------------------------------------------------------------

    def update_partition_leadership(self, leaders: dict[tuple[str, int], tuple[int, int]], nodes: Iterable[Node]) -> set[tuple[str, int]]:
        """Apply ``{tp: (leader_id, leader_epoch)}`` hints from a produce or fetch response; returns the partitions updated.

        A hint is applied only if its epoch is newer than the cached one and its leader node is known
        (from ``nodes`` or the cluster); otherwise it is ignored.
        """
        updated: set[tuple[str, int]] = set()
        with self._lock:
            cluster = self._cluster
            by_id = {n.id: n for n in cluster.nodes}
            for n in nodes:
                by_id.setdefault(n.id, n)
            partitions = dict(cluster.partitions)
            for tp, (leader_id, epoch) in leaders.items():
                key = (tp[0], tp[1])
                info = partitions.get(key)
                node = by_id.get(leader_id)
                if info is None or node is None or epoch < 0:
                    continue
                cached = info.leader_epoch
                if cached is not None and epoch <= cached:
                    continue
                partitions[key] = replace(info, leader=node, leader_epoch=epoch)
                seen = self._last_seen_leader_epochs.get(key)
                if seen is None or epoch >= seen:
                    self._last_seen_leader_epochs[key] = epoch
                updated.add(key)
            if updated:
                self._cluster = replace(cluster, nodes=tuple(by_id.values()), partitions=partitions)
                self._update_version += 1
        return updated

    # --- errors --------------------------------------------------------------------------------

    def maybe_throw_any_exception(self) -> None:
        """Raise the pending fatal error, else a topic error from the last update; clear them."""
        with self._lock:
            exc: BaseException | None = self._fatal_exception
            if exc is None:
                if self._unauthorized_topics:
                    exc = TopicAuthorizationFailedError(
                        f"not authorized to access topics: {sorted(self._unauthorized_topics)}"
                    )
                elif self._invalid_topics:
                    exc = InvalidTopicError(f"invalid topics: {sorted(self._invalid_topics)}")
            self._fatal_exception = None
            self._unauthorized_topics = set()
            self._invalid_topics = set()
        if exc is not None:
            raise exc

    def maybe_throw_fatal_exception(self) -> None:
        with self._lock:
            exc, self._fatal_exception = self._fatal_exception, None
        if exc is not None:
            raise exc

    def close(self) -> None:
        self._closed = True

    def is_closed(self) -> bool:
        return self._closed


#: MetadataRequest versions that can carry "all topics" (a null topic list) and "do not auto-create".
ALL_TOPICS_MIN_VERSION = 1
NO_AUTO_CREATE_MIN_VERSION = 4


def oldest_metadata_version(body: MetadataRequest) -> int:
    """The lowest MetadataRequest version that says what ``body`` means, an explicit decision like the one
    Java's ``MetadataRequest.Builder`` makes: "all topics" is a null list, which v0 lacks (its empty list
    would mean all, but an empty list means none from v1 on); "do not auto-create" needs v4, since v0-v3
    brokers auto-create every topic asked for. Below that version the request fails with
    UnsupportedVersionError instead of asking the broker for something else."""
    oldest = 0
    if body.topics is None:
        oldest = ALL_TOPICS_MIN_VERSION
    if not body.allow_auto_topic_creation:
        oldest = NO_AUTO_CREATE_MIN_VERSION
    return oldest

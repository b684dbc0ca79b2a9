"""The controller's metadata state machine (Kafka: ``QuorumController`` with ``ClusterControlManager`` and
``ReplicationControlManager``), sans-IO: time comes from an injected clock, persistence from a callback.

What it owns: the registered brokers (host, port, broker epoch, fenced or not, last heartbeat), the topics
(id, configs, partitions) and, per partition, the replicas, the ISR, the leader, the leader epoch and the
partition epoch. Every change bumps :attr:`ControllerState.version` and is persisted as a *delta*: ``persist``
gets ``{"version": v, "entries": [[kind, key, value or None], ...]}`` naming only the image entries the change
touched (a topic, a broker, the ACLs, the id counters), so a change costs what it changed, not the image's size
(the controller appends deltas to its metadata log and snapshots :meth:`ControllerState.image` now and then;
:meth:`ControllerState.replay` applies a delta to a loaded snapshot). The latest deltas are also kept in memory
(as many entries as the image has, at least :data:`DELTA_RETENTION_ENTRIES`) for the brokers:
:meth:`ControllerState.changes_since` gives a broker the deltas after the version it applied, or the image when
it just started or is further behind than the deltas kept (Kafka: a broker fetching the metadata log from its
offset, or the latest snapshot). A new kind of image entry is one :class:`EntryKind` in :data:`ENTRY_KINDS`
plus a ``_touch(kind, key)`` where it changes, plus how a broker applies it (mini_broker.cluster.metadata_image).

A request that changes many things at once (CreateTopics of many topics, DeleteTopics, CreatePartitions) runs
in :meth:`ControllerState.batch`: one version, one delta, one propagation for all of it.

Rules (Kafka's KRaft controller):

* a broker that registers is unfenced at once; registering again (a restart) first fences the old
  incarnation, so a restarted leader loses its leadership before it can serve again;
* a broker whose heartbeats stop for ``broker.session.timeout.ms`` is fenced: it leaves every ISR it is in
  (unless it is the last member, which stays there so that it is the one elected when it comes back), and
  partitions it led get a new leader elected from the ISR, with the leader epoch bumped;
* a leader is elected only from the ISR (first alive ISR member in replica order); with
  ``unclean.leader.election.enable`` (topic or cluster) an alive out-of-sync replica may be chosen, the ISR
  then being just that replica;
* leadership that failovers piled up on the survivors goes back to the preferred replicas (the first of each
  replica list) every ``leader.imbalance.check.interval.seconds`` for the brokers whose share of partitions led
  by others is above ``leader.imbalance.per.broker.percentage`` (``auto.leader.rebalance.enable``), where the
  preferred replica is alive and in the ISR: :meth:`ControllerState.maybe_balance_partition_leaders`;
* ISR changes come from the partition leader (AlterPartition): they are accepted only with the current
  leader epoch and partition epoch, and only with unfenced replicas that are in the replica set.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from pykafka_client.errors import (
    ElectionNotNeededError,
    EligibleLeadersNotAvailableError,
    FencedLeaderEpochError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    InvalidUpdateVersionError,
    NoReassignmentInProgressError,
    PreferredLeaderNotAvailableError,
    StaleBrokerEpochError,
    TopicExistsError,
    UnknownTopicOrPartitionError,
)
from pykafka_client.errors_base import KafkaError
from pykafka_client.utils.time import Time

NO_LEADER = -1
PRODUCER_ID_BLOCK = 1000
#: the fewest delta entries kept for brokers to catch up from (more are kept while they are fewer than the image
#: has entries: a broker that is further behind gets the image, which costs no more than the deltas would)
DELTA_RETENTION_ENTRIES = 2000


@dataclass
class PartitionRegistration:
    replicas: list[int]
    isr: list[int]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    #: an ongoing reassignment (KIP-455): the replicas being added / removed (``replicas`` holds both)
    adding_replicas: list[int] = field(default_factory=list)
    removing_replicas: list[int] = field(default_factory=list)

    @property
    def target_replicas(self) -> list[int]:
        """The replicas once the reassignment completes (the replicas when there is none)."""
        return [r for r in self.replicas if r not in self.removing_replicas]

    @property
    def original_replicas(self) -> list[int]:
        """The replicas before the reassignment (what cancelling it restores)."""
        return [r for r in self.replicas if r not in self.adding_replicas]


@dataclass
class TopicRegistration:
    name: str
    topic_id: str
    configs: dict[str, str]
    partitions: list[PartitionRegistration] = field(default_factory=list)


@dataclass
class BrokerRegistration:
    broker_id: int
    host: str
    port: int
    broker_epoch: int
    fenced: bool = False
    last_heartbeat_ms: int = 0
    #: the image version the broker reported in its last heartbeat (what it has applied)
    metadata_version: int = -1
    #: every listener of the broker, ``{"name", "host", "port", "security_protocol"}`` (Kafka: BrokerRegistration's
    #: listeners); ``host``/``port`` above are the inter-broker listener's
    listeners: list[dict[str, Any]] = field(default_factory=list)


def _copy_partition(reg: PartitionRegistration) -> PartitionRegistration:
    return replace(reg, replicas=list(reg.replicas), isr=list(reg.isr), adding_replicas=list(reg.adding_replicas),
                   removing_replicas=list(reg.removing_replicas))


def _copy_topic(t: TopicRegistration) -> TopicRegistration:
    return replace(t, configs=dict(t.configs), partitions=[_copy_partition(p) for p in t.partitions])


def elect_leader(reg: PartitionRegistration, alive: set[int], unclean: bool) -> tuple[int, list[int]]:
    """(leader, ISR) after an election: the first alive ISR member in replica order; else, when ``unclean``,
    the first alive replica (its ISR becomes just itself); else NO_LEADER with the ISR unchanged."""
    for r in reg.replicas:
        if r in reg.isr and r in alive:
            return r, list(reg.isr)
    if unclean:
        for r in reg.replicas:
            if r in alive:
                return r, [r]
    return NO_LEADER, list(reg.isr)


def _load_partition(p: dict[str, Any]) -> PartitionRegistration:
    return PartitionRegistration(list(p["replicas"]), list(p["isr"]), int(p["leader"]), int(p["leader_epoch"]),
                                 int(p["partition_epoch"]), [int(r) for r in p.get("adding_replicas", [])],
                                 [int(r) for r in p.get("removing_replicas", [])])


def _load_topic(t: dict[str, Any]) -> TopicRegistration:
    return TopicRegistration(t["name"], t["topic_id"], dict(t.get("configs", {})),
                             [_load_partition(p) for p in t["partitions"]])


@dataclass(frozen=True)
class EntryKind:
    """One kind of image entry: how a delta writes it (``dump``: its JSON value, None when it is gone) and how
    a replayed delta restores it (``load``: value None removes it)."""

    dump: Callable[[ControllerState, str], Any]
    load: Callable[[ControllerState, str, Any], None]


def _dump_topic(s: ControllerState, key: str) -> Any:
    t = s.topics.get(key)
    return None if t is None else asdict(t)


def _load_topic_entry(s: ControllerState, key: str, value: Any) -> None:
    if value is None:
        s.topics.pop(key, None)
    else:
        s.topics[key] = _load_topic(value)


#: registration fields that change without a new image version (kept out of images and deltas)
_VOLATILE_BROKER_FIELDS = ("last_heartbeat_ms", "metadata_version")


def broker_entry(b: BrokerRegistration) -> dict[str, Any]:
    """A broker's image entry: its registration without what heartbeats change."""
    entry = asdict(b)
    for volatile in _VOLATILE_BROKER_FIELDS:
        del entry[volatile]
    return entry


def _dump_broker(s: ControllerState, key: str) -> Any:
    b = s.brokers.get(int(key))
    return None if b is None else broker_entry(b)


def _load_broker_entry(s: ControllerState, key: str, value: Any) -> None:
    if value is None:
        s.brokers.pop(int(key), None)
    else:
        s.brokers[int(key)] = BrokerRegistration(int(value["broker_id"]), value["host"], int(value["port"]),
                                                 int(value["broker_epoch"]), bool(value["fenced"]),
                                                 s.time.milliseconds(), listeners=list(value.get("listeners", [])))


def _dump_counters(s: ControllerState, key: str) -> Any:
    return {"next_broker_epoch": s.next_broker_epoch, "next_producer_id": s.next_producer_id}


def _load_counters(s: ControllerState, key: str, value: Any) -> None:
    s.next_broker_epoch = int(value["next_broker_epoch"])
    s.next_producer_id = int(value["next_producer_id"])


def _load_acls(s: ControllerState, key: str, value: Any) -> None:
    s.acls = [dict(a) for a in value or []]


def _load_scram_credentials(s: ControllerState, key: str, value: Any) -> None:
    s.scram_credentials = [dict(c) for c in value or []]


#: every kind of image entry a delta can carry
ENTRY_KINDS: dict[str, EntryKind] = {
    "topic": EntryKind(_dump_topic, _load_topic_entry),
    "broker": EntryKind(_dump_broker, _load_broker_entry),
    "counters": EntryKind(_dump_counters, _load_counters),
    "acls": EntryKind(lambda s, key: list(s.acls), _load_acls),
    "scram_credentials": EntryKind(lambda s, key: list(s.scram_credentials), _load_scram_credentials),
}


@dataclass(frozen=True)
class LeaderBalanceConfig:
    """Automatic preferred leader election (Kafka: ``auto.leader.rebalance.enable``,
    ``leader.imbalance.check.interval.seconds``, ``leader.imbalance.per.broker.percentage``)."""

    enable: bool = True
    check_interval_ms: int = 300_000
    per_broker_percentage: int = 10


@dataclass(frozen=True)
class TopicSpec:
    """One topic of a CreateTopics request: ``assignment`` (partition -> replicas) or a partition count and
    replication factor."""

    name: str
    num_partitions: int
    replication_factor: int
    configs: dict[str, str]
    assignment: list[list[int]] | None = None


class ControllerState:
    """See the module docstring. Thread-safe (one lock); ``persist`` is called under it."""

    def __init__(self, cluster_id: str, time: Time, session_timeout_ms: int, unclean_leader_election: bool = False,
                 persist: Callable[[dict[str, Any]], None] | None = None, image: dict[str, Any] | None = None,
                 delta_retention_entries: int = DELTA_RETENTION_ENTRIES,
                 leader_balance: LeaderBalanceConfig | None = None) -> None:
        self.cluster_id = cluster_id
        self.time = time
        self.session_timeout_ms = session_timeout_ms
        self.unclean_leader_election = unclean_leader_election
        self.leader_balance = leader_balance or LeaderBalanceConfig()
        #: when the next leader imbalance check is due (Kafka: the first one an interval after the start)
        self._next_leader_balance_ms = time.milliseconds() + self.leader_balance.check_interval_ms
        self._persist = persist
        self._lock = threading.RLock()
        self._heartbeats = threading.Condition(self._lock)
        self.version = 0
        self.brokers: dict[int, BrokerRegistration] = {}
        self.topics: dict[str, TopicRegistration] = {}
        self.next_broker_epoch = 1
        self.next_producer_id = 0
        #: the ACL bindings (as mini_broker.security.authorizer.binding_to_json writes them), in creation order
        self.acls: list[dict[str, str]] = []
        #: the SCRAM credentials (as mini_broker.security.scram_credentials.credential_to_json writes them: salted
        #: keys only), sorted by user and mechanism (Kafka: UserScramCredentialsRecord)
        self.scram_credentials: list[dict[str, Any]] = []
        #: the (kind, key) entries changed since the last persisted delta
        self._dirty: dict[tuple[str, str], None] = {}
        self._batch_depth = 0
        #: (version, image) of the last image built
        self._image: tuple[int, dict[str, Any]] | None = None
        #: the latest published deltas, oldest first, for brokers to catch up from (Kafka: the metadata log
        #: after its latest snapshot); they follow version ``_deltas_start`` with no gap
        self._deltas: deque[dict[str, Any]] = deque()
        self._delta_entries = 0
        self.delta_retention_entries = delta_retention_entries
        #: how many times a broker was sent the whole image rather than deltas (started, or too far behind)
        self.images_served = 0
        #: broker id -> (broker epoch, arrival ms) of its latest heartbeat, noted before it takes the lock
        self._heartbeat_arrivals: dict[int, tuple[int, int]] = {}
        #: broker id -> broker epoch of a heartbeat that arrived and waits for the lock (not processed yet)
        self._heartbeats_waiting: dict[int, int] = {}
        #: normalised topic name -> topic name (Kafka's '.'/'_' collision rule); None: rebuilt at next use
        self._collision_index: dict[str, str] | None = None
        if image is not None:
            self._load(image)
        self._deltas_start = self.version

    @property
    def lock(self) -> threading.RLock:
        """The state's lock (the persistence callback runs under it)."""
        return self._lock

    # --- persistence ------------------------------------------------------------------------------

    def _load(self, image: dict[str, Any]) -> None:
        self.version = int(image["version"])
        self.next_broker_epoch = int(image.get("next_broker_epoch", 1))
        self.next_producer_id = int(image.get("next_producer_id", 0))
        self.acls = [dict(a) for a in image.get("acls", [])]
        self.scram_credentials = [dict(c) for c in image.get("scram_credentials", [])]
        now = self.time.milliseconds()
        for b in image.get("brokers", []):
            # after a controller restart every broker must heartbeat again before its session is trusted
            self.brokers[int(b["broker_id"])] = BrokerRegistration(int(b["broker_id"]), b["host"], int(b["port"]),
                                                                   int(b["broker_epoch"]), bool(b["fenced"]), now,
                                                                   listeners=list(b.get("listeners", [])))
        for t in image.get("topics", []):
            self.topics[t["name"]] = _load_topic(t)

    def replay(self, delta: dict[str, Any]) -> None:
        """Apply one persisted delta (a controller restart: snapshot, then the deltas after it)."""
        with self._lock:
            version = int(delta["version"])
            if version <= self.version:
                return
            for kind, key, value in delta["entries"]:
                ENTRY_KINDS[kind].load(self, key, value)
            self._collision_index = None
            if version != self.version + 1:  # not a continuation of the deltas kept: brokers start from here
                self._deltas.clear()
                self._delta_entries = 0
                self._deltas_start = version
            self.version = version
            self._retain(delta)

    def image(self) -> dict[str, Any]:
        """The whole metadata image (what brokers apply and what is snapshotted). Built once per version (every
        broker's fetch of a version shares it): callers must not modify it."""
        with self._lock:
            if self._image is None or self._image[0] != self.version:
                self._image = (self.version, self._build_image())
            return self._image[1]

    def _build_image(self) -> dict[str, Any]:
        with self._lock:
            return {
                "version": self.version,
                "cluster_id": self.cluster_id,
                "next_broker_epoch": self.next_broker_epoch,
                "next_producer_id": self.next_producer_id,
                "brokers": [broker_entry(b) for b in sorted(self.brokers.values(), key=lambda b: b.broker_id)],
                "topics": [asdict(t) for t in sorted(self.topics.values(), key=lambda t: t.name)],
                "acls": list(self.acls),
                "scram_credentials": list(self.scram_credentials),
            }

    def _touch(self, kind: str, key: str = "") -> None:
        self._dirty[(kind, key)] = None

    def _touch_topic(self, name: str) -> None:
        self._touch("topic", name)

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Everything changed inside is one change: one version, one persisted delta, one propagation."""
        with self._lock:
            self._batch_depth += 1
            try:
                yield
            finally:
                self._batch_depth -= 1
                if self._batch_depth == 0 and self._dirty:
                    self._changed()

    def _changed(self) -> None:
        if self._batch_depth:
            return  # the batch's end publishes it
        version = self.version + 1
        entries = [[kind, key, ENTRY_KINDS[kind].dump(self, key)] for kind, key in self._dirty]
        if self._persist is not None:
            # persisted before it is published: when the write fails (the error reaches the request), the change
            # stays unpublished and its entries stay dirty, so the next change that persists carries them too
            self._persist({"version": version, "entries": entries})
        self.version = version
        self._dirty = {}
        self._retain({"version": version, "entries": entries})
        self._heartbeats.notify_all()  # a fenced broker is no longer waited for; image fetches wake up

    def _retain(self, delta: dict[str, Any]) -> None:
        """Keep a published delta for the brokers; drop the oldest while more entries are kept than both the
        retention floor and the image's own entry count."""
        self._deltas.append(delta)
        self._delta_entries += len(delta["entries"])
        keep = max(self.delta_retention_entries, len(self.topics) + len(self.brokers))
        while len(self._deltas) > 1 and self._delta_entries > keep:
            dropped = self._deltas.popleft()
            self._delta_entries -= len(dropped["entries"])
            self._deltas_start = int(dropped["version"])

    def deltas_after(self, version: int) -> list[dict[str, Any]] | None:
        """The deltas after ``version`` (empty when it is current), or None when they are no longer all kept (or
        ``version`` is not one this controller published): the broker needs the image."""
        with self._lock:
            if version < self._deltas_start or version > self.version:
                return None
            skip = version - self._deltas_start
            deltas = list(itertools.islice(self._deltas, skip, None))
            if deltas and int(deltas[0]["version"]) != version + 1:
                return None
            return deltas

    def changes_since(self, version: int) -> dict[str, Any]:
        """What a broker at ``version`` applies to be current: ``{"deltas": [...]}`` (possibly empty), or
        ``{"image": ...}`` when it is too far behind or just started (``version`` -1)."""
        with self._lock:
            deltas = self.deltas_after(version) if version >= 0 else None
            if deltas is not None:
                return {"deltas": deltas}
            self.images_served += 1
            return {"image": self.image()}

    def wait_for_version(self, after: int, timeout_s: float) -> bool:
        """Block (real time) until the image's version is past ``after`` (a broker's long-poll); False on
        timeout."""
        with self._heartbeats:
            return self._heartbeats.wait_for(lambda: self.version > after, timeout_s)

    def report_applied(self, broker_id: int, broker_epoch: int, metadata_version: int) -> None:
        """A broker applied image ``metadata_version`` (said by its image fetch); raises StaleBrokerEpochError
        for a broker that must register again."""
        with self._lock:
            b = self.brokers.get(broker_id)
            if b is None or b.broker_epoch != broker_epoch or b.fenced:
                raise StaleBrokerEpochError(f"broker {broker_id} epoch {broker_epoch} is not registered; register again")
            if metadata_version > b.metadata_version:
                b.metadata_version = metadata_version
                self._heartbeats.notify_all()

    # --- ACLs (Kafka: AclControlManager) -----------------------------------------------------------

    def alter_acls(self, created: list[dict[str, str]], deleted: list[dict[str, str]]) -> None:
        """Remove the ``deleted`` bindings, then add the ``created`` ones not there yet (brokers validate them)."""
        with self._lock:
            acls = [a for a in self.acls if a not in deleted]
            for c in created:
                if c not in acls:
                    acls.append(dict(c))
            if acls != self.acls:
                self.acls = acls
                self._touch("acls")
                self._changed()

    # --- SCRAM credentials (Kafka: ScramControlManager) -------------------------------------------

    def alter_scram_credentials(self, upserted: list[dict[str, Any]], deleted: list[dict[str, str]]) -> None:
        """Delete the ``deleted`` (user, mechanism) credentials, then put the ``upserted`` ones in place of any with
        the same user and mechanism (brokers validate them)."""
        def key(c: dict[str, Any]) -> tuple[str, str]:
            return str(c["user"]), str(c["mechanism"])

        with self._lock:
            gone = {key(d) for d in deleted} | {key(u) for u in upserted}
            credentials = [c for c in self.scram_credentials if key(c) not in gone] + [dict(u) for u in upserted]
            credentials.sort(key=key)
            if credentials != self.scram_credentials:
                self.scram_credentials = credentials
                self._touch("scram_credentials")
                self._changed()

    # --- consistent reads (tests and tools on the controller's thread-free side) ----------------------

    def partition_registration(self, topic: str, partition: int) -> PartitionRegistration | None:
        """A copy of ``topic``-``partition``'s registration read under the controller's lock. A change (a
        fencing, an election) mutates registrations first and bumps :attr:`version` at its end, both under the
        lock: a reader that sees the change here then reads the version that carries it."""
        with self._lock:
            t = self.topics.get(topic)
            if t is None or not 0 <= partition < len(t.partitions):
                return None
            return _copy_partition(t.partitions[partition])

    def topic_registration(self, name: str) -> TopicRegistration | None:
        """A copy of topic ``name``'s registration (id, configs, every partition's), read under the lock."""
        with self._lock:
            t = self.topics.get(name)
            return None if t is None else _copy_topic(t)

    def topic_registrations(self) -> dict[str, TopicRegistration]:
        """Copies of every topic's registration, read under the lock: one version's topics (the one
        :meth:`current_version` gives when nothing changed since)."""
        with self._lock:
            return {name: _copy_topic(t) for name, t in self.topics.items()}

    def broker_registrations(self) -> dict[int, BrokerRegistration]:
        """Copies of every broker's registration, read under the controller's lock, with the version that
        carries them: :meth:`current_version`."""
        with self._lock:
            return {i: replace(b, listeners=list(b.listeners)) for i, b in self.brokers.items()}

    def current_version(self) -> int:
        """:attr:`version` read under the lock: never one whose change is still being made."""
        with self._lock:
            return self.version

    # --- brokers ------------------------------------------------------------------------------------

    def alive(self) -> set[int]:
        return {b.broker_id for b in self.brokers.values() if not b.fenced}

    def register_broker(self, broker_id: int, host: str, port: int,
                        listeners: list[dict[str, Any]] | None = None) -> int:
        """Register (or re-register after a restart) and unfence; returns the new broker epoch. ``host``/``port``:
        the inter-broker endpoint; ``listeners``: every listener's (see :class:`BrokerRegistration`)."""
        with self._lock:
            old = self.brokers.get(broker_id)
            if old is not None and not old.fenced:
                self._fence(old)
            epoch = self.next_broker_epoch
            self.next_broker_epoch += 1
            self.brokers[broker_id] = BrokerRegistration(broker_id, host, port, epoch, False, self.time.milliseconds(),
                                                         listeners=list(listeners or []))
            self._touch("broker", str(broker_id))
            self._touch("counters")
            self._elect_offline_partitions()
            self._changed()
            return epoch

    def heartbeat(self, broker_id: int, broker_epoch: int, metadata_version: int = -1) -> None:
        """Raises StaleBrokerEpochError when the broker must register again (fenced or an older incarnation)."""
        try:
            with self._lock:
                b = self.brokers.get(broker_id)
                if b is None or b.broker_epoch != broker_epoch or b.fenced:
                    raise StaleBrokerEpochError(f"broker {broker_id} epoch {broker_epoch} is not registered; register "
                                                f"again")
                b.last_heartbeat_ms = self.time.milliseconds()
                b.metadata_version = max(b.metadata_version, metadata_version)
                self._heartbeats.notify_all()
        finally:
            self._heartbeats_waiting.pop(broker_id, None)

    def wait_for_propagation(self, version: int, exclude: int, timeout_s: float) -> bool:
        """Block (real time) until every unfenced broker but ``exclude`` reported image ``version`` or newer in a
        heartbeat; False on timeout. Topic changes answer after it, so that a client that created a topic finds
        it on every broker (Kafka's clients wait for this themselves; ours and the tests' expect it)."""
        with self._heartbeats:
            return self._heartbeats.wait_for(
                lambda: all(b.metadata_version >= version for b in self.brokers.values()
                            if not b.fenced and b.broker_id != exclude), timeout_s)

    def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> None:
        """A broker shutting down cleanly: fence it now (its partitions get new leaders at once) rather than
        after the session timeout. Raises StaleBrokerEpochError for an older incarnation."""
        with self._lock:
            b = self.brokers.get(broker_id)
            if b is None or b.broker_epoch != broker_epoch:
                raise StaleBrokerEpochError(f"broker {broker_id} epoch {broker_epoch} is not registered")
            if not b.fenced:
                self._fence(b)
                self._changed()

    def heartbeat_arrived(self, broker_id: int, broker_epoch: int) -> None:
        """Note a heartbeat's arrival before it waits for the lock (:meth:`heartbeat` processes it): a heartbeat
        that queued behind a long change (a thousand topics created at once, the AlterPartition that follows)
        counts from when it arrived, and while it waits its broker's session does not expire: the broker sends
        its next heartbeat once this one is answered, so the controller's own delay must not fence it. Lock-free
        (dictionary stores)."""
        now = self.time.milliseconds()
        self._heartbeat_arrivals[broker_id] = (broker_epoch, now)
        self._heartbeats_waiting[broker_id] = broker_epoch

    def _last_heard(self, b: BrokerRegistration, now: int) -> int:
        if self._heartbeats_waiting.get(b.broker_id) == b.broker_epoch:
            return now  # its heartbeat is queued behind the lock this check holds
        arrival = self._heartbeat_arrivals.get(b.broker_id)
        if arrival is not None and arrival[0] == b.broker_epoch:
            return max(b.last_heartbeat_ms, arrival[1])
        return b.last_heartbeat_ms

    def check_sessions(self) -> list[int]:
        """Fence brokers whose session expired; returns their ids."""
        with self._lock:
            now = self.time.milliseconds()
            expired = [b for b in self.brokers.values()
                       if not b.fenced and now - self._last_heard(b, now) > self.session_timeout_ms]
            for b in expired:
                self._fence(b)
            if expired:
                self._changed()
            return [b.broker_id for b in expired]

    def _unclean(self, topic: TopicRegistration) -> bool:
        v = topic.configs.get("unclean.leader.election.enable")
        return self.unclean_leader_election if v is None else v.lower() == "true"

    def _fence(self, broker: BrokerRegistration) -> None:
        broker.fenced = True
        dead = broker.broker_id
        self._touch("broker", str(dead))
        alive = self.alive()
        for t in self.topics.values():
            for reg in t.partitions:
                if dead not in reg.replicas:
                    continue
                self._touch_topic(t.name)
                if reg.leader == dead:
                    if len(reg.isr) > 1:
                        reg.isr = [r for r in reg.isr if r != dead]
                    reg.leader, reg.isr = elect_leader(reg, alive, self._unclean(t))
                    reg.leader_epoch += 1
                    reg.partition_epoch += 1
                elif dead in reg.isr and len(reg.isr) > 1:
                    reg.isr = [r for r in reg.isr if r != dead]
                    reg.partition_epoch += 1

    def _elect_offline_partitions(self) -> None:
        alive = self.alive()
        for t in self.topics.values():
            for reg in t.partitions:
                if reg.leader == NO_LEADER:
                    leader, isr = elect_leader(reg, alive, self._unclean(t))
                    if leader != NO_LEADER:
                        reg.leader, reg.isr = leader, isr
                        reg.leader_epoch += 1
                        reg.partition_epoch += 1
                        self._touch_topic(t.name)

    # --- topics -------------------------------------------------------------------------------------

    def _assign(self, num_partitions: int, replication_factor: int, first_partition: int) -> list[list[int]]:
        alive = sorted(self.alive())
        if replication_factor < 1 or replication_factor > len(alive):
            raise InvalidReplicationFactorError(
                f"Unable to replicate the partition {replication_factor} time(s): The target replication factor of "
                f"{replication_factor} cannot be reached because only {len(alive)} broker(s) are registered.")
        return [[alive[(p + i) % len(alive)] for i in range(replication_factor)]
                for p in range(first_partition, first_partition + num_partitions)]

    def _check_replicas(self, replicas: list[int], what: str) -> None:
        """A manual replica list, as Kafka checks it: not empty, no broker twice, every broker registered."""
        if not replicas:
            raise InvalidReplicaAssignmentError(f"The manual partition assignment of {what} includes an empty "
                                                f"replica list; name at least one broker.")
        dups = sorted({r for r in replicas if replicas.count(r) > 1})
        if dups:
            raise InvalidReplicaAssignmentError(f"The manual partition assignment of {what} includes duplicate "
                                                f"replica(s) {dups}; name each broker once.")
        for r in replicas:
            if r not in self.brokers:
                raise InvalidReplicaAssignmentError(f"The manual partition assignment of {what} includes broker "
                                                    f"{r}, but no such broker is registered.")

    def _check_assignment(self, assignment: list[list[int]], replication_factor: int, name: str,
                          first_partition: int) -> list[list[int]]:
        """Validate manual assignments (one replica list per new partition, all of ``replication_factor``
        replicas, -1: the first one's) and return them."""
        rf = replication_factor if replication_factor > 0 else len(assignment[0]) if assignment else 0
        alive = self.alive()
        for i, replicas in enumerate(assignment):
            what = f"partition {first_partition + i} of topic {name}"
            self._check_replicas(list(replicas), what)
            if len(replicas) != rf:
                raise InvalidReplicaAssignmentError(
                    f"The manual partition assignment includes {what} with {len(replicas)} replica(s), but this is "
                    f"not consistent with previous partitions, which have {rf} replica(s).")
            if not any(r in alive for r in replicas):
                raise InvalidReplicaAssignmentError(
                    f"All brokers specified in the manual partition assignment for {what} are fenced or in "
                    f"controlled shutdown; name a live broker.")
        return [list(r) for r in assignment]

    def _new_partitions(self, assignment: list[list[int]]) -> list[PartitionRegistration]:
        """Registrations of new partitions: the ISR is the live replicas, the leader the first of them."""
        alive = self.alive()
        out = []
        for replicas in assignment:
            isr = [r for r in replicas if r in alive]
            out.append(PartitionRegistration(list(replicas), isr, isr[0] if isr else NO_LEADER))
        return out

    def _colliding_topic(self, name: str) -> str | None:
        """The existing topic whose name differs from ``name`` only by '.' against '_' (Kafka refuses both)."""
        if self._collision_index is None:
            self._collision_index = {t.replace(".", "_"): t for t in self.topics}
        return self._collision_index.get(name.replace(".", "_"))

    def create_topic(self, name: str, num_partitions: int, replication_factor: int, configs: dict[str, str],
                     validate_only: bool = False, assignment: list[list[int]] | None = None) -> TopicRegistration:
        """Create one topic: ``assignment`` (a replica list per partition) or ``num_partitions`` placed round
        robin with ``replication_factor`` replicas."""
        with self._lock:
            if name in self.topics:
                raise TopicExistsError(f"Topic '{name}' already exists.")
            other = self._colliding_topic(name)
            if other is not None:
                raise InvalidTopicError(f"Topic '{name}' collides with existing topic: {other}")
            if assignment:
                assignment = self._check_assignment(assignment, -1, name, 0)
            else:
                if num_partitions < 1:
                    raise InvalidPartitionsError("Number of partitions must be larger than 0.")
                assignment = self._assign(num_partitions, replication_factor, 0)
            topic = TopicRegistration(name, str(uuid.uuid4()), dict(configs), self._new_partitions(assignment))
            if not validate_only:
                self.topics[name] = topic
                if self._collision_index is not None:
                    self._collision_index[name.replace(".", "_")] = name
                self._touch_topic(name)
                self._changed()
            return topic

    def create_topics(self, specs: list[TopicSpec], validate_only: bool = False
                      ) -> dict[str, TopicRegistration | KafkaError]:
        """A whole CreateTopics request as one change: per topic its registration or why it was refused."""
        out: dict[str, TopicRegistration | KafkaError] = {}
        with self.batch():
            for spec in specs:
                try:
                    out[spec.name] = self.create_topic(spec.name, spec.num_partitions, spec.replication_factor,
                                                       spec.configs, validate_only, spec.assignment)
                except KafkaError as e:
                    out[spec.name] = e
        return out

    def delete_topic(self, name: str) -> None:
        with self._lock:
            if self.topics.pop(name, None) is None:
                raise UnknownTopicOrPartitionError(f"Topic {name} not found")
            self._collision_index = None
            self._touch_topic(name)
            self._changed()

    def delete_topics(self, names: list[str]) -> dict[str, KafkaError | None]:
        """A whole DeleteTopics request as one change: per topic None or why it was not deleted."""
        out: dict[str, KafkaError | None] = {}
        with self.batch():
            for name in names:
                try:
                    self.delete_topic(name)
                    out[name] = None
                except KafkaError as e:
                    out[name] = e
        return out

    def create_partitions(self, name: str, count: int, validate_only: bool = False,
                          assignment: list[list[int]] | None = None) -> TopicRegistration:
        with self._lock:
            t = self.topics.get(name)
            if t is None:
                raise UnknownTopicOrPartitionError(f"Topic {name} not found")
            have = len(t.partitions)
            if count < have:
                raise InvalidPartitionsError(f"Topic currently has {have} partitions, which is higher than the "
                                             f"requested {count}.")
            if count == have:
                raise InvalidPartitionsError(f"Topic already has {have} partitions.")
            rf = len(t.partitions[0].target_replicas)
            if assignment:
                if len(assignment) != count - have:
                    raise InvalidReplicaAssignmentError(
                        f"Attempted to add {count - have} additional partition(s), but only {len(assignment)} "
                        f"assignment(s) were specified.")
                assignment = self._check_assignment(assignment, rf, name, have)
            else:
                assignment = self._assign(count - have, rf, have)
            if not validate_only:
                t.partitions.extend(self._new_partitions(assignment))
                self._touch_topic(name)
                self._changed()
            return t

    def create_partitions_batch(self, requests: list[tuple[str, int, list[list[int]] | None]],
                                validate_only: bool = False) -> dict[str, KafkaError | None]:
        """A whole CreatePartitions request ((topic, new count, assignment)) as one change."""
        out: dict[str, KafkaError | None] = {}
        with self.batch():
            for name, count, assignment in requests:
                try:
                    self.create_partitions(name, count, validate_only, assignment)
                    out[name] = None
                except KafkaError as e:
                    out[name] = e
        return out

    def alter_configs(self, name: str, configs: dict[str, str]) -> None:
        with self._lock:
            t = self.topics.get(name)
            if t is None:
                raise UnknownTopicOrPartitionError(f"Topic {name} not found")
            t.configs = dict(configs)
            self._touch_topic(name)
            self._changed()

    # --- reassignments (KIP-455) and elections (KIP-460) ---------------------------------------------

    def _partition(self, topic: str, partition: int) -> tuple[TopicRegistration, PartitionRegistration]:
        t = self.topics.get(topic)
        if t is None or not 0 <= partition < len(t.partitions):
            raise UnknownTopicOrPartitionError(f"{topic}-{partition} does not exist")
        return t, t.partitions[partition]

    def _move_leader(self, t: TopicRegistration, reg: PartitionRegistration, candidates: list[int]) -> None:
        """Elect the first alive ISR member of ``candidates`` when the leader is not one of them."""
        if reg.leader in candidates:
            return
        alive = self.alive()
        new = next((r for r in candidates if r in reg.isr and r in alive), NO_LEADER)
        reg.leader = new
        reg.leader_epoch += 1

    def _after_isr_change(self, t: TopicRegistration, partition: int, reg: PartitionRegistration) -> None:
        """Complete a reassignment whose target replicas all joined the ISR: leadership moves off a removed
        leader, then the removed replicas are dropped."""
        if not reg.adding_replicas and not reg.removing_replicas:
            return
        target = reg.target_replicas
        if not all(r in reg.isr for r in target):
            return
        self._move_leader(t, reg, target)
        reg.replicas = target
        reg.isr = [r for r in reg.isr if r in target]
        reg.adding_replicas, reg.removing_replicas = [], []
        reg.partition_epoch += 1
        self._touch_topic(t.name)

    def alter_partition_reassignments(self, moves: list[tuple[str, int, list[int] | None]]
                                      ) -> dict[tuple[str, int], KafkaError | None]:
        """AlterPartitionReassignments as one change: per (topic, partition) a target replica list, or None to
        cancel the ongoing reassignment. New replicas join the replica set at once and the ISR once caught up
        (the leader's AlterPartition); the reassignment then completes (:meth:`_after_isr_change`)."""
        out: dict[tuple[str, int], KafkaError | None] = {}
        with self.batch():
            for topic, partition, target in moves:
                try:
                    self._reassign(topic, partition, target)
                    out[(topic, partition)] = None
                except KafkaError as e:
                    out[(topic, partition)] = e
        return out

    def _reassign(self, topic: str, partition: int, target: list[int] | None) -> None:
        t, reg = self._partition(topic, partition)
        ongoing = bool(reg.adding_replicas or reg.removing_replicas)
        if target is None:
            if not ongoing:
                raise NoReassignmentInProgressError(f"no reassignment of {topic}-{partition} is in progress")
            original = reg.original_replicas
            isr = [r for r in reg.isr if r in original]
            if not isr:
                # reverting would leave an ISR outside the replica set and no leader: let the move finish
                raise InvalidReplicaAssignmentError(
                    f"cannot cancel the reassignment of {topic}-{partition}: none of its original replicas "
                    f"{original} is in the ISR {reg.isr} any more; let the reassignment complete")
            reg.isr = isr
            self._move_leader(t, reg, original)
            reg.replicas, reg.adding_replicas, reg.removing_replicas = original, [], []
            reg.partition_epoch += 1
            self._touch_topic(topic)
            return
        self._check_replicas(list(target), f"partition {partition} of topic {topic}")
        original = reg.original_replicas
        if target == original and not ongoing:
            return
        reg.replicas = list(target) + [r for r in original if r not in target]
        reg.adding_replicas = [r for r in target if r not in original]
        reg.removing_replicas = [r for r in original if r not in target]
        reg.isr = [r for r in reg.isr if r in reg.replicas]
        reg.partition_epoch += 1
        self._touch_topic(topic)
        self._after_isr_change(t, partition, reg)

    def list_partition_reassignments(self, partitions: list[tuple[str, int]] | None = None
                                     ) -> dict[tuple[str, int], PartitionRegistration]:
        """The ongoing reassignments (of ``partitions``; None: all); unknown partitions are left out."""
        with self._lock:
            out: dict[tuple[str, int], PartitionRegistration] = {}
            wanted = partitions if partitions is not None else [
                (t.name, p) for t in self.topics.values() for p in range(len(t.partitions))]
            for topic, p in wanted:
                t = self.topics.get(topic)
                if t is None or not 0 <= p < len(t.partitions):
                    continue
                reg = t.partitions[p]
                if reg.adding_replicas or reg.removing_replicas:
                    out[(topic, p)] = PartitionRegistration(list(reg.replicas), list(reg.isr), reg.leader,
                                                            reg.leader_epoch, reg.partition_epoch,
                                                            list(reg.adding_replicas), list(reg.removing_replicas))
            return out

    def elect_leaders(self, unclean: bool, partitions: list[tuple[str, int]] | None
                      ) -> dict[tuple[str, int], KafkaError | None]:
        """ElectLeaders as one change. Preferred: the first replica becomes leader when it is alive and in the
        ISR. Unclean: a partition without a leader gets one, from the ISR, else any alive replica. Per
        partition None (elected) or the error; with ``partitions`` None every partition is tried and only
        those that needed an election are reported."""
        out: dict[tuple[str, int], KafkaError | None] = {}
        with self.batch():
            wanted = partitions if partitions is not None else [
                (t.name, p) for t in self.topics.values() for p in range(len(t.partitions))]
            alive = self.alive()
            for topic, p in wanted:
                try:
                    t, reg = self._partition(topic, p)
                    if unclean:
                        self._elect_unclean(t, reg, alive)
                    else:
                        self._elect_preferred(t, reg, alive)
                    out[(topic, p)] = None
                except ElectionNotNeededError as e:
                    if partitions is not None:
                        out[(topic, p)] = e
                except KafkaError as e:
                    out[(topic, p)] = e
        return out

    def maybe_balance_partition_leaders(self) -> list[tuple[str, int]]:
        """Every ``leader.imbalance.check.interval.seconds`` (when ``auto.leader.rebalance.enable``): run
        :meth:`balance_partition_leaders`; the (topic, partition)s whose preferred replica became leader."""
        if not self.leader_balance.enable:
            return []
        with self._lock:
            now = self.time.milliseconds()
            if now < self._next_leader_balance_ms:
                return []
            self._next_leader_balance_ms = now + self.leader_balance.check_interval_ms
            return self.balance_partition_leaders()

    def balance_partition_leaders(self) -> list[tuple[str, int]]:
        """Move leadership back to the preferred replicas (the first of each replica list) after failovers piled
        it up on the survivors, as one change. Per broker, its imbalance ratio is the share of the partitions it
        is the preferred replica of that another broker leads; where that ratio is above
        ``leader.imbalance.per.broker.percentage``, each of those partitions whose preferred replica is alive
        and in the ISR gets it as leader (the leader epoch bumped; the old leader follows it). Partitions being
        reassigned are left alone. Returns the (topic, partition)s elected."""
        elected: list[tuple[str, int]] = []
        with self.batch():
            alive = self.alive()
            preferred_of: dict[int, list[tuple[TopicRegistration, int, PartitionRegistration]]] = {}
            for t in self.topics.values():
                for p, reg in enumerate(t.partitions):
                    if reg.replicas and not reg.adding_replicas and not reg.removing_replicas:
                        preferred_of.setdefault(reg.replicas[0], []).append((t, p, reg))
            for broker, partitions in sorted(preferred_of.items()):
                if broker not in alive:
                    continue
                led_by_others = [(t, p, reg) for t, p, reg in partitions if reg.leader != broker]
                if len(led_by_others) * 100 <= self.leader_balance.per_broker_percentage * len(partitions):
                    continue
                for t, p, reg in led_by_others:
                    if broker in reg.isr:
                        self._elect_preferred(t, reg, alive)
                        elected.append((t.name, p))
        return elected

    def _elect_preferred(self, t: TopicRegistration, reg: PartitionRegistration, alive: set[int]) -> None:
        preferred = reg.target_replicas[0]
        if reg.leader == preferred:
            raise ElectionNotNeededError(f"leader of {t.name} is already the preferred replica {preferred}")
        if preferred not in alive or preferred not in reg.isr:
            raise PreferredLeaderNotAvailableError(
                f"the preferred replica {preferred} of {t.name} is not alive or not in the ISR {reg.isr}; retry "
                f"once it has caught up")
        reg.leader = preferred
        reg.leader_epoch += 1
        reg.partition_epoch += 1
        self._touch_topic(t.name)

    def _elect_unclean(self, t: TopicRegistration, reg: PartitionRegistration, alive: set[int]) -> None:
        if reg.leader != NO_LEADER and reg.leader in alive:
            raise ElectionNotNeededError(f"a partition of {t.name} already has the leader {reg.leader}")
        leader, isr = elect_leader(reg, alive, unclean=True)
        if leader == NO_LEADER:
            raise EligibleLeadersNotAvailableError(f"no replica of {t.name} ({reg.replicas}) is alive; restart one")
        reg.leader, reg.isr = leader, isr
        reg.leader_epoch += 1
        reg.partition_epoch += 1
        self._touch_topic(t.name)

    # --- partitions -------------------------------------------------------------------------------

    def alter_partition(self, broker_id: int, broker_epoch: int, topic: str, partition: int, leader_epoch: int,
                        partition_epoch: int, new_isr: list[int]) -> PartitionRegistration:
        """AlterPartition from a partition leader: the new ISR, or a KafkaError saying why not."""
        with self._lock:
            b = self.brokers.get(broker_id)
            if b is None or b.broker_epoch != broker_epoch or b.fenced:
                raise StaleBrokerEpochError(f"broker {broker_id} epoch {broker_epoch} is not the registered one")
            t = self.topics.get(topic)
            if t is None or not 0 <= partition < len(t.partitions):
                raise UnknownTopicOrPartitionError(f"{topic}-{partition} does not exist")
            reg = t.partitions[partition]
            if reg.leader != broker_id:
                raise FencedLeaderEpochError(f"broker {broker_id} is not the leader of {topic}-{partition}")
            if leader_epoch != reg.leader_epoch:
                raise FencedLeaderEpochError(f"leader epoch {leader_epoch} of {topic}-{partition} is not the current "
                                             f"{reg.leader_epoch}")
            if partition_epoch != reg.partition_epoch:
                raise InvalidUpdateVersionError(f"partition epoch {partition_epoch} of {topic}-{partition} is not "
                                                f"the current {reg.partition_epoch}")
            alive = self.alive()
            if broker_id not in new_isr or any(r not in reg.replicas or r not in alive for r in new_isr):
                raise InvalidUpdateVersionError(f"ISR {new_isr} of {topic}-{partition} names a replica that is "
                                                f"fenced or not assigned")
            if new_isr != reg.isr:
                reg.isr = list(new_isr)
                reg.partition_epoch += 1
                self._touch_topic(topic)
                self._after_isr_change(t, partition, reg)
                self._changed()
            return PartitionRegistration(list(reg.replicas), list(reg.isr), reg.leader, reg.leader_epoch,
                                         reg.partition_epoch)

    def allocate_producer_ids(self) -> tuple[int, int]:
        """A block of producer ids no broker got before: (first id, count). Kafka: AllocateProducerIds."""
        with self._lock:
            first = self.next_producer_id
            self.next_producer_id += PRODUCER_ID_BLOCK
            self._touch("counters")
            self._changed()
            return first, PRODUCER_ID_BLOCK


def error_of(e: KafkaError) -> dict[str, Any]:
    return {"error": int(getattr(e, "code", -1)), "message": str(e)}

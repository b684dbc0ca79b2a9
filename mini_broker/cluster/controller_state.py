"""The controller's metadata state machine (Kafka: ``QuorumController`` with ``ClusterControlManager`` and
``ReplicationControlManager``), sans-IO: time comes from an injected clock, persistence from a callback.

What it owns: the registered brokers (host, port, broker epoch, fenced or not, last heartbeat), the topics
(id, configs, partitions) and, per partition, the replicas, the ISR, the leader, the leader epoch and the
partition epoch. Every change bumps :attr:`ControllerState.version` and is persisted (``persist`` gets the
whole image: mini_broker's "metadata log" is a snapshot rewritten atomically on each change, see
docs/ARCHITECTURE.md).

Rules (Kafka's KRaft controller):

* a broker that registers is unfenced at once; registering again (a restart) first fences the old
  incarnation, so a restarted leader loses its leadership before it can serve again;
* a broker whose heartbeats stop for ``broker.session.timeout.ms`` is fenced: it leaves every ISR it is in
  (unless it is the last member, which stays there so that it is the one elected when it comes back), and
  partitions it led get a new leader elected from the ISR, with the leader epoch bumped;
* a leader is elected only from the ISR (first alive ISR member in replica order); with
  ``unclean.leader.election.enable`` (topic or cluster) an alive out-of-sync replica may be chosen, the ISR
  then being just that replica;
* ISR changes come from the partition leader (AlterPartition): they are accepted only with the current
  leader epoch and partition epoch, and only with unfenced replicas that are in the replica set.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from pykafka_client.errors import (
    FencedLeaderEpochError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    InvalidUpdateVersionError,
    StaleBrokerEpochError,
    TopicExistsError,
    UnknownTopicOrPartitionError,
)
from pykafka_client.errors_base import KafkaError
from pykafka_client.utils.time import Time

NO_LEADER = -1
PRODUCER_ID_BLOCK = 1000


@dataclass
class PartitionRegistration:
    replicas: list[int]
    isr: list[int]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0


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


class ControllerState:
    """See the module docstring. Thread-safe (one lock); ``persist`` is called under it."""

    def __init__(self, cluster_id: str, time: Time, session_timeout_ms: int, unclean_leader_election: bool = False,
                 persist: Callable[[dict[str, Any]], None] | None = None, image: dict[str, Any] | None = None) -> None:
        self.cluster_id = cluster_id
        self.time = time
        self.session_timeout_ms = session_timeout_ms
        self.unclean_leader_election = unclean_leader_election
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
        if image is not None:
            self._load(image)

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
            parts = [PartitionRegistration(list(p["replicas"]), list(p["isr"]), int(p["leader"]), int(p["leader_epoch"]),
                                           int(p["partition_epoch"])) for p in t["partitions"]]
            self.topics[t["name"]] = TopicRegistration(t["name"], t["topic_id"], dict(t.get("configs", {})), parts)

    def image(self) -> dict[str, Any]:
        """The whole metadata image (what brokers apply and what is persisted)."""
        with self._lock:
            return {
                "version": self.version,
                "cluster_id": self.cluster_id,
                "next_broker_epoch": self.next_broker_epoch,
                "next_producer_id": self.next_producer_id,
                "brokers": [asdict(b) for b in sorted(self.brokers.values(), key=lambda b: b.broker_id)],
                "topics": [asdict(t) for t in sorted(self.topics.values(), key=lambda t: t.name)],
                "acls": list(self.acls),
                "scram_credentials": list(self.scram_credentials),
            }

    def _changed(self) -> None:
        self.version += 1
        if self._persist is not None:
            self._persist(self.image())
        self._heartbeats.notify_all()  # a fenced broker is no longer waited for

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
                self._changed()

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
            self._elect_offline_partitions()
            self._changed()
            return epoch

    def heartbeat(self, broker_id: int, broker_epoch: int, metadata_version: int = -1) -> None:
        """Raises StaleBrokerEpochError when the broker must register again (fenced or an older incarnation)."""
        with self._lock:
            b = self.brokers.get(broker_id)
            if b is None or b.broker_epoch != broker_epoch or b.fenced:
                raise StaleBrokerEpochError(f"broker {broker_id} epoch {broker_epoch} is not registered; register again")
            b.last_heartbeat_ms = self.time.milliseconds()
            b.metadata_version = metadata_version
            self._heartbeats.notify_all()

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

    def check_sessions(self) -> list[int]:
        """Fence brokers whose session expired; returns their ids."""
        with self._lock:
            now = self.time.milliseconds()
            expired = [b for b in self.brokers.values()
                       if not b.fenced and now - b.last_heartbeat_ms > self.session_timeout_ms]
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
        alive = self.alive()
        for t in self.topics.values():
            for reg in t.partitions:
                if dead not in reg.replicas:
                    continue
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

    # --- topics -------------------------------------------------------------------------------------

    def _assign(self, num_partitions: int, replication_factor: int, first_partition: int) -> list[list[int]]:
        alive = sorted(self.alive())
        if replication_factor < 1 or replication_factor > len(alive):
            raise InvalidReplicationFactorError(
                f"Unable to replicate the partition {replication_factor} time(s): The target replication factor of "
                f"{replication_factor} cannot be reached because only {len(alive)} broker(s) are registered.")
        return [[alive[(p + i) % len(alive)] for i in range(replication_factor)]
                for p in range(first_partition, first_partition + num_partitions)]

    def create_topic(self, name: str, num_partitions: int, replication_factor: int, configs: dict[str, str],
                     validate_only: bool = False) -> TopicRegistration:
        with self._lock:
            if name in self.topics:
                raise TopicExistsError(f"Topic '{name}' already exists.")
            collide = name.replace(".", "_")
            for other in self.topics:
                if other.replace(".", "_") == collide:
                    raise InvalidTopicError(f"Topic '{name}' collides with existing topic: {other}")
            if num_partitions < 1:
                raise InvalidPartitionsError("Number of partitions must be larger than 0.")
            assignment = self._assign(num_partitions, replication_factor, 0)
            topic = TopicRegistration(name, str(uuid.uuid4()), dict(configs),
                                      [PartitionRegistration(list(r), list(r), r[0]) for r in assignment])
            if not validate_only:
                self.topics[name] = topic
                self._changed()
            return topic

    def delete_topic(self, name: str) -> None:
        with self._lock:
            if self.topics.pop(name, None) is None:
                raise UnknownTopicOrPartitionError(f"Topic {name} not found")
            self._changed()

    def create_partitions(self, name: str, count: int, validate_only: bool = False) -> TopicRegistration:
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
            assignment = self._assign(count - have, len(t.partitions[0].replicas), have)
            if not validate_only:
                t.partitions.extend(PartitionRegistration(list(r), list(r), r[0]) for r in assignment)
                self._changed()
            return t

    def alter_configs(self, name: str, configs: dict[str, str]) -> None:
        with self._lock:
            t = self.topics.get(name)
            if t is None:
                raise UnknownTopicOrPartitionError(f"Topic {name} not found")
            t.configs = dict(configs)
            self._changed()

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
                self._changed()
            return PartitionRegistration(list(reg.replicas), list(reg.isr), reg.leader, reg.leader_epoch,
                                         reg.partition_epoch)

    def allocate_producer_ids(self) -> tuple[int, int]:
        """A block of producer ids no broker got before: (first id, count). Kafka: AllocateProducerIds."""
        with self._lock:
            first = self.next_producer_id
            self.next_producer_id += PRODUCER_ID_BLOCK
            self._changed()
            return first, PRODUCER_ID_BLOCK


def error_of(e: KafkaError) -> dict[str, Any]:
    return {"error": int(getattr(e, "code", -1)), "message": str(e)}

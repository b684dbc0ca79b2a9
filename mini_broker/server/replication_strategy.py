"""How this broker's partitions are replicated: the seam between the ReplicaManager (and the APIs) and the
replication mode, chosen once when the broker starts.

* :class:`SingleBrokerReplication` (here): the broker leads every partition at leader epoch 0, its own registry
  holds the topics, the high watermark follows the log end at once.
* ``mini_broker.cluster.replication.ClusterReplication``: a cluster broker's leaders, followers and ISR, the
  controller's image, topic changes through the controller.

The ReplicaManager and the APIs ask the strategy; they never test which one they have.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from mini_broker.config import KafkaConfig
from mini_broker.log.fetch_data_info import LogAppendInfo
from mini_broker.log.log_config import LogConfig
from mini_broker.log.log_manager import LogManager
from mini_broker.log.unified_log import AppendOrigin, Log
from mini_broker.purgatory import DelayedOperationPurgatory, TopicPartitionOperationKey
from mini_broker.server.coordinator_lookup import CoordinatorLookup
from mini_broker.server.metadata_cache import MetadataCache, TopicMetadata
from pykafka_client.errors import (
    ConfigurationError,
    ElectionNotNeededError,
    FencedLeaderEpochError,
    InvalidConfigurationError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    NoReassignmentInProgressError,
    UnknownLeaderEpochError,
    UnknownTopicOrPartitionError,
)
from pykafka_client.errors_base import BrokerResponseError, KafkaError
from pykafka_client.structs import TopicPartition

log = logging.getLogger(__name__)

#: The single broker's only leader epoch.
LEADER_EPOCH = 0


@dataclass
class FetchPartitionInfo:
    """One partition of a Fetch request."""

    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1


@dataclass(frozen=True)
class PartitionReplicas:
    """A partition as Metadata describes it."""

    error_code: int
    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    offline: list[int]


@dataclass(frozen=True)
class TopicCreation:
    """One validated topic of a CreateTopics request (``assignment``: a replica list per partition, or None)."""

    name: str
    num_partitions: int
    replication_factor: int
    configs: dict[str, str]
    assignment: list[list[int]] | None = None


class ReplicationStrategy(Protocol):
    """See the module docstring. Leadership checks raise the partition's BrokerResponseError."""

    # --- lifecycle and topics
    def load_logs(self) -> None:
        """At startup, after the LogManager recovered the logs: open the partitions' logs this broker keeps and
        set their high watermarks."""
        ...

    def create_topic(self, name: str, num_partitions: int, configs: dict[str, str],
                     replication_factor: int) -> TopicMetadata: ...

    def create_topics(self, specs: Sequence[TopicCreation]) -> dict[str, TopicMetadata | KafkaError]:
        """A whole CreateTopics request (a cluster makes it one controller change): per topic its metadata or
        why it was not created."""
        ...

    def delete_topic(self, name: str) -> None: ...

    def add_partitions_batch(self, growth: Sequence[tuple[str, int, list[list[int]] | None]]
                             ) -> dict[str, KafkaError | None]:
        """A whole CreatePartitions request ((topic, new count, manual assignment or None)); a cluster makes it
        one controller change. Per topic None or why it did not grow."""
        ...

    def delete_topics(self, names: Sequence[str]) -> dict[str, KafkaError | None]:
        """A whole DeleteTopics request (a cluster makes it one controller change): per topic None or why
        it was not deleted."""
        ...

    def elect_leaders(self, unclean: bool, partitions: Sequence[tuple[str, int]] | None
                      ) -> dict[tuple[str, int], KafkaError | None]:
        """ElectLeaders: per partition None (elected) or why not; ``partitions`` None = all of them (then only
        the elected ones are listed)."""
        ...

    def alter_partition_reassignments(self, moves: Sequence[tuple[str, int, list[int] | None]]
                                      ) -> dict[tuple[str, int], KafkaError | None]:
        """AlterPartitionReassignments: per (topic, partition, target replicas or None to cancel) the error."""
        ...

    def list_partition_reassignments(self, partitions: Sequence[tuple[str, int]] | None
                                     ) -> list[tuple[str, int, list[int], list[int], list[int]]]:
        """The ongoing reassignments: (topic, partition, replicas, adding, removing)."""
        ...

    def add_partitions(self, name: str, count: int, assignment: list[list[int]] | None = None
                       ) -> TopicMetadata: ...

    def update_topic_configs(self, name: str, configs: dict[str, str]) -> TopicMetadata:
        """Called with the ReplicaManager's topic lock held and the configs validated."""
        ...

    # --- leadership
    def current_leader(self, topic: str, partition: int) -> tuple[int, int]:
        """(leader id, leader epoch) as this broker knows it."""
        ...

    def leader_hint(self, tp: TopicPartition) -> tuple[int, int] | None:
        """KIP-951: the (leader, epoch) a produce error names (None: no other leader to name)."""
        ...

    def check_leader(self, tp: TopicPartition, current_leader_epoch: int = -1) -> int:
        """This broker's leader epoch of ``tp`` when it leads it at ``current_leader_epoch`` (-1: any)."""
        ...

    def leader_epoch_start_offset(self, tp: TopicPartition) -> int:
        """The log end offset at which this broker's current leader epoch of ``tp`` began (it leads ``tp``)."""
        ...

    def missing_log_error(self, tp: TopicPartition) -> KafkaError:
        """The error for a known partition whose log this broker does not have."""
        ...

    # --- the leader's reads and writes
    def append_as_leader(self, tp: TopicPartition, lg: Log, records: bytes | bytearray | memoryview,
                         origin: AppendOrigin, required_acks: int) -> LogAppendInfo: ...

    def check_enough_replicas(self, tp: TopicPartition, lg: Log, required_offset: int) -> tuple[bool, int]:
        """DelayedProduce's rule: (done, error code)."""
        ...

    def leader_log_for_read(self, tp: TopicPartition, lg: Log, current_leader_epoch: int, replica_id: int,
                            fetch_offset: int) -> Log: ...

    @property
    def accepts_follower_fetches(self) -> bool:
        """Whether a Fetch with a replica id is a follower's (read to the log end), else a consumer's."""
        ...

    def update_follower_fetch_state(self, replica_id: int,
                                    infos: Sequence[tuple[TopicPartition, FetchPartitionInfo]]) -> None: ...

    def end_offset_for_epoch(self, tp: TopicPartition, lg: Log, leader_epoch: int,
                             current_leader_epoch: int) -> tuple[int, int]: ...

    def wait_for_delete_records(self, tp: TopicPartition, low_watermark: int, timeout_ms: int,
                                respond: Callable[[int, int], None]) -> None:
        """After the leader moved its log start offset to ``low_watermark``: ``respond(low watermark, error)``
        once the replicas have (at once on a single broker)."""
        ...

    # --- what the APIs describe
    def live_brokers(self, listener_name: str) -> list[tuple[int, str, int]]:
        """(id, host, port) of every live broker of the cluster on ``listener_name``, brokers without that
        listener left out (empty: only this one)."""
        ...

    def broker_registered(self, broker_id: int) -> bool:
        """Whether ``broker_id`` is a registered broker of the cluster (fenced or not; False on a single broker)."""
        ...

    def partition_replicas(self, md: TopicMetadata, partition: int) -> PartitionReplicas: ...

    @property
    def manual_assignment_error(self) -> KafkaError | None:
        """Why CreateTopics refuses manual replica assignments (None: checked per assignment)."""
        ...

    @property
    def validates_assignments(self) -> bool:
        """Whether manual assignments are checked further on (a cluster's controller knows the brokers); else
        they may name only this broker."""
        ...

    def check_replication_factor(self, replication_factor: int) -> None:
        """CreateTopics: raise InvalidReplicationFactorError when the factor (> 0) cannot be reached here (a
        cluster leaves it to the controller, which knows the registered brokers)."""
        ...

    def find_coordinator(self, key_type: int, key: str, internal_topic: Callable[[int], tuple[int, int, dict[str, str]]],
                         listener_name: str | None = None) -> CoordinatorLookup | None:
        """The coordinator of ``key`` (None: this broker coordinates every key), its endpoint on ``listener_name``.
        ``internal_topic(key_type)``: the (partition count, replication factor, configs) an internal topic is created with when it
        does not exist yet."""
        ...

    def remote_transaction_coordinator(self, transactional_id: str) -> int | None:
        """The broker whose transaction coordinator owns ``transactional_id`` when it is another one (-1: none
        now), None when it is this broker's."""
        ...

    def verify_remotely(self, coordinator: int, transactional_id: str, producer_id: int, producer_epoch: int,
                        partitions: list[TopicPartition],
                        callback: Callable[[dict[TopicPartition, int]], None]) -> None:
        """KIP-890: ask ``coordinator`` whether ``partitions`` are in the producer's transaction."""
        ...


class LocalReplicas(Protocol):
    """What the single broker's replication uses of the ReplicaManager: the registry, the logs, the topic lock
    (held while both change) and the purgatories to wake."""

    @property
    def config(self) -> KafkaConfig: ...

    @property
    def metadata_cache(self) -> MetadataCache: ...

    @property
    def log_manager(self) -> LogManager: ...

    @property
    def topic_lock(self) -> AbstractContextManager[Any]: ...

    @property
    def fetch_purgatory(self) -> DelayedOperationPurgatory[Any]: ...

    @property
    def produce_purgatory(self) -> DelayedOperationPurgatory[Any]: ...

    def log_config_for(self, md: TopicMetadata) -> LogConfig: ...

    def log_config_from(self, configs: dict[str, str]) -> LogConfig: ...


def check_epoch(current_leader_epoch: int) -> None:
    """The single broker's leader epoch check (epoch 0 only)."""
    if current_leader_epoch >= 0 and current_leader_epoch != LEADER_EPOCH:
        if current_leader_epoch > LEADER_EPOCH:
            raise UnknownLeaderEpochError(f"leader epoch {current_leader_epoch} is newer than ours")
        raise FencedLeaderEpochError(f"leader epoch {current_leader_epoch} is fenced")


class SingleBrokerReplication:
    """:class:`ReplicationStrategy` of a broker that is its own cluster (see the module docstring)."""

    def __init__(self, replica_manager: LocalReplicas) -> None:
        self.rm = replica_manager

    # --- lifecycle and topics
    def load_logs(self) -> None:
        rm = self.rm
        topics = rm.metadata_cache.all_topics()
        for t in topics:
            for p in range(t.num_partitions):
                lg = rm.log_manager.get_or_create_log(t.name, p, rm.log_config_for(t))
                lg.update_high_watermark(lg.log_end_offset)
        known = {(t.name, p) for t in topics for p in range(t.num_partitions)}
        strays = [lg for lg in rm.log_manager.all_logs() if (lg.topic, lg.partition) not in known]
        if strays and not rm.metadata_cache.registry_existed:
            # no registry at all (first start on an old data dir): adopt the logs rather than lose them
            counts: dict[str, int] = {}
            for lg in strays:
                counts[lg.topic] = max(counts.get(lg.topic, 0), lg.partition + 1)
            for topic, count in sorted(counts.items()):
                log.warning("event=log_adopted topic=%s partitions=%d msg=\"no topic registry; registering the "
                            "topic found on disk\"", topic, count)
                md = rm.metadata_cache.create_topic(topic, count, {})
                for p in range(count):
                    rm.log_manager.get_or_create_log(topic, p, rm.log_config_for(md))
            return
        for lg in strays:
            # a topic deleted while the broker crashed before removing its logs (Kafka: stray partitions)
            log.warning("event=stray_log dir=%s msg=\"log of a topic not in the registry; deleting\"", lg.dir_path)
            rm.log_manager.delete_log(lg.topic, lg.partition)

    def create_topic(self, name: str, num_partitions: int, configs: dict[str, str],
                     replication_factor: int) -> TopicMetadata:
        rm = self.rm
        with rm.topic_lock:
            try:
                log_config = rm.log_config_from(configs)
            except ConfigurationError as e:
                raise InvalidConfigurationError(str(e)) from e
            md = rm.metadata_cache.create_topic(name, num_partitions, configs)
            for p in range(num_partitions):
                rm.log_manager.get_or_create_log(name, p, log_config)
            return md

    def create_topics(self, specs: Sequence[TopicCreation]) -> dict[str, TopicMetadata | KafkaError]:
        out: dict[str, TopicMetadata | KafkaError] = {}
        for spec in specs:
            try:
                out[spec.name] = self.create_topic(spec.name, spec.num_partitions, spec.configs,
                                                   spec.replication_factor)
            except BrokerResponseError as e:
                out[spec.name] = e
        return out

    def delete_topics(self, names: Sequence[str]) -> dict[str, KafkaError | None]:
        out: dict[str, KafkaError | None] = {}
        for name in names:
            try:
                self.delete_topic(name)
                out[name] = None
            except BrokerResponseError as e:
                out[name] = e
        return out

    def add_partitions_batch(self, growth: Sequence[tuple[str, int, list[list[int]] | None]]
                             ) -> dict[str, KafkaError | None]:
        out: dict[str, KafkaError | None] = {}
        for name, count, assignment in growth:
            try:
                self.add_partitions(name, count, assignment)
                out[name] = None
            except BrokerResponseError as e:
                out[name] = e
        return out

    def _known(self, topic: str, partition: int) -> bool:
        md = self.rm.metadata_cache.get_topic(topic)
        return md is not None and 0 <= partition < md.num_partitions

    def elect_leaders(self, unclean: bool, partitions: Sequence[tuple[str, int]] | None
                      ) -> dict[tuple[str, int], KafkaError | None]:
        # the only replica always leads: no election is ever needed
        out: dict[tuple[str, int], KafkaError | None] = {}
        for topic, p in partitions or []:
            out[(topic, p)] = (ElectionNotNeededError(f"{topic}-{p} is led by its only replica")
                               if self._known(topic, p) else UnknownTopicOrPartitionError(f"{topic}-{p} does not exist"))
        return out

    def alter_partition_reassignments(self, moves: Sequence[tuple[str, int, list[int] | None]]
                                      ) -> dict[tuple[str, int], KafkaError | None]:
        node = self.rm.config.node_id
        out: dict[tuple[str, int], KafkaError | None] = {}
        for topic, p, target in moves:
            if not self._known(topic, p):
                out[(topic, p)] = UnknownTopicOrPartitionError(f"{topic}-{p} does not exist")
            elif target is None:
                out[(topic, p)] = NoReassignmentInProgressError(f"no reassignment of {topic}-{p} is in progress")
            elif target != [node]:
                out[(topic, p)] = InvalidReplicaAssignmentError(
                    f"a single broker can place {topic}-{p} only on itself ({node}), not on {target}")
            else:
                out[(topic, p)] = None
        return out

    def list_partition_reassignments(self, partitions: Sequence[tuple[str, int]] | None
                                     ) -> list[tuple[str, int, list[int], list[int], list[int]]]:
        return []

    def delete_topic(self, name: str) -> None:
        rm = self.rm
        with rm.topic_lock:
            md = rm.metadata_cache.delete_topic(name)
            for p in range(md.num_partitions):
                rm.log_manager.delete_log(name, p)
        for p in range(md.num_partitions):
            key = TopicPartitionOperationKey(name, p)
            rm.fetch_purgatory.check_and_complete(key)
            rm.produce_purgatory.check_and_complete(key)

    def add_partitions(self, name: str, count: int, assignment: list[list[int]] | None = None) -> TopicMetadata:
        rm = self.rm
        with rm.topic_lock:
            old = rm.metadata_cache.get_topic(name)
            md = rm.metadata_cache.set_partition_count(name, count)
            start = old.num_partitions if old is not None else 0
            for p in range(start, count):
                rm.log_manager.get_or_create_log(name, p, rm.log_config_for(md))
            return md

    def update_topic_configs(self, name: str, configs: dict[str, str]) -> TopicMetadata:
        rm = self.rm
        md = rm.metadata_cache.set_topic_configs(name, configs)
        rm.log_manager.update_topic_config(name, rm.log_config_from(configs))
        return md

    # --- leadership
    def current_leader(self, topic: str, partition: int) -> tuple[int, int]:
        return self.rm.config.node_id, LEADER_EPOCH

    def leader_hint(self, tp: TopicPartition) -> tuple[int, int] | None:
        return None

    def check_leader(self, tp: TopicPartition, current_leader_epoch: int = -1) -> int:
        check_epoch(current_leader_epoch)
        return LEADER_EPOCH

    def leader_epoch_start_offset(self, tp: TopicPartition) -> int:
        return 0  # one epoch from the log's start

    def missing_log_error(self, tp: TopicPartition) -> KafkaError:
        return UnknownTopicOrPartitionError(f"This server does not host this topic-partition: {tp}")

    # --- the leader's reads and writes
    def append_as_leader(self, tp: TopicPartition, lg: Log, records: bytes | bytearray | memoryview,
                         origin: AppendOrigin, required_acks: int) -> LogAppendInfo:
        # one broker: the high watermark follows the log end at once, raised under the append's lock; only up, as
        # another network thread may have appended (and raised it) before this append
        return lg.append(records, origin=origin, leader_epoch=LEADER_EPOCH, raise_high_watermark=True)

    def check_enough_replicas(self, tp: TopicPartition, lg: Log, required_offset: int) -> tuple[bool, int]:
        return lg.high_watermark >= required_offset, 0

    def leader_log_for_read(self, tp: TopicPartition, lg: Log, current_leader_epoch: int, replica_id: int,
                            fetch_offset: int) -> Log:
        check_epoch(current_leader_epoch)
        return lg

    @property
    def accepts_follower_fetches(self) -> bool:
        return False

    def update_follower_fetch_state(self, replica_id: int,
                                    infos: Sequence[tuple[TopicPartition, FetchPartitionInfo]]) -> None:
        return None

    def end_offset_for_epoch(self, tp: TopicPartition, lg: Log, leader_epoch: int,
                             current_leader_epoch: int) -> tuple[int, int]:
        """Epoch 0 (the only one) ends at the log end offset; any other is undefined (-1, -1)."""
        check_epoch(current_leader_epoch)
        if leader_epoch == LEADER_EPOCH:
            return LEADER_EPOCH, lg.log_end_offset
        return -1, -1

    def wait_for_delete_records(self, tp: TopicPartition, low_watermark: int, timeout_ms: int,
                                respond: Callable[[int, int], None]) -> None:
        respond(low_watermark, 0)

    # --- what the APIs describe
    def live_brokers(self, listener_name: str) -> list[tuple[int, str, int]]:
        return []

    def broker_registered(self, broker_id: int) -> bool:
        return False

    def partition_replicas(self, md: TopicMetadata, partition: int) -> PartitionReplicas:
        node = self.rm.config.node_id
        return PartitionReplicas(0, node, LEADER_EPOCH, [node], [node], [])

    @property
    def manual_assignment_error(self) -> KafkaError | None:
        return None

    @property
    def validates_assignments(self) -> bool:
        return False

    def check_replication_factor(self, replication_factor: int) -> None:
        if replication_factor != 1:
            raise InvalidReplicationFactorError(
                f"Unable to replicate the partition {replication_factor} time(s): The target replication factor of "
                f"{replication_factor} cannot be reached because only 1 broker(s) are registered.")

    def find_coordinator(self, key_type: int, key: str, internal_topic: Callable[[int], tuple[int, int, dict[str, str]]],
                         listener_name: str | None = None) -> CoordinatorLookup | None:
        return None

    def remote_transaction_coordinator(self, transactional_id: str) -> int | None:
        return None

    def verify_remotely(self, coordinator: int, transactional_id: str, producer_id: int, producer_epoch: int,
                        partitions: list[TopicPartition],
                        callback: Callable[[dict[TopicPartition, int]], None]) -> None:
        raise AssertionError("a single broker verifies transactions with its own coordinator")

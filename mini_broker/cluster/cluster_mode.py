"""What a cluster broker adds to :class:`~mini_broker.broker.MiniBroker` (Kafka: the ``BrokerServer`` parts
that exist because of the controller): its :class:`ClusterReplication`, producer ids from the controller, the
coordinators following the leadership of their internal partitions (:class:`CoordinatorPartitions`) with
answers held until the ISR has their records (:class:`CoordinatorAppendGate`), transaction markers sent to the
partitions' leaders, registration and controlled shutdown."""

from __future__ import annotations

import functools
from collections.abc import Callable

from mini_broker.cluster.coordinator_partitions import CoordinatorAppendGate, CoordinatorPartitions
from mini_broker.cluster.partition_offsets import RemoteLatestOffsets
from mini_broker.cluster.replication import ClusterReplication
from mini_broker.cluster.share_state import ClusterShareCoordinator, RemoteSharePersister
from mini_broker.cluster.txn_markers import ClusterTxnMarkerWriter
from mini_broker.config import KafkaConfig
from mini_broker.coordinator.internal_topics import INTERNAL_TOPIC_OF_KEY_TYPE, SHARE_KEY_TYPE
from mini_broker.group.group_coordinator import GroupCoordinator
from mini_broker.group.group_metadata_manager import GROUP_METADATA_TOPIC_NAME
from mini_broker.producer_state.producer_id_manager import ControllerProducerIdManager, ProducerIdManager
from mini_broker.security.inter_broker import InterBrokerSecurity
from mini_broker.server.context import BrokerContext, BrokerEndPoint
from mini_broker.server.kafka_apis import KafkaApis
from mini_broker.server.metadata_cache import MetadataCache
from mini_broker.server.replica_manager import ReplicaManager
from mini_broker.share.partition_manager import TopicIdPartition
from mini_broker.share.share_coordinator import SHARE_GROUP_STATE_TOPIC_NAME
from mini_broker.share.state_admin import GroupStatePersister
from mini_broker.transaction.transaction_coordinator import TransactionCoordinator
from pykafka_client.errors import ConfigurationError, NotLeaderOrFollowerError
from pykafka_client.utils.time import Time


class ClusterMode:
    """:class:`~mini_broker.broker.BrokerMode` of a broker with a controller at ``controller_address``."""

    #: the coordinators keep no local log: they serve the replicated partitions they lead
    follows_partition_leadership = True
    #: Produce stays on the handler threads: a leader's appends take partition state shared with the replica
    #: fetchers and the controller's leadership changes
    inline_produce = False

    def __init__(self, config: KafkaConfig, replica_manager: ReplicaManager, metadata_cache: MetadataCache,
                 controller_address: str, data_dir: str, time: Time) -> None:
        self._config = config
        self._time = time
        self.replication = ClusterReplication(replica_manager, metadata_cache, config.node_id, controller_address,
                                              data_dir, time)
        replica_manager.replication = self.replication
        security = InterBrokerSecurity.from_config(config, time)
        self.replication.inter_broker_security = security if security.secured else None
        self._coordinator_partitions: CoordinatorPartitions | None = None
        self._share_state: ClusterShareCoordinator | None = None
        self._share_persister: RemoteSharePersister | None = None
        self._latest_offsets: RemoteLatestOffsets | None = None

    def coordinator_data_dir(self, data_dir: str) -> str | None:
        return None

    def producer_id_manager(self, data_dir: str, metadata_cache: MetadataCache) -> ProducerIdManager:
        return ControllerProducerIdManager(data_dir, self.replication.allocate_producer_ids)

    def before_coordinators(self, context: BrokerContext) -> None:
        # the marker writer needs the gate, wired with the coordinators; the ACLs are the controller's,
        authorizer = context.authorizer
        if authorizer is not None:
            authorizer.replicate_with(self.replication.replicate_acls)
            self.replication.acl_listener = authorizer.apply_replicated
        # as are the SCRAM credentials
        credentials = context.scram_credentials
        if credentials is not None:
            credentials.replicate_with(self.replication.replicate_scram_credentials)
            self.replication.scram_listener = credentials.apply_replicated

    def share_persister(self, context: BrokerContext) -> tuple[GroupStatePersister,
                                                               Callable[[TopicIdPartition], int]]:
        """The share coordinator's shards on the ``__share_group_state`` partitions this broker will lead
        (``context.share_state``), and the share-partition leader's persister, which reaches them wherever they
        are, with the leader epoch of a topic partition (see :mod:`mini_broker.cluster.share_state`)."""
        get = self._config.get_int
        cache = context.metadata_cache

        def create_topic() -> None:
            partitions, rf, configs = INTERNAL_TOPIC_OF_KEY_TYPE[SHARE_KEY_TYPE].settings(get)
            self.replication.create_internal_topic(SHARE_GROUP_STATE_TOPIC_NAME, partitions, rf, configs)

        def leader_epoch(tp: TopicIdPartition) -> int:
            """The leader epoch of a topic partition this broker leads (else NOT_LEADER_OR_FOLLOWER: only its
            leader may read or write its share partitions' state)."""
            md = cache.topic_by_id(tp[0])
            leader, epoch = (-1, -1) if md is None else self.replication.current_leader(md.name, tp[1])
            if leader != self.replication.broker_id:
                raise NotLeaderOrFollowerError(f"broker {self.replication.broker_id} does not lead partition "
                                               f"{tp[1]} of topic id {tp[0]} (its leader: {leader}); refresh the "
                                               f"metadata and send the share fetch to the leader")
            return epoch

        self._share_state = ClusterShareCoordinator(
            self._time, get("share.coordinator.snapshot.update.records.per.snapshot"))
        context.share_state = self._share_state
        self._share_persister = RemoteSharePersister(self.replication, create_topic, time=self._time)
        self._latest_offsets = RemoteLatestOffsets(self.replication)
        context.remote_latest_offset = self._latest_offsets.latest_offset
        return self._share_persister, leader_epoch

    def wire_coordinators(self, context: BrokerContext, apis: KafkaApis, group: GroupCoordinator,
                          txn: TransactionCoordinator) -> None:
        gate = CoordinatorAppendGate(self.replication, self._config.get_int("offsets.commit.timeout.ms"), self._time)
        share = [self._share_state.runtime] if self._share_state is not None else []
        self._coordinator_partitions = CoordinatorPartitions(self.replication, [group.runtime, txn.runtime, *share],
                                                             gate)
        self.replication.leadership_listener = self._coordinator_partitions.on_leadership_change
        apis.response_gate = gate
        txn.runtime.replication_barrier = gate.when_replicated
        group.runtime.replication_barrier = functools.partial(gate.when_topic_replicated, GROUP_METADATA_TOPIC_NAME)
        context.txn_marker_writer = ClusterTxnMarkerWriter(context, self.replication, gate)

    def start(self, endpoints: list[BrokerEndPoint]) -> None:
        """Register every advertised listener with the controller (Kafka: BrokerRegistration's listeners), the
        inter-broker one as the endpoint the other brokers connect to."""
        inter = self._config.inter_broker_listener_name
        inter_broker = next((ep for ep in endpoints if ep.listener_name.upper() == inter), None)
        if inter_broker is None:
            raise ConfigurationError(
                f"the inter-broker listener {inter} is not among the advertised listeners "
                f"({', '.join(ep.listener_name for ep in endpoints)}); set inter.broker.listener.name (or "
                "security.inter.broker.protocol) to one of them, or add that listener")
        listeners = [{"name": ep.listener_name, "host": ep.host, "port": ep.port,
                      "security_protocol": self._config.listener_security_protocol(ep.listener_name)}
                     for ep in endpoints]
        self.replication.register(inter_broker.host, inter_broker.port, listeners)
        self.replication.start()

    def controlled_shutdown(self) -> None:
        self.replication.controlled_shutdown()

    def stop_coordinators(self) -> None:
        if self._coordinator_partitions is not None:
            self._coordinator_partitions.shutdown()
        if self._share_persister is not None:
            self._share_persister.close()
        if self._latest_offsets is not None:
            self._latest_offsets.close()
        if self._share_state is not None:
            self._share_state.shutdown()

    def shutdown(self) -> None:
        self.replication.shutdown()

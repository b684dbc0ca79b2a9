"""``MiniBroker``: the whole broker in one object (Kafka: ``KafkaServer`` / ``BrokerServer`` startup and shutdown).

Usage (tests, examples)::

    with MiniBroker() as broker:            # port 0, temp data dir removed on exit
        client = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)

Startup order: the lock on every data directory (``<dir>/.lock``, :mod:`mini_broker.log.data_dir_lock`;
a directory in use by another broker fails the start before anything is written) -> metadata (meta.properties, topic registry) -> logs (recovery) -> replica manager and
purgatories -> request channel, API layer, socket server (binds; the bound port is known from here) ->
handler pool -> processors and acceptors -> optional metrics HTTP endpoint.
Shutdown order (Kafka's): stop accepting and close connections -> stop handler threads -> replica manager
(purgatories) -> logs (flush, clean-shutdown markers) -> metrics endpoint -> data directory locks released.
``shutdown()`` is idempotent. A start that fails (port in use, directory in use) undoes what it began but
writes no clean-shutdown marker: the next start recovers as after a crash.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Mapping, Protocol

from mini_broker.cluster.cluster_mode import ClusterMode
from mini_broker.config import KafkaConfig
from mini_broker.group import GroupConfig, GroupCoordinator, GroupMetadataManager
from mini_broker.group.consumer import ConsumerGroupConfig, ConsumerGroupCoordinator, TopicInfo, TopicsImage
from mini_broker.log.data_dir_lock import DataDirLock
from mini_broker.log.unified_log import Log
from mini_broker.metrics import BrokerMetrics, MetricsHttpServer
from mini_broker.network.request_channel import RequestChannel
from mini_broker.network.socket_server import SelectorFactory, SocketServer
from mini_broker.producer_state.producer_id_manager import ProducerIdManager
from mini_broker.purgatory import DelayedShareFetchGroupKey
from mini_broker.quota.quota_manager import QuotaManagers
from mini_broker.security.authorizer import create_authorizer
from mini_broker.security.listener_security import BrokerSecurity, api_versions_handler
from mini_broker.security.scram_credentials import ScramCredentialStore
from mini_broker.server.apis.registry import ALL_APIS
from mini_broker.server.context import BrokerContext, BrokerEndPoint
from mini_broker.server.faults import FaultInjector
from mini_broker.server.kafka_apis import KafkaApis
from mini_broker.server.metadata_cache import MetadataCache
from mini_broker.server.replica_manager import ReplicaManager
from mini_broker.server.request_handler import KafkaRequestHandlerPool
from mini_broker.server.txn_marker_writer import ReplicaTxnMarkerWriter
from mini_broker.share.config import ShareGroupConfig
from mini_broker.share.coordinator import ShareGroupCoordinator
from mini_broker.share.partition_manager import SharePartitionManager, TopicIdPartition
from mini_broker.share.share_coordinator import ShareCoordinator
from mini_broker.share.state_admin import GroupStatePersister
from mini_broker.transaction.transaction_config import TransactionConfig
from mini_broker.transaction.transaction_coordinator import TransactionCoordinator
from mini_broker.transaction.transaction_log import TransactionLog
from pykafka_client.utils.time import SYSTEM_TIME, Time

log = logging.getLogger(__name__)


class BrokerMode(Protocol):
    """What differs between a single broker and a cluster broker, decided once at start
    (:class:`SingleBrokerMode`, :class:`~mini_broker.cluster.cluster_mode.ClusterMode`)."""

    #: whether the coordinators serve only while this broker leads their internal partitions
    follows_partition_leadership: bool
    #: whether a network thread handles non-transactional Produce itself (:attr:`KafkaApis.inline_produce`)
    inline_produce: bool

    def coordinator_data_dir(self, data_dir: str) -> str | None:
        """Where the coordinators keep their logs (None: in the replicated internal partitions)."""
        ...

    def producer_id_manager(self, data_dir: str, metadata_cache: MetadataCache) -> ProducerIdManager: ...

    def before_coordinators(self, context: BrokerContext) -> None:
        """Wiring the coordinators need from their startup on (a single broker's marker writer)."""
        ...

    def wire_coordinators(self, context: BrokerContext, apis: KafkaApis, group: GroupCoordinator,
                          txn: TransactionCoordinator) -> None: ...

    def start(self, endpoints: list[BrokerEndPoint]) -> None:
        """Once the listeners are bound (a cluster broker registers its first endpoint with the controller)."""
        ...

    def controlled_shutdown(self) -> None: ...

    def stop_coordinators(self) -> None: ...

    def share_persister(self, context: BrokerContext) -> tuple[GroupStatePersister,
                                                               Callable[[TopicIdPartition], int]]:
        """A cluster broker's share-partition state, kept by the share coordinator wherever it runs: the
        persister and the leader epoch of a topic partition (a single broker keeps it in its data dir)."""
        ...

    def shutdown(self) -> None: ...


class SingleBrokerMode:
    """:class:`BrokerMode` of a broker that is its own cluster: it leads every partition and keeps the coordinators'
    logs in its data dir."""

    follows_partition_leadership = False
    #: its appends wait on nothing but a log lock: no replication, no inter-broker call
    inline_produce = True

    def coordinator_data_dir(self, data_dir: str) -> str | None:
        return data_dir

    def producer_id_manager(self, data_dir: str, metadata_cache: MetadataCache) -> ProducerIdManager:
        return ProducerIdManager(data_dir, first_id=metadata_cache.producer_id_block_end)

    def before_coordinators(self, context: BrokerContext) -> None:
        context.txn_marker_writer = ReplicaTxnMarkerWriter(context)

    def wire_coordinators(self, context: BrokerContext, apis: KafkaApis, group: GroupCoordinator,
                          txn: TransactionCoordinator) -> None:
        return None

    def start(self, endpoints: list[BrokerEndPoint]) -> None:
        return None

    def controlled_shutdown(self) -> None:
        return None

    def stop_coordinators(self) -> None:
        return None

    def share_persister(self, context: BrokerContext) -> tuple[GroupStatePersister,
                                                               Callable[[TopicIdPartition], int]]:
        raise AssertionError("a single broker keeps share-partition state in its data dir (ShareCoordinator)")

    def shutdown(self) -> None:
        return None


def default_cli_data_dir() -> str:
    """Per-user data dir for the CLI: ``$XDG_DATA_HOME/mini_broker`` or ``~/.local/share/mini_broker``."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "mini_broker")


class MiniBroker:
    """A running broker. ``config`` is a KafkaConfig or a mapping of Kafka property names.

    ``fault_injector`` is TEST-ONLY (see ``mini_broker.server.faults``).

    ``data_dir`` (else ``log.dirs``/``log.dir`` when set in ``config``, else a fresh temp dir that is deleted
    on shutdown) holds the logs and the metadata. ``listeners`` defaults to ``PLAINTEXT://127.0.0.1:0``.

    Secured listeners take Kafka's settings (see :mod:`mini_broker.security.listener_security`)::

        MiniBroker({"listeners": "SASL_SSL://127.0.0.1:0", "ssl.keystore.type": "PEM",
                    "ssl.keystore.location": "broker.pem", "sasl.enabled.mechanisms": "SCRAM-SHA-512"})
        broker.add_scram_credential("alice", "alice-secret", "SCRAM-SHA-512")
        broker.listener_bootstrap("SASL_SSL")   # host:port of that listener
    """

    def __init__(
        self,
        config: KafkaConfig | Mapping[str, object] | None = None,
        *,
        data_dir: str | None = None,
        listeners: str | None = None,
        metrics_port: int | None = None,
        time: Time = SYSTEM_TIME,
        selector_factory: SelectorFactory | None = None,
        fault_injector: FaultInjector | None = None,
        **props: object,
    ) -> None:
        raw: dict[str, object]
        if isinstance(config, KafkaConfig):
            raw = dict(config.originals())
        else:
            raw = dict(config or {})
        raw.update({k.replace("_", "."): v for k, v in props.items()})
        if listeners is not None:
            raw["listeners"] = listeners
        raw.setdefault("listeners", "PLAINTEXT://127.0.0.1:0")
        self._owns_data_dir = False
        if data_dir is None and "log.dirs" not in raw and "log.dir" not in raw:
            data_dir = tempfile.mkdtemp(prefix="mini_broker-")
            self._owns_data_dir = True
        if data_dir is not None:
            raw["log.dirs"] = data_dir
            raw.pop("log.dir", None)
        self.config = KafkaConfig(raw)
        self.data_dir = self.config.log_dirs[0]
        self.time = time
        self.metrics = BrokerMetrics(time)
        self._metrics_port = metrics_port
        self._selector_factory = selector_factory
        #: TEST-ONLY fault injection (``mini_broker.server.faults``); None unless passed in.
        self.faults = fault_injector
        self._lock = threading.Lock()
        self._started = False
        self._stopped = False
        self._start_failed = False
        self._dir_locks = [DataDirLock(d) for d in self.config.log_dirs]
        self.socket_server: SocketServer | None = None
        self.handler_pool: KafkaRequestHandlerPool | None = None
        self.replica_manager: ReplicaManager | None = None
        #: a cluster broker's when ``controller.quorum.bootstrap.servers`` names a controller (set at start)
        self.mode: BrokerMode = SingleBrokerMode()
        self.group_coordinator: GroupCoordinator | None = None
        #: a single broker's coordinator logs, compacted by the LogManager's cleaner (none on a cluster broker)
        self._cleanable_coordinator_logs: list[Log] = []
        self.transaction_coordinator: TransactionCoordinator | None = None
        #: KIP-932 share partitions (this broker's, as partition leader; set at start)
        self.share_partitions: SharePartitionManager | None = None
        #: a single broker's share-partition state in ``__share_group_state`` (a cluster broker: see
        #: mini_broker.cluster.share_state; None)
        self.share_coordinator: ShareCoordinator | None = None
        self.metadata_cache: MetadataCache | None = None
        self.metrics_server: MetricsHttpServer | None = None
        self.apis: KafkaApis | None = None
        self.quotas: QuotaManagers | None = None
        self.context: BrokerContext | None = None
        #: SCRAM credentials (persisted in the data dir; set at start)
        self.scram_credentials: ScramCredentialStore | None = None

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self) -> MiniBroker:
        with self._lock:
            if self._started:
                return self
            self._started = True
        try:
            self._start()
        except BaseException:
            self._start_failed = True
            self.shutdown()
            raise
        return self

    def _start(self) -> None:
        config = self.config
        node_id = config.node_id
        for lock in self._dir_locks:
            lock.acquire()  # DataDirInUseError before anything is written
        self.metadata_cache = MetadataCache(self.data_dir, node_id, config.cluster_id)
        self.replica_manager = ReplicaManager(config, self.metadata_cache, self.data_dir, self.metrics, self.time,
                                              log_dirs=self.config.log_dirs)
        controllers = config.get("controller.quorum.bootstrap.servers")
        if controllers:
            assert isinstance(controllers, list)
            self.mode = ClusterMode(config, self.replica_manager, self.metadata_cache, str(controllers[0]),
                                    self.data_dir, self.time)
        mode = self.mode
        self.replica_manager.startup()
        self.replica_manager.log_manager.cleaner.register_metrics(self.metrics)
        channel = RequestChannel(config.queued_max_requests, self.metrics)
        self.context = BrokerContext(config, node_id, self.metadata_cache, self.replica_manager, self.metrics, self.time)
        self.context.producer_id_manager = mode.producer_id_manager(self.data_dir, self.metadata_cache)
        self.context.faults = self.faults
        self.context.authorizer = create_authorizer(config, self.data_dir)
        self.scram_credentials = ScramCredentialStore(self.data_dir)
        self.context.scram_credentials = self.scram_credentials
        group_config = GroupConfig.from_broker(config.get)
        # a cluster broker's coordinators serve their replicated internal partitions while they lead them
        # (coordinator_partitions); a single broker keeps their logs in its data dir
        self.group_coordinator = GroupCoordinator(
            group_config, GroupMetadataManager(mode.coordinator_data_dir(self.data_dir), self.time,
                                               group_config.offsets_topic_segment_bytes,
                                               config.get_int("offsets.topic.num.partitions")),
            self.time, broker_id=node_id)
        consumer_groups = self._consumer_groups(self.group_coordinator, self.metadata_cache)
        share_groups = self._share_groups(self.context, self.group_coordinator, consumer_groups)
        self.group_coordinator.startup(follow_partition_leadership=mode.follows_partition_leadership)
        consumer_groups.startup()
        share_groups.startup()
        self.group_coordinator.register_metrics(self.metrics)
        self.context.group_coordinator = self.group_coordinator
        mode.before_coordinators(self.context)
        txn_coordinator = self._start_transaction_coordinator(self.context)
        # a single broker's coordinator logs live outside the LogManager's table; its cleaner compacts them too,
        # each from when it exists (a partition's log is created at its first record)
        for partition in (*self.group_coordinator.manager.partitions, *txn_coordinator.txn_log.partitions,
                          *([self.share_coordinator.partition] if self.share_coordinator is not None else [])):
            partition.when_opened(self._clean_coordinator_log)
        self.apis = KafkaApis(channel, ALL_APIS, self.context, self.metrics, self.time)
        self.apis.inline_produce = mode.inline_produce
        mode.wire_coordinators(self.context, self.apis, self.group_coordinator, txn_coordinator)
        self.quotas = QuotaManagers(config.quota_window_num, config.quota_window_size_seconds, self.metrics, self.time)
        self.quotas.start()
        self.apis.quotas = self.quotas
        security = BrokerSecurity(self.scram_credentials, api_versions_handler(self.apis.supported_versions), self.time)
        self.socket_server = SocketServer(config, channel, self.apis, self.time, self.metrics, self._selector_factory,
                                          security, disconnect_listeners=[self._on_connection_closed])
        self.quotas.on_ip_quota = self.socket_server.quotas.update_ip_connection_rate
        self.context.endpoints = self._advertised_endpoints(self.socket_server)
        self.handler_pool = KafkaRequestHandlerPool(channel, self.apis, config.num_io_threads, self.time,
                                                    self.metrics.request_handler_idle)
        self.handler_pool.start()
        self.socket_server.start()
        mode.start(self.context.endpoints)
        if self._metrics_port is not None:
            self.metrics_server = MetricsHttpServer(self.metrics, "127.0.0.1", self._metrics_port)
            self.metrics_server.start()
        log.info("event=broker_started node_id=%s cluster_id=%s listeners=%s data_dir=%s", node_id,
                 self.metadata_cache.cluster_id, ",".join(self.listener_urls()), self.data_dir)

    def _consumer_groups(self, classic: GroupCoordinator, metadata: MetadataCache) -> ConsumerGroupCoordinator:
        """KIP-848 consumer groups, served on the classic coordinator's runtime (which routes to them and hands
        them their records when it loads); start them once the classic coordinator started."""
        def topics() -> TopicsImage:
            return TopicsImage.of(TopicInfo(t.topic_id, t.name, t.num_partitions) for t in metadata.all_topics())

        consumer_groups = ConsumerGroupCoordinator(ConsumerGroupConfig.from_broker(self.config.get), classic.runtime,
                                                   topics, self.time)
        classic.consumer_groups = consumer_groups
        return consumer_groups

    def _share_groups(self, context: BrokerContext, classic: GroupCoordinator,
                      consumer_groups: ConsumerGroupCoordinator) -> ShareGroupCoordinator:
        """KIP-932 share groups: membership on the group coordinator's runtime (same topics image as the consumer
        groups; hosted before it loads, so they replay their records), share partitions on this broker (a member
        whose session expires has what it holds released). Start them once the classic coordinator started."""
        share_config = ShareGroupConfig.from_broker(self.config.get)
        share_groups = ShareGroupCoordinator(share_config, classic.runtime, consumer_groups.topics_image,
                                             lambda group_id, member_id: self._release_share_member(group_id, member_id),
                                             self.time)
        coordinator_dir = self.mode.coordinator_data_dir(self.data_dir)
        persister: GroupStatePersister
        leader_epoch: Callable[[TopicIdPartition], int] | None = None
        if coordinator_dir is not None:  # a single broker: the share coordinator in process, on its data dir
            self.share_coordinator = ShareCoordinator(
                coordinator_dir, self.time,
                records_per_snapshot=self.config.get_int("share.coordinator.snapshot.update.records.per.snapshot"))
            self.share_coordinator.startup()
            persister = self.share_coordinator
            context.share_state = self.share_coordinator
        else:  # a cluster: the share coordinator of each share partition, wherever it runs
            persister, leader_epoch = self.mode.share_persister(context)
        fetches = context.replica_manager.fetch_purgatory
        self.share_partitions = SharePartitionManager(
            share_config, self.time, group_config=share_groups.group_config, persister=persister,
            on_records_available=lambda group_id, tp: fetches.check_and_complete(DelayedShareFetchGroupKey(group_id, *tp)),
            leader_epoch=leader_epoch)
        share_groups.state_admin = persister
        share_partitions = self.share_partitions
        share_groups.on_state_deleted = lambda group_id, tp: share_partitions.forget_share_partitions(
            group_id, *(tp or ()))
        classic.share_groups = share_groups
        context.share_groups = share_groups
        context.share_partitions = self.share_partitions
        return share_groups

    def _on_connection_closed(self, connection_id: str) -> None:
        if self.share_partitions is not None:
            self.share_partitions.on_connection_closed(connection_id)

    def _clean_coordinator_log(self, coordinator_log: Log) -> None:
        """Register a single broker's coordinator log with the log cleaner (until shutdown)."""
        if self.replica_manager is not None:
            self._cleanable_coordinator_logs.append(coordinator_log)
            self.replica_manager.log_manager.register_for_cleaning(coordinator_log)

    def _release_share_member(self, group_id: str, member_id: str) -> None:
        if self.share_partitions is not None:
            self.share_partitions.close_session(group_id, member_id)

    def _start_transaction_coordinator(self, context: BrokerContext) -> TransactionCoordinator:
        """The transaction coordinator: ``__transaction_state`` replayed, ids from the ProducerIdManager, markers
        through whatever ``context.txn_marker_writer`` holds when they are written."""
        txn_config = TransactionConfig.from_broker(self.config.get)
        manager = context.producer_id_manager
        assert manager is not None
        txn_log = TransactionLog(self.mode.coordinator_data_dir(self.data_dir), self.time,
                                 txn_config.transaction_state_log_segment_bytes,
                                 self.config.get_int("transaction.state.log.num.partitions"))
        coordinator = TransactionCoordinator(txn_config, txn_log, manager.generate_producer_id,
                                             lambda: context.txn_marker_writer, self.time)
        coordinator.startup(follow_partition_leadership=self.mode.follows_partition_leadership)
        self.transaction_coordinator = coordinator
        context.transaction_coordinator = coordinator
        context.transaction_verifier = coordinator
        return coordinator

    def _advertised_endpoints(self, server: SocketServer) -> list[BrokerEndPoint]:
        out: list[BrokerEndPoint] = []
        bound = {a.endpoint.listener_name: a for a in server.acceptors}
        for ep in self.config.advertised_listeners:
            acceptor = bound.get(ep.listener_name)
            port = ep.port
            if port == 0 and acceptor is not None:
                port = acceptor.bound_port
            host = ep.host
            if host in ("", "0.0.0.0", "::"):
                host = socket.gethostname()
            out.append(BrokerEndPoint(ep.listener_name, host, port))
        return out

    def shutdown(self) -> None:
        """Stop everything (idempotent): connections, handlers, purgatories, logs (clean shutdown)."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        log.info("event=broker_shutting_down node_id=%s", self.config.node_id)
        if not self._start_failed:
            self.mode.controlled_shutdown()
        if self.socket_server is not None:
            self.socket_server.stop_processing()
        if self.handler_pool is not None:
            self.handler_pool.shutdown()
        if self.quotas is not None:
            self.quotas.shutdown()
        self.mode.stop_coordinators()
        if self.replica_manager is not None:
            # no clean may run on a coordinator log while its coordinator closes it
            self.replica_manager.log_manager.cleaner.shutdown()
            for coordinator_log in self._cleanable_coordinator_logs:
                self.replica_manager.log_manager.unregister_for_cleaning(coordinator_log)
        if self.group_coordinator is not None:
            self.group_coordinator.shutdown()
        if self.transaction_coordinator is not None:
            self.transaction_coordinator.shutdown()
        if self.share_partitions is not None:
            self.share_partitions.shutdown()
        if self.share_coordinator is not None:
            self.share_coordinator.shutdown()
        self.mode.shutdown()
        if self.replica_manager is not None:
            self.replica_manager.shutdown(clean=not self._start_failed)
        if self.metrics_server is not None:
            self.metrics_server.shutdown()
        if self._owns_data_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)
        for lock in self._dir_locks:
            lock.release()
        log.info("event=broker_stopped node_id=%s", self.config.node_id)

    stop = shutdown

    def __enter__(self) -> MiniBroker:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.shutdown()

    # --- addresses --------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port of the first listener."""
        if self.socket_server is None:
            raise RuntimeError("broker not started")
        return self.socket_server.acceptors[0].bound_port

    @property
    def host(self) -> str:
        if self.context is None:
            raise RuntimeError("broker not started")
        return self.context.endpoints[0].host

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    def listener_urls(self) -> list[str]:
        if self.socket_server is None:
            return []
        return [a.endpoint.connection_string(a.bound_port) for a in self.socket_server.acceptors]

    def listener_port(self, listener_name: str) -> int:
        """The bound port of a named listener (e.g. ``"SASL_SSL"``)."""
        if self.socket_server is None:
            raise RuntimeError("broker not started")
        return self.socket_server.bound_port(listener_name.upper())

    def listener_bootstrap(self, listener_name: str) -> str:
        """``host:port`` of a named listener, for a client's ``bootstrap.servers``."""
        return f"{self.host}:{self.listener_port(listener_name)}"

    def add_scram_credential(self, user: str, password: str, mechanism: str = "SCRAM-SHA-256",
                             iterations: int = 4096) -> None:
        """Store a SCRAM credential for ``user`` (what ``kafka-storage format --add-scram`` does for a new
        cluster); clients may also use AlterUserScramCredentials."""
        from pykafka_client.network.transport.sasl.scram import ScramMechanism

        scram = ScramMechanism.for_mechanism_name(mechanism.upper())
        if scram is None:
            raise ValueError(f"unknown SCRAM mechanism {mechanism!r}: use SCRAM-SHA-256 or SCRAM-SHA-512")
        if self.scram_credentials is None:
            raise RuntimeError("broker not started")
        self.scram_credentials.upsert_password(user, scram, password, iterations)

    @property
    def metrics_url(self) -> str | None:
        return None if self.metrics_server is None else f"http://127.0.0.1:{self.metrics_server.port}/metrics"

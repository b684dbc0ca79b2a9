"""A cluster broker's side of replication (Kafka: the replication parts of ``ReplicaManager`` and
``BrokerLifecycleManager``): registration and heartbeats, applying the controller's metadata, leader and
follower transitions, follower fetch state, the high watermark, ISR changes, and the high-watermark checkpoint.

* **Lifecycle**: :meth:`start` registers with the controller (retrying until it answers), applies the image
  and starts threads that heartbeat every ``broker.heartbeat.interval.ms``, long-poll the controller for
  metadata changes (:meth:`_fetch_metadata`), propose ISR shrinks (``replica.lag.time.max.ms``), and write the
  high-watermark checkpoint (``replication-offset-checkpoint``) every second and at shutdown. The heartbeat
  thread never applies metadata nor waits for it: a fenced broker registers again there and its metadata
  thread catches up (:meth:`heartbeat_or_register`). The version a broker reports as applied
  (:attr:`image_version`) is the last one whose publication finished.
* **Metadata**: every request names the version this broker applied and the controller answers with the
  deltas after it (the whole image when the broker just started or is too far behind); :attr:`metadata`
  (:class:`~mini_broker.cluster.metadata_image.MetadataImage`) applies either and says what changed, and only
  those topics are published to the metadata cache, the partitions and the logs (Kafka:
  ``BrokerMetadataPublisher``). For each changed partition this broker hosts, :class:`Partition` says whether
  the role or the leader epoch changed. Becoming leader stops fetching it and records the epoch's start
  offset; becoming follower hands it to the fetcher of the new leader, which first truncates
  (OffsetForLeaderEpoch). Partitions no longer in the image have their logs deleted. Waiting produces and fetches are re-checked so that they fail
  with NOT_LEADER_OR_FOLLOWER at once.
* **Leader**: an append needs leadership (NOT_LEADER_OR_FOLLOWER) and, for acks=all, an ISR of at least
  ``min.insync.replicas`` (NOT_ENOUGH_REPLICAS); batches are stamped with the leader epoch. A follower fetch
  updates its fetch state, which may move the high watermark (waking delayed produces and consumer fetches)
  or expand the ISR. ISR proposals (expansions from fetches, shrinks from the housekeeping check) are queued
  and a thread of their own sends all that queued up in one AlterPartition (one controller change); nothing on
  a request handler's thread waits for the controller.
* **Coordinators**: leadership changes are told to :attr:`ClusterReplication.leadership_listener` (the group and
  transaction coordinators follow ``__consumer_offsets`` / ``__transaction_state``; see coordinator_partitions),
  whose appends go through :meth:`ClusterReplication.append_internal`.

Lock order: ``_lock`` (partition table) is never held while calling the controller, a log or a purgatory.
"""

from __future__ import annotations

import logging
import os
import threading
import time as _time
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from mini_broker.cluster.controller_rpc import ControllerChannel
from mini_broker.cluster.delayed_delete_records import DelayedDeleteRecords, DeleteRecordsStatus
from mini_broker.cluster.metadata_image import MetadataDelta, MetadataGapError, MetadataImage
from mini_broker.cluster.partition import NO_LEADER, Partition
from mini_broker.cluster.replica_fetcher import ReplicaFetcherManager
from mini_broker.cluster.txn_verification import TxnVerificationManager
from mini_broker.log.checkpoint import OffsetCheckpointFile
from mini_broker.log.fetch_data_info import LogAppendInfo
from mini_broker.log.unified_log import AppendOrigin, Log
from mini_broker.purgatory import DelayedOperationPurgatory, TopicPartitionOperationKey
from mini_broker.security.inter_broker import InterBrokerSecurity
from mini_broker.server.coordinator_lookup import (
    INTERNAL_TOPIC_OF_KEY_TYPE,
    TRANSACTION_KEY_TYPE,
    CoordinatorLookup,
    coordinates,
    coordinator_for,
)
from mini_broker.server.metadata_cache import MetadataCache, TopicMetadata
from mini_broker.server.replica_manager import ReplicaManager
from mini_broker.server.replication_strategy import FetchPartitionInfo, PartitionReplicas, TopicCreation
from pykafka_client.errors import (
    CoordinatorNotAvailableError,
    FencedLeaderEpochError,
    InvalidReplicationFactorError,
    LeaderNotAvailableError,
    NotControllerError,
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    StaleBrokerEpochError,
    TopicExistsError,
    UnknownLeaderEpochError,
    UnknownTopicOrPartitionError,
    for_code,
)
from pykafka_client.errors_base import KafkaError
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import Time

log = logging.getLogger(__name__)

HW_CHECKPOINT_FILE = "replication-offset-checkpoint"
HW_CHECKPOINT_INTERVAL_S = 1.0


class ClusterReplication:
    def __init__(self, replica_manager: ReplicaManager, metadata_cache: MetadataCache, broker_id: int,
                 controller_address: str, data_dir: str, time: Time) -> None:
        self.rm = replica_manager
        self.cache = metadata_cache
        self.broker_id = broker_id
        self.time = time
        config = replica_manager.config
        host, _, port = controller_address.rpartition(":")
        self.channel = ControllerChannel(host or "127.0.0.1", int(port))
        #: forwarded topic changes wait for every broker to apply them: never in the way of the heartbeats
        self.forwarding_channel = ControllerChannel(host or "127.0.0.1", int(port))
        #: the image long-poll (fetch_image): applies each new image as soon as the controller publishes it
        self.image_channel = ControllerChannel(host or "127.0.0.1", int(port))
        self.heartbeat_channel = ControllerChannel(host or "127.0.0.1", int(port))
        self._image_thread: threading.Thread | None = None
        self._housekeeping_thread: threading.Thread | None = None
        self._isr_thread: threading.Thread | None = None
        #: ISR proposals waiting for the next AlterPartition request (Kafka: AlterPartitionManager's unsent
        #: items): a fetch that catches followers up only queues them, and the sender thread sends all that
        #: queued up in one request
        self._isr_queue: dict[TopicPartition, tuple[Partition, dict[str, Any]]] = {}
        self._isr_queued = threading.Event()
        self.heartbeat_interval_s = config.get_int("broker.heartbeat.interval.ms") / 1000
        self.lag_time_max_ms = config.get_int("replica.lag.time.max.ms")
        self.default_replication_factor = config.default_replication_factor
        self.broker_epoch = -1
        #: the controller's metadata as this broker applied it
        self.metadata = MetadataImage()
        #: the version of :attr:`metadata` whose publication (cache, partitions, logs, coordinators) finished:
        #: what this broker reports as applied (:attr:`image_version`)
        self._published_version = -1
        self._lock = threading.RLock()
        self._apply_lock = threading.Lock()
        self.partitions: dict[TopicPartition, Partition] = {}
        self._topic_configs: dict[str, dict[str, str]] = {}
        #: per topic, the partitions of it this broker hosts
        self._hosted: dict[str, set[TopicPartition]] = {}
        self._hw_checkpoint = OffsetCheckpointFile(os.path.join(data_dir, HW_CHECKPOINT_FILE))
        self._stop = threading.Event()
        #: gets the ACLs of every applied image (the authorizer's; None: no authorizer)
        self.acl_listener: Callable[[list[dict[str, str]]], None] | None = None
        self.scram_listener: Callable[[list[dict[str, Any]]], None] | None = None
        self._thread: threading.Thread | None = None
        self.fetchers: ReplicaFetcherManager | None = None
        self._txn_verification: TxnVerificationManager | None = None
        self.delete_records_purgatory: DelayedOperationPurgatory[DelayedDeleteRecords] = DelayedOperationPurgatory(
            "DeleteRecords", broker_id=broker_id, time=time)
        self._host = ""
        self._port = -1
        #: TLS and SASL of the connections to the other brokers' inter-broker listener (None: plain TCP)
        self.inter_broker_security: InterBrokerSecurity | None = None
        self._listeners: list[dict[str, Any]] = []
        #: told (tp, leader epoch, log) when this broker becomes a partition's leader and (tp, epoch, None) when
        #: it stops leading it (the coordinators follow their internal partitions; see coordinator_partitions)
        self.leadership_listener: Callable[[TopicPartition, int, Log | None], None] | None = None

    # --- lifecycle ---------------------------------------------------------------------------------

    def register(self, host: str, port: int, listeners: list[dict[str, Any]] | None = None,
                 timeout_s: float = 60.0) -> None:
        """Register with the controller (retrying while it is unreachable) and apply its image. ``host``/``port``:
        the inter-broker listener's endpoint; ``listeners``: every advertised listener (``name``, ``host``,
        ``port``, ``security_protocol``), which Metadata answers pick from by the listener a request came in on."""
        self._host, self._port = host, port
        if listeners is not None:
            self._listeners = list(listeners)
        if self.fetchers is None:
            self.fetchers = ReplicaFetcherManager(self)
        deadline = _time.monotonic() + timeout_s
        while True:
            try:
                reply = self.channel.call(self._registration())
                break
            except OSError as e:
                if _time.monotonic() > deadline:
                    raise ConnectionError(f"controller at {self.channel.host}:{self.channel.port} unreachable; "
                                          f"start it first (mini-broker --cluster N starts both)") from e
                _time.sleep(0.1)
        self.broker_epoch = int(reply["broker_epoch"])
        log.info("event=broker_registered broker_id=%d broker_epoch=%d", self.broker_id, self.broker_epoch)
        self.apply_metadata(reply)

    def _registration(self) -> dict[str, Any]:
        return {"op": "register", "broker_id": self.broker_id, "host": self._host, "port": self._port,
                "listeners": self._listeners, "version": self.image_version}

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"broker-lifecycle-{self.broker_id}", daemon=True)
        self._thread.start()
        self._image_thread = threading.Thread(target=self._fetch_metadata, name=f"broker-metadata-{self.broker_id}",
                                              daemon=True)
        self._image_thread.start()
        self._housekeeping_thread = threading.Thread(target=self._housekeeping,
                                                     name=f"broker-replication-{self.broker_id}", daemon=True)
        self._housekeeping_thread.start()
        self._isr_thread = threading.Thread(target=self._send_isr_changes_loop,
                                            name=f"broker-alter-partition-{self.broker_id}", daemon=True)
        self._isr_thread.start()

    def _fetch_metadata(self) -> None:
        """Long-poll the controller for the changes after this broker's version and apply each reply at once
        (heartbeats carry none, so that applying a large image never delays them past the session timeout). The
        request says which version this broker applied, which the controller's topic changes wait for; a broker
        whose deltas do not follow its version asks for the whole image (version -1)."""
        in_step = True
        while not self._stop.is_set():
            try:
                reply = self.image_channel.call({"op": "fetch_metadata", "broker_id": self.broker_id,
                                                 "broker_epoch": self.broker_epoch,
                                                 "version": self.image_version if in_step else -1})
                in_step = self.apply_metadata(reply)
            except (OSError, KafkaError, ValueError) as e:
                # fenced or unreachable: the heartbeat thread registers again; retry after a heartbeat interval
                log.debug("event=metadata_fetch_failed broker_id=%d error=%r", self.broker_id, e)
                self._stop.wait(self.heartbeat_interval_s)
            except Exception:
                log.exception("event=metadata_apply_failed broker_id=%d", self.broker_id)
                self._stop.wait(self.heartbeat_interval_s)

    def controlled_shutdown(self) -> None:
        """Ask the controller to move this broker's leaderships away now (Kafka: controlled shutdown)."""
        if self.broker_epoch < 0:
            return
        try:
            self.channel.call({"op": "controlled_shutdown", "broker_id": self.broker_id,
                               "broker_epoch": self.broker_epoch})
        except (OSError, KafkaError) as e:
            log.warning("event=controlled_shutdown_failed error=%r msg=\"the controller fences this broker after "
                        "broker.session.timeout.ms instead\"", e)

    def shutdown(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.image_channel.close()
        self.heartbeat_channel.close()
        self._isr_queued.set()
        for t in (self._image_thread, self._housekeeping_thread, self._isr_thread):
            if t is not None:
                t.join(timeout=5)
        if self.fetchers is not None:
            self.fetchers.shutdown()
        with self._lock:
            verification, self._txn_verification = self._txn_verification, None
        if verification is not None:
            verification.shutdown()
        self.delete_records_purgatory.shutdown()
        self.channel.close()
        self.forwarding_channel.close()
        self.write_hw_checkpoint()

    def _run(self) -> None:
        """Heartbeats only, on their own channel: ISR proposals and checkpoints (:meth:`_housekeeping`) and
        metadata application (:meth:`_fetch_metadata`) run on other threads, so that a burst of them (a thousand
        new partitions) never delays a heartbeat past ``broker.session.timeout.ms``."""
        while not self._stop.wait(self.heartbeat_interval_s):
            self.heartbeat_or_register()

    def heartbeat_or_register(self) -> None:
        """One turn of the lifecycle thread: a heartbeat, or registering again when the controller fenced this
        broker. Neither applies metadata nor waits for its application (the registration's reply carries none:
        the metadata thread catches up from the version it applied, as for any other change), nor shares a
        channel with the requests that wait for the controller's other work (AlterPartition, forwarded topic
        changes), so that a broker busy creating thousands of logs keeps its session (Kafka: the
        BrokerLifecycleManager's own event queue)."""
        try:
            self.send_heartbeat()
        except StaleBrokerEpochError:
            log.warning("event=broker_fenced broker_id=%d msg=\"the controller fenced this broker; "
                        "registering again\"", self.broker_id)
            try:
                self._register_again()
            except (OSError, KafkaError, ValueError) as e:
                log.warning("event=register_failed broker_id=%d error=%r msg=\"retrying at the next heartbeat\"",
                            self.broker_id, e)
        except (OSError, KafkaError, ValueError) as e:
            log.warning("event=heartbeat_failed broker_id=%d error=%r msg=\"retrying; the controller fences "
                        "this broker after broker.session.timeout.ms\"", self.broker_id, e)

    def _register_again(self) -> None:
        """Register a fenced broker again on the heartbeat channel, without the metadata (see
        :meth:`heartbeat_or_register`)."""
        reply = self.heartbeat_channel.call({**self._registration(), "with_metadata": False})
        self.broker_epoch = int(reply["broker_epoch"])
        log.info("event=broker_registered broker_id=%d broker_epoch=%d", self.broker_id, self.broker_epoch)

    def send_heartbeat(self) -> None:
        """One broker heartbeat, naming the metadata version this broker applied (:attr:`image_version`); raises
        StaleBrokerEpochError when the controller fenced this broker."""
        self.heartbeat_channel.call({"op": "heartbeat", "broker_id": self.broker_id,
                                     "broker_epoch": self.broker_epoch, "version": self.image_version,
                                     "with_image": False})

    def _housekeeping(self) -> None:
        last_checkpoint = _time.monotonic()
        while not self._stop.wait(self.heartbeat_interval_s):
            try:
                self._maybe_shrink_isr()
                if _time.monotonic() - last_checkpoint >= HW_CHECKPOINT_INTERVAL_S:
                    last_checkpoint = _time.monotonic()
                    self.write_hw_checkpoint()
            except Exception:
                log.exception("event=replication_housekeeping_failed")

    def write_hw_checkpoint(self) -> None:
        offsets: dict[tuple[str, int], int] = {}
        for lg in self.rm.log_manager.all_logs():
            offsets[(lg.topic, lg.partition)] = lg.high_watermark
        try:
            self._hw_checkpoint.write(offsets)
        except OSError:
            log.exception("event=hw_checkpoint_failed")

    def read_hw_checkpoint(self) -> dict[tuple[str, int], int]:
        try:
            return self._hw_checkpoint.read()
        except (OSError, ValueError, KafkaError):
            log.exception("event=hw_checkpoint_unreadable msg=\"high watermarks start at the log start\"")
            return {}

    # --- the controller's image --------------------------------------------------------------------

    @property
    def image_version(self) -> int:
        """The version of the controller's metadata this broker applied and published (-1: none yet): what its
        heartbeats and metadata fetches report, which the controller's topic changes and
        ``MiniCluster.wait_for_metadata`` wait for. A version is reported only once its publication finished (the
        metadata cache, the partitions' leadership, their logs and the coordinators), not when the image took
        it (Kafka: a broker's metadata offset moves once its publishers ran), so nothing waiting for a broker to
        have applied a version proceeds while it is still creating the logs or moving the coordinators."""
        return self._published_version

    def apply_metadata(self, reply: dict[str, Any]) -> bool:
        """Apply what a controller reply brings: the deltas after this broker's version or a whole image. False
        when the deltas do not follow what this broker applied (it then asks for the image)."""
        if "image" in reply:
            self.apply_image(reply["image"])
        elif reply.get("deltas"):
            return self.apply_deltas(reply["deltas"])
        return True

    def apply_image(self, image: dict[str, Any]) -> None:
        """Apply a whole image (a snapshot): what differs from the image applied before is published."""
        with self._apply_lock:
            if int(image["version"]) <= self.metadata.version:
                return
            self._publish(self.metadata.replace(image))
            self._published_version = self.metadata.version

    def apply_deltas(self, deltas: list[dict[str, Any]]) -> bool:
        """Apply the controller's deltas after this broker's version: only the topics, brokers, ACLs and
        credentials they name are updated. False (nothing applied) when they do not follow this broker's
        version."""
        with self._apply_lock:
            try:
                delta = self.metadata.apply(deltas)
            except MetadataGapError as e:
                log.warning("event=metadata_gap broker_id=%d error=%s msg=\"fetching the whole image instead\"",
                            self.broker_id, e)
                return False
            self._publish(delta)
            self._published_version = self.metadata.version
            return True

    def _publish(self, delta: MetadataDelta) -> None:
        """Bring the metadata cache, the hosted partitions and the logs in line with what ``delta`` changed
        (Kafka: ``BrokerMetadataPublisher``); under ``_apply_lock``."""
        image = self.metadata
        if delta.snapshot:
            # topics the cache kept from before this broker applied anything (its registry on disk, written
            # before a restart) that the image no longer has: deleted while it was down
            for kept in self.cache.all_topics():
                if kept.name not in image.topics:
                    delta.topics[kept.name] = None
        self.cache.apply_cluster_delta(delta.topics, image.brokers if delta.brokers or delta.snapshot else None,
                                       image.cluster_id)
        if self.acl_listener is not None and (delta.acls or delta.snapshot):
            self.acl_listener(image.acls)
        if self.scram_listener is not None and (delta.scram_credentials or delta.snapshot):
            self.scram_listener(image.scram_credentials)
        checkpoint: dict[tuple[str, int], int] | None = None
        now = self.time.milliseconds()
        gone: set[TopicPartition] = set()
        for name, t in delta.topics.items():
            before = self._hosted.pop(name, set())
            md = None if t is None else self.cache.get_topic(name)
            if t is None or md is None:
                self._topic_configs.pop(name, None)
                gone |= before
                continue
            # the topic's log config, built when its configs changed (or it is new here); applied to the logs
            # of the partitions this broker hosts, one by one (not by scanning every log of the broker)
            config = None
            if self._topic_configs.get(name) != md.configs:
                self._topic_configs[name] = dict(md.configs)
                config = self.rm.log_config_for(md)
            hosted: set[TopicPartition] = set()
            for p, reg in enumerate(t["partitions"]):
                if self.broker_id not in reg["replicas"]:
                    continue
                tp = TopicPartition(name, p)
                hosted.add(tp)
                lg = self.rm.log_manager.get_log(tp.topic, tp.partition)
                if lg is None:
                    lg = self.rm.log_manager.get_or_create_log(tp.topic, tp.partition,
                                                               config or self.rm.log_config_for(md))
                    if checkpoint is None:
                        checkpoint = self.read_hw_checkpoint()
                    lg.update_high_watermark(checkpoint.get((tp.topic, tp.partition), 0))
                elif config is not None:
                    self.rm.log_manager.get_or_create_log(tp.topic, tp.partition, config)  # the topic's config
                    lg.update_config(config)
                with self._lock:
                    part = self.partitions.get(tp)
                    if part is None:
                        part = self.partitions[tp] = Partition(tp.topic, tp.partition, self.broker_id)
                    change = part.update_registration(reg["replicas"], reg["isr"], reg["leader"],
                                                      reg["leader_epoch"], reg["partition_epoch"],
                                                      lg.log_end_offset, now)
                if change == "leader":
                    self._become_leader(tp, part, lg)
                    self._tell_leadership(tp, part.leader_epoch, lg)
                elif change == "follower":
                    self._become_follower(tp, part)
                    self._tell_leadership(tp, part.leader_epoch, None)
                elif part.is_leader:  # the ISR changed: the high watermark and waiting produces may move
                    self.maybe_increment_hw(tp, part, lg)
                    self._wake(tp)
            if hosted:
                self._hosted[name] = hosted
            gone |= before - hosted
        with self._lock:
            gone = {tp for tp in gone if self.partitions.pop(tp, None) is not None}
        for tp in sorted(gone):
            self._tell_leadership(tp, -1, None)
            if self.fetchers is not None:
                self.fetchers.remove_partition(tp)
            self.rm.log_manager.delete_log(tp.topic, tp.partition)
            self._wake(tp)
        if delta.snapshot:
            # logs of partitions deleted or moved away while this broker was down (or fenced)
            for lg in self.rm.log_manager.all_logs():
                tp = TopicPartition(lg.topic, lg.partition)
                if tp not in self._hosted.get(lg.topic, ()):
                    log.warning("event=stray_log partition=%s-%s msg=\"not assigned to this broker; deleting\"",
                                lg.topic, lg.partition)
                    self.rm.log_manager.delete_log(lg.topic, lg.partition)

    def _tell_leadership(self, tp: TopicPartition, leader_epoch: int, lg: Log | None) -> None:
        if self.leadership_listener is not None:
            self.leadership_listener(tp, leader_epoch, lg)

    def _become_leader(self, tp: TopicPartition, part: Partition, lg: Log) -> None:
        log.info("event=become_leader partition=%s leader_epoch=%d isr=%s log_end=%d", tp, part.leader_epoch,
                 part.isr, lg.log_end_offset)
        if self.fetchers is not None:
            self.fetchers.remove_partition(tp)
        lg.leader_epoch_cache().assign(part.leader_epoch, lg.log_end_offset)
        self.maybe_increment_hw(tp, part, lg)
        self._wake(tp)

    def _become_follower(self, tp: TopicPartition, part: Partition) -> None:
        log.info("event=become_follower partition=%s leader=%d leader_epoch=%d", tp, part.leader, part.leader_epoch)
        if self.fetchers is not None:
            self.fetchers.remove_partition(tp)
            if part.leader != NO_LEADER:
                self.fetchers.add_partition(tp, part.leader, part.leader_epoch)
        self._wake(tp)

    def _wake(self, tp: TopicPartition) -> None:
        key = TopicPartitionOperationKey(tp.topic, tp.partition)
        self.rm.produce_purgatory.check_and_complete(key)
        self.rm.fetch_purgatory.check_and_complete(key)
        self.delete_records_purgatory.check_and_complete(key)

    def coordinates_transaction(self, transactional_id: str) -> bool:
        """Whether this broker leads the ``__transaction_state`` partition of ``transactional_id``."""
        return coordinates(self.cache, self.broker_id, TRANSACTION_KEY_TYPE, transactional_id)

    def broker_endpoint(self, broker_id: int) -> tuple[str, int] | None:
        return self.cache.broker_endpoint(broker_id)

    def txn_verification(self) -> TxnVerificationManager:
        """The KIP-890 verifier that asks remote transaction coordinators (created at first use)."""
        with self._lock:
            if self._txn_verification is None:
                self._txn_verification = TxnVerificationManager(self)
            return self._txn_verification

    # --- ReplicationStrategy: what the ReplicaManager and the APIs ask ------------------------------------

    def load_logs(self) -> None:
        """High watermarks from the checkpoint (not the log end: a follower's tail may not be committed); which
        logs this broker keeps is the controller's metadata's business (:meth:`apply_metadata`)."""
        checkpoint = self.read_hw_checkpoint()
        for lg in self.rm.log_manager.all_logs():
            lg.update_high_watermark(checkpoint.get((lg.topic, lg.partition), 0))

    def missing_log_error(self, tp: TopicPartition) -> KafkaError:
        return NotLeaderOrFollowerError(f"broker {self.broker_id} is not a replica of {tp}")

    def leader_hint(self, tp: TopicPartition) -> tuple[int, int] | None:
        return self.current_leader(tp.topic, tp.partition)

    @property
    def accepts_follower_fetches(self) -> bool:
        return True

    def end_offset_for_epoch(self, tp: TopicPartition, lg: Log, leader_epoch: int,
                             current_leader_epoch: int) -> tuple[int, int]:
        self.check_leader(tp, current_leader_epoch)
        return lg.leader_epoch_cache().end_offset_for(leader_epoch, lg.log_end_offset)

    def wait_for_delete_records(self, tp: TopicPartition, low_watermark: int, timeout_ms: int,
                                respond: Callable[[int, int], None]) -> None:
        self.delete_records(tp, timeout_ms, respond)

    def live_brokers(self, listener_name: str) -> list[tuple[int, str, int]]:
        return self.cache.live_brokers(listener_name)

    def broker_registered(self, broker_id: int) -> bool:
        return self.cache.broker_registered(broker_id)

    def partition_replicas(self, md: TopicMetadata, partition: int) -> PartitionReplicas:
        reg = self.cache.partition_registration(md.name, partition)
        if reg is None:
            return PartitionReplicas(LeaderNotAvailableError.code, -1, -1, [], [], [])
        live = {b[0] for b in self.cache.live_brokers()}
        leader = int(reg["leader"])
        return PartitionReplicas(0 if leader >= 0 else LeaderNotAvailableError.code, leader, int(reg["leader_epoch"]),
                                 list(reg["replicas"]), list(reg["isr"]),
                                 [r for r in reg["replicas"] if r not in live])

    @property
    def manual_assignment_error(self) -> KafkaError | None:
        return None

    @property
    def validates_assignments(self) -> bool:
        return True

    def check_replication_factor(self, replication_factor: int) -> None:
        return None  # the controller checks it against the registered brokers

    def find_coordinator(self, key_type: int, key: str,
                         internal_topic: Callable[[int], tuple[int, int, dict[str, str]]],
                         listener_name: str | None = None) -> CoordinatorLookup | None:
        """The live leader of the key's internal topic partition; the first lookup creates the internal topic
        (Kafka: auto-creation on FindCoordinator)."""
        found = coordinator_for(self.cache, key_type, key, listener_name)
        if found.error_code == CoordinatorNotAvailableError.code and found.partition < 0:
            topic = INTERNAL_TOPIC_OF_KEY_TYPE[key_type]
            partitions, rf, configs = internal_topic(key_type)
            try:
                self.create_internal_topic(topic, partitions, rf, configs)
            except KafkaError as e:
                return CoordinatorLookup(CoordinatorNotAvailableError.code, f"creating {topic} failed ({e}); retry")
            found = coordinator_for(self.cache, key_type, key, listener_name)
        return found

    def remote_transaction_coordinator(self, transactional_id: str) -> int | None:
        coordinator = coordinator_for(self.cache, TRANSACTION_KEY_TYPE, transactional_id).node_id
        return None if coordinator == self.broker_id else coordinator

    def verify_remotely(self, coordinator: int, transactional_id: str, producer_id: int, producer_epoch: int,
                        partitions: list[TopicPartition],
                        callback: Callable[[dict[TopicPartition, int]], None]) -> None:
        self.txn_verification().verify(coordinator, transactional_id, producer_id, producer_epoch, partitions,
                                       callback)

    # --- leadership checks -------------------------------------------------------------------------

    def partition(self, tp: TopicPartition) -> Partition | None:
        with self._lock:
            return self.partitions.get(tp)

    def current_leader(self, topic: str, partition: int) -> tuple[int, int]:
        reg = self.cache.partition_registration(topic, partition)
        if reg is None:
            return -1, -1
        return int(reg["leader"]), int(reg["leader_epoch"])

    def check_leader(self, tp: TopicPartition, current_leader_epoch: int = -1) -> int:
        """This broker's leader epoch of ``tp`` when it leads it (at ``current_leader_epoch`` when given)."""
        return self.leader_partition(tp, current_leader_epoch).leader_epoch

    def leader_epoch_start_offset(self, tp: TopicPartition) -> int:
        return self.leader_partition(tp).leader_epoch_start_offset

    def leader_partition(self, tp: TopicPartition, current_leader_epoch: int = -1) -> Partition:
        """This broker's partition when it leads it (at ``current_leader_epoch`` when that is given)."""
        part = self.partition(tp)
        if part is None:
            if self.cache.contains_partition(tp.topic, tp.partition):
                raise NotLeaderOrFollowerError(f"broker {self.broker_id} does not host {tp}")
            raise UnknownTopicOrPartitionError(f"This server does not host this topic-partition: {tp}")
        if current_leader_epoch >= 0:
            if current_leader_epoch > part.leader_epoch:
                raise UnknownLeaderEpochError(f"leader epoch {current_leader_epoch} of {tp} is newer than "
                                              f"{part.leader_epoch}; this broker has not seen the change yet")
            if current_leader_epoch < part.leader_epoch:
                raise FencedLeaderEpochError(f"leader epoch {current_leader_epoch} of {tp} is fenced by "
                                             f"{part.leader_epoch}; refresh metadata")
        if not part.is_leader:
            raise NotLeaderOrFollowerError(f"broker {self.broker_id} is not the leader of {tp} (leader "
                                           f"{part.leader}); refresh metadata")
        return part

    def leader_log_for_read(self, tp: TopicPartition, lg: Log, current_leader_epoch: int, replica_id: int,
                            fetch_offset: int) -> Log:
        self.check_leader(tp, current_leader_epoch)
        current = self.rm.log_manager.get_log(tp.topic, tp.partition)
        if current is None:
            raise NotLeaderOrFollowerError(f"broker {self.broker_id} has no log for {tp}")
        return current

    # --- leader: append, follower fetch, high watermark, ISR ---------------------------------------

    def append_as_leader(self, tp: TopicPartition, lg: Log, records: bytes | bytearray | memoryview,
                         origin: AppendOrigin, required_acks: int) -> LogAppendInfo:
        part = self.leader_partition(tp)
        if required_acks == -1 and origin is AppendOrigin.CLIENT:
            min_isr = lg.config.min_in_sync_replicas
            if len(part.isr) < min_isr:
                raise NotEnoughReplicasError(
                    f"The size of the current ISR {part.isr} of {tp} is insufficient to satisfy the min.isr "
                    f"requirement of {min_isr}; retry when the followers are back in sync")
        info = lg.append(records, origin=origin, leader_epoch=part.leader_epoch)
        self.maybe_increment_hw(tp, part, lg)
        return info

    def append_internal(self, tp: TopicPartition, lg: Log, records: bytes) -> None:
        """A coordinator's append to the internal partition ``tp`` it leads (raises NOT_LEADER_OR_FOLLOWER when
        this broker no longer leads it); long-polling follower fetches are woken so that the ISR gets it."""
        self.append_as_leader(tp, lg, records, AppendOrigin.COORDINATOR, -1)
        self.rm.fetch_purgatory.check_and_complete(TopicPartitionOperationKey(tp.topic, tp.partition))

    def unreplicated_internal_offsets(self, topics: frozenset[str]) -> dict[TopicPartition, int]:
        """Log end offsets of the partitions of ``topics`` this broker leads whose high watermark is below it."""
        with self._lock:
            led = [tp for tp, part in self.partitions.items() if tp.topic in topics and part.is_leader]
        out: dict[TopicPartition, int] = {}
        for tp in led:
            lg = self.rm.log_manager.get_log(tp.topic, tp.partition)
            if lg is not None and lg.high_watermark < lg.log_end_offset:
                out[tp] = lg.log_end_offset
        return out

    def maybe_increment_hw(self, tp: TopicPartition, part: Partition, lg: Log) -> bool:
        with self._lock:
            hw = part.high_watermark(lg.log_end_offset, lg.high_watermark)
        return lg.maybe_increment_high_watermark(hw)  # in one step: a concurrent raise is never undone

    def check_enough_replicas(self, tp: TopicPartition, lg: Log, required_offset: int) -> tuple[bool, int]:
        """DelayedProduce's rule (Kafka ``Partition.checkEnoughReplicasReachOffset``)."""
        part = self.partition(tp)
        if part is None or not part.is_leader:
            return False, NotLeaderOrFollowerError.code
        if lg.high_watermark >= required_offset:
            if len(part.isr) < lg.config.min_in_sync_replicas:
                return False, NotEnoughReplicasAfterAppendError.code
            return True, 0
        return False, 0

    def update_follower_fetch_state(self, replica_id: int, infos: Sequence[tuple[TopicPartition, FetchPartitionInfo]]
                                    ) -> None:
        now = self.time.milliseconds()
        for tp, info in infos:
            part = self.partition(tp)
            lg = self.rm.log_manager.get_log(tp.topic, tp.partition)
            if part is None or lg is None or not part.is_leader:
                continue
            if info.current_leader_epoch >= 0 and info.current_leader_epoch != part.leader_epoch:
                continue
            with self._lock:
                log_start_moved = part.update_follower_fetch(replica_id, info.fetch_offset, lg.log_end_offset, now,
                                                             info.log_start_offset)
            if self.maybe_increment_hw(tp, part, lg):
                self._wake(tp)
            if log_start_moved:
                self.delete_records_purgatory.check_and_complete(TopicPartitionOperationKey(tp.topic, tp.partition))
            with self._lock:
                new_isr = part.isr_to_expand(replica_id, lg.high_watermark)
            if new_isr is not None:
                self._alter_isr(tp, part, new_isr)

    def delete_records(self, tp: TopicPartition, timeout_ms: int, respond: Callable[[int, int], None]) -> None:
        """After the leader moved its log start offset (``rm.delete_records``): ``respond(low watermark,
        error code)`` once the ISR's followers have moved theirs (see :mod:`delayed_delete_records`)."""
        lg = self.rm.log_manager.get_log(tp.topic, tp.partition)
        required = -1 if lg is None else lg.log_start_offset

        def done(statuses: dict[Hashable, DeleteRecordsStatus]) -> None:
            st = statuses[tp]
            respond(st.low_watermark if st.error_code == 0 else -1, st.error_code)

        op = DelayedDeleteRecords(timeout_ms, {tp: DeleteRecordsStatus(required)}, self._check_low_watermark, done)
        self.delete_records_purgatory.try_complete_else_watch(op, [TopicPartitionOperationKey(tp.topic, tp.partition)])

    def _check_low_watermark(self, tp: Hashable, required_offset: int) -> tuple[bool, int, int]:
        assert isinstance(tp, TopicPartition)
        part = self.partition(tp)
        lg = self.rm.log_manager.get_log(tp.topic, tp.partition)
        if part is None or lg is None or not part.is_leader:
            return False, -1, NotLeaderOrFollowerError.code
        with self._lock:
            low = part.low_watermark(lg.log_start_offset)
        return low >= required_offset, low, 0

    def _maybe_shrink_isr(self) -> None:
        now = self.time.milliseconds()
        with self._lock:
            proposals = [(tp, part, part.isr_to_shrink(now, self.lag_time_max_ms))
                         for tp, part in self.partitions.items()]
        for tp, part, new_isr in proposals:
            if new_isr is not None:
                log.warning("event=isr_shrink partition=%s isr=%s new_isr=%s msg=\"followers have not caught up "
                            "within replica.lag.time.max.ms\"", tp, part.isr, new_isr)
                self._alter_isr(tp, part, new_isr)

    def _alter_isr(self, tp: TopicPartition, part: Partition, new_isr: list[int]) -> None:
        """Queue an AlterPartition proposal (one at a time per partition); :meth:`send_isr_changes` sends it. The
        caller (a follower's fetch, the shrink check) never waits for the controller: after a restart a single
        fetch can catch a follower up on hundreds of partitions, and one controller round trip (and image) per
        partition, on the request handler's thread, held every handler for as long as they took."""
        with self._lock:
            if part.pending_isr is not None:
                return
            part.pending_isr = new_isr
            self._isr_queue[tp] = (part, {"topic": tp.topic, "partition": tp.partition,
                                          "leader_epoch": part.leader_epoch,
                                          "partition_epoch": part.partition_epoch, "isr": new_isr})
        self._isr_queued.set()

    def _send_isr_changes_loop(self) -> None:
        while not self._stop.is_set():
            self._isr_queued.wait(self.heartbeat_interval_s)
            if self._stop.is_set():
                return
            self._isr_queued.clear()
            try:
                self.send_isr_changes()
            except Exception:
                log.exception("event=alter_partition_send_failed")

    def send_isr_changes(self) -> None:
        """Send every queued ISR proposal in one AlterPartition request (one controller change for all of
        them); the image in the reply carries the ISRs the controller accepted."""
        with self._lock:
            queued, self._isr_queue = self._isr_queue, {}
        if not queued:
            return
        req = {"op": "alter_partitions", "broker_id": self.broker_id, "broker_epoch": self.broker_epoch,
               "version": self.image_version, "partitions": [item for _, item in queued.values()]}
        try:
            reply = self.channel.call(req)
        except (OSError, KafkaError) as e:
            log.warning("event=alter_partition_failed partitions=%d error=%r msg=\"proposed again by the next "
                        "fetch or shrink check\"", len(queued), e)
            results: dict[str, Any] = {}
        else:
            self.apply_metadata(reply)
            results = reply.get("results", {})
        for tp, (part, item) in queued.items():
            error = results.get(f"{tp.topic}:{tp.partition}")
            if error is not None:
                log.warning("event=alter_partition_refused partition=%s isr=%s error=%s", tp, item["isr"],
                            error.get("message"))
            elif results:
                log.info("event=isr_changed partition=%s isr=%s", tp, item["isr"])
            with self._lock:
                part.pending_isr = None
            lg = self.rm.log_manager.get_log(tp.topic, tp.partition)
            if lg is not None:
                self.maybe_increment_hw(tp, part, lg)
            self._wake(tp)

    # --- topic changes go through the controller ----------------------------------------------------

    def _controller(self, req: dict[str, Any]) -> dict[str, Any]:
        try:
            reply = self.forwarding_channel.call({**req, "broker_id": self.broker_id, "version": self.image_version})
        except OSError as e:
            raise NotControllerError(f"the controller is unreachable ({e!r}); retry") from e
        self.apply_metadata(reply)
        return reply

    def _batch(self, req: dict[str, Any]) -> dict[str, KafkaError | None]:
        """A batched controller request: per item None or the Kafka error the controller gave."""
        out: dict[str, KafkaError | None] = {}
        for key, err in self._controller(req)["results"].items():
            out[key] = None if err is None else for_code(int(err["error"]))(str(err["message"]))
        return out

    def create_topics(self, specs: Sequence[TopicCreation]) -> dict[str, TopicMetadata | KafkaError]:
        """One CreateTopics request, one controller change (answered once every broker applied it)."""
        topics = []
        for spec in specs:
            rf = self.default_replication_factor if spec.replication_factor < 0 else spec.replication_factor
            topics.append({"name": spec.name, "num_partitions": spec.num_partitions, "replication_factor": rf,
                           "configs": dict(spec.configs), "assignment": spec.assignment})
        errors = self._batch({"op": "create_topics", "topics": topics})
        out: dict[str, TopicMetadata | KafkaError] = {}
        for spec in specs:
            err = errors.get(spec.name)
            md = self.cache.get_topic(spec.name)
            if err is not None:
                out[spec.name] = err
            elif md is None:
                out[spec.name] = UnknownTopicOrPartitionError(
                    f"Topic {spec.name} was created but is not in the image yet; retry")
            else:
                out[spec.name] = md
        return out

    def alter_partition_reassignments(self, moves: Sequence[tuple[str, int, list[int] | None]]
                                      ) -> dict[tuple[str, int], KafkaError | None]:
        errors = self._batch({"op": "alter_reassignments", "moves": [[t, p, r] for t, p, r in moves]})
        return {(t, p): errors.get(f"{t}:{p}") for t, p, _ in moves}

    def list_partition_reassignments(self, partitions: Sequence[tuple[str, int]] | None
                                     ) -> list[tuple[str, int, list[int], list[int], list[int]]]:
        reply = self._controller({"op": "list_reassignments",
                                  "partitions": None if partitions is None else [list(tp) for tp in partitions]})
        return [(str(t), int(p), list(r), list(a), list(d)) for t, p, r, a, d in reply["reassignments"]]

    def elect_leaders(self, unclean: bool, partitions: Sequence[tuple[str, int]] | None
                      ) -> dict[tuple[str, int], KafkaError | None]:
        errors = self._batch({"op": "elect_leaders", "unclean": unclean,
                              "partitions": None if partitions is None else [list(tp) for tp in partitions]})
        out: dict[tuple[str, int], KafkaError | None] = {}
        for key, err in errors.items():
            topic, _, p = key.rpartition(":")
            out[(topic, int(p))] = err
        return out

    def replicate_acls(self, created: list[dict[str, str]], deleted: list[dict[str, str]]) -> None:
        """An ACL change, made by the controller (in its image, which every broker applies)."""
        self._controller({"op": "alter_acls", "create": created, "delete": deleted})

    def replicate_scram_credentials(self, upserted: list[dict[str, Any]], deleted: list[dict[str, str]]) -> None:
        """A SCRAM credential change, made by the controller (in its image, which every broker applies)."""
        self._controller({"op": "alter_scram_credentials", "upsert": upserted, "delete": deleted})

    def create_topic(self, name: str, num_partitions: int, configs: dict[str, str],
                     replication_factor: int = -1) -> TopicMetadata:
        rf = self.default_replication_factor if replication_factor < 0 else replication_factor
        if rf < 1:
            raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
        self._controller({"op": "create_topic", "name": name, "num_partitions": num_partitions,
                          "replication_factor": rf, "configs": configs})
        md = self.cache.get_topic(name)
        if md is None:
            raise UnknownTopicOrPartitionError(f"Topic {name} was created but is not in the image yet; retry")
        return md

    def create_internal_topic(self, name: str, num_partitions: int, replication_factor: int,
                              configs: dict[str, str]) -> None:
        """Create ``__consumer_offsets`` / ``__transaction_state`` with ``num_partitions`` and ``replication_factor``
        capped by the live brokers, and ``min.insync.replicas`` capped by that (a concurrent creation by another
        broker is fine)."""
        rf = max(1, min(replication_factor, len(self.cache.live_brokers())))
        configs = dict(configs)
        if "min.insync.replicas" in configs:
            configs["min.insync.replicas"] = str(min(int(configs["min.insync.replicas"]), rf))
        try:
            self._controller({"op": "create_topic", "name": name, "num_partitions": num_partitions,
                              "replication_factor": rf,
                              "configs": configs})
        except TopicExistsError:
            pass

    def delete_topic(self, name: str) -> None:
        self._controller({"op": "delete_topic", "name": name})

    def add_partitions_batch(self, growth: Sequence[tuple[str, int, list[list[int]] | None]]
                             ) -> dict[str, KafkaError | None]:
        """One CreatePartitions request, one controller change."""
        return self._batch({"op": "create_partitions_batch",
                            "topics": [{"name": n, "count": c, "assignment": a} for n, c, a in growth]})

    def delete_topics(self, names: Sequence[str]) -> dict[str, KafkaError | None]:
        """One DeleteTopics request, one controller change."""
        return self._batch({"op": "delete_topics", "names": list(names)})

    def add_partitions(self, name: str, count: int, assignment: list[list[int]] | None = None) -> TopicMetadata:
        self._controller({"op": "create_partitions", "name": name, "count": count, "assignment": assignment})
        md = self.cache.get_topic(name)
        if md is None:
            raise UnknownTopicOrPartitionError(f"Topic {name} not found")
        return md

    def update_topic_configs(self, name: str, configs: dict[str, str]) -> TopicMetadata:
        self._controller({"op": "alter_configs", "name": name, "configs": configs})
        md = self.cache.get_topic(name)
        if md is None:
            raise UnknownTopicOrPartitionError(f"Topic {name} not found")
        return md

    def allocate_producer_ids(self) -> tuple[int, int]:
        reply = self.channel.call({"op": "allocate_producer_ids", "broker_id": self.broker_id})
        return int(reply["first"]), int(reply["count"])

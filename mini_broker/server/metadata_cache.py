"""The broker's topic registry and cluster identity, persisted in the data dir.

Kafka keeps this in the KRaft metadata log and serves it from ``MetadataCache``; a single mini_broker keeps
it in ``<data dir>/__cluster_metadata.json`` (topic name -> topic id, partition count, topic config
overrides) and ``<data dir>/meta.properties`` (cluster.id, node.id). Writes are atomic (temp file, fsync,
rename, fsync of the directory), so a crash leaves either the old or the new registry, never a torn one.

Thread-safety: every method takes the registry lock but :meth:`get_topic` (one atomic dict read); readers get
immutable :class:`TopicMetadata` snapshots.
"""

from __future__ import annotations

import base64
import json
import os
import re
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from mini_broker.utils.atomic_file import atomic_write
from pykafka_client.errors import (
    InvalidPartitionsError,
    InvalidTopicError,
    TopicExistsError,
    UnknownTopicOrPartitionError,
)

REGISTRY_FILE = "__cluster_metadata.json"
PRODUCER_ID_BLOCK_SIZE = 1000
META_PROPERTIES = "meta.properties"
MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
ZERO_UUID = uuid.UUID(int=0)


def validate_topic_name(name: str) -> None:
    """Kafka's ``Topic.validate``: raises InvalidTopicError naming the rule that failed."""
    if not name:
        raise InvalidTopicError("Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise InvalidTopicError("Topic name cannot be \".\" or \"..\"")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicError(f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters")
    if not _LEGAL_TOPIC.match(name):
        raise InvalidTopicError(f"Topic name \"{name}\" is illegal, it contains a character other than "
                                "ASCII alphanumerics, '.', '_' and '-'")


def is_internal_topic(name: str) -> bool:
    return name in ("__consumer_offsets", "__transaction_state")


@dataclass(frozen=True)
class TopicMetadata:
    """One topic: id, partition count, config overrides (topic-level names, string values)."""

    name: str
    topic_id: uuid.UUID
    num_partitions: int
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def is_internal(self) -> bool:
        return is_internal_topic(self.name)


def _random_cluster_id() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class MetadataCache:
    """Topics and cluster identity of this single-broker cluster."""

    def __init__(self, data_dir: str, node_id: int, cluster_id: str | None = None) -> None:
        self.data_dir = data_dir
        self.node_id = node_id
        self._lock = threading.RLock()
        self._topics: dict[str, TopicMetadata] = {}
        self._partitions: dict[tuple[str, int], dict[str, Any]] = {}
        self._brokers: dict[int, dict[str, Any]] = {}
        # producer ids are handed out from blocks; the end of the current block is persisted first, so a
        # restart never reuses an id (Kafka: ProducerIdsRecord / ProducerIdManager)
        self._next_producer_id = 0
        self._producer_id_block_end = 0
        os.makedirs(data_dir, exist_ok=True)
        self.cluster_id = self._load_meta_properties(cluster_id)
        self._load_registry()

    # --- persistence ------------------------------------------------------------------------------

    def _load_meta_properties(self, wanted: str | None) -> str:
        path = os.path.join(self.data_dir, META_PROPERTIES)
        props: dict[str, str] = {}
        if os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                for line in fh:
                    line = line.strip()
                    if line and not line.startswith("#") and "=" in line:
                        k, _, v = line.partition("=")
                        props[k.strip()] = v.strip()
        existing = props.get("cluster.id")
        if existing and wanted and existing != wanted:
            raise ValueError(f"Cluster id {wanted} does not match the stored cluster id {existing} in {path}")
        if existing and props.get("node.id") not in (None, str(self.node_id)):
            raise ValueError(f"Stored node.id {props.get('node.id')} in {path} does not match node.id {self.node_id}")
        cluster_id = existing or wanted or _random_cluster_id()
        if not existing:
            text = f"#mini_broker meta.properties\nversion=1\ncluster.id={cluster_id}\nnode.id={self.node_id}\n"
            atomic_write(path, text.encode())
        return cluster_id

    def _registry_path(self) -> str:
        return os.path.join(self.data_dir, REGISTRY_FILE)

    def _load_registry(self) -> None:
        path = self._registry_path()
        #: False on a fresh data dir (or one whose registry was removed): logs found there are adopted
        self.registry_existed = os.path.exists(path)
        if not self.registry_existed:
            return
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
        self._producer_id_block_end = int(doc.get("producer_id_block_end", 0))
        self._next_producer_id = self._producer_id_block_end
        for t in doc.get("topics", []):
            md = TopicMetadata(t["name"], uuid.UUID(t["topic_id"]), int(t["num_partitions"]),
                               {str(k): str(v) for k, v in t.get("configs", {}).items()})
            self._topics[md.name] = md

    def _persist(self) -> None:
        doc = {
            "version": 1,
            "producer_id_block_end": self._producer_id_block_end,
            "topics": [
                {"name": t.name, "topic_id": str(t.topic_id), "num_partitions": t.num_partitions, "configs": t.configs}
                for t in sorted(self._topics.values(), key=lambda t: t.name)
            ],
        }
        # compact: json's C encoder (an indent falls back to the pure-Python one, ten times slower, and a cluster
        # broker rewrites the registry for every topic change)
        atomic_write(self._registry_path(), json.dumps(doc, sort_keys=True, separators=(",", ":")).encode())

    # --- cluster image (cluster brokers only) -----------------------------------------------------

    def apply_cluster_image(self, image: dict[str, Any]) -> None:
        """Replace the topics with the controller's and keep its brokers and partition registrations."""
        with self._lock:
            topics: dict[str, dict[str, Any] | None] = {name: None for name in self._topics}
            topics.update((str(t["name"]), t) for t in image["topics"])
            brokers = {int(b["broker_id"]): b for b in image["brokers"]}
            self.apply_cluster_delta(topics, brokers, str(image.get("cluster_id", self.cluster_id)))

    def apply_cluster_delta(self, topics: Mapping[str, dict[str, Any] | None],
                            brokers: Mapping[int, dict[str, Any]] | None, cluster_id: str) -> None:
        """Apply what changed in the controller's image (cluster brokers only): per changed topic its image entry
        (None: deleted), and the brokers when they changed (None: unchanged). Entries are kept by reference (the
        image replaces an entry whole, never modifies one). The registry is written when a topic's id, partition
        count or configs changed (leader and ISR changes leave it as it is)."""
        with self._lock:
            changed = False
            for name, t in topics.items():
                old = self._topics.get(name)
                if old is not None:
                    for p in range(old.num_partitions):
                        self._partitions.pop((name, p), None)
                if t is None:
                    if old is not None:
                        del self._topics[name]
                        changed = True
                    continue
                configs = {str(k): str(v) for k, v in t.get("configs", {}).items()}
                md = TopicMetadata(name, uuid.UUID(t["topic_id"]), len(t["partitions"]), configs)
                if md != old:
                    self._topics[name] = md
                    changed = True
                for p, reg in enumerate(t["partitions"]):
                    self._partitions[(name, p)] = reg
            if brokers is not None:
                self._brokers = dict(brokers)
            self.cluster_id = cluster_id or self.cluster_id
            if changed:
                self._persist()

    def partition_registration(self, topic: str, partition: int) -> dict[str, Any] | None:
        """The controller's registration of a partition (replicas, isr, leader, leader_epoch), cluster only."""
        with self._lock:
            return self._partitions.get((topic, partition))  # only a controller's image registers partitions

    def live_brokers(self, listener_name: str | None = None) -> list[tuple[int, str, int]]:
        """(id, host, port) of the unfenced brokers (cluster only): their endpoints on ``listener_name``, brokers
        without that listener left out (Kafka: a client sees only the listener it connected to); None: the
        inter-broker endpoint each registered."""
        with self._lock:
            out = []
            for i, b in sorted(self._brokers.items()):
                ep = None if b["fenced"] else _listener_endpoint(b, listener_name)
                if ep is not None:
                    out.append((i, ep[0], ep[1]))
            return out

    def live_broker_endpoint(self, broker_id: int, listener_name: str | None = None) -> tuple[str, int] | None:
        """(host, port) of ``broker_id`` on ``listener_name`` (None: its inter-broker endpoint) when it is
        registered, unfenced and has that listener (cluster only)."""
        with self._lock:
            b = self._brokers.get(broker_id)
            return None if b is None or b["fenced"] else _listener_endpoint(b, listener_name)

    def broker_endpoint(self, broker_id: int, listener_name: str | None = None) -> tuple[str, int] | None:
        """(host, port) of a registered broker on ``listener_name`` (None: its inter-broker endpoint)."""
        with self._lock:
            b = self._brokers.get(broker_id)
            return None if b is None else _listener_endpoint(b, listener_name)

    def broker_registered(self, broker_id: int) -> bool:
        """Whether the controller's image has ``broker_id`` (fenced or not; cluster only)."""
        with self._lock:
            return broker_id in self._brokers

    # --- reads ------------------------------------------------------------------------------------

    def get_topic(self, name: str) -> TopicMetadata | None:
        # one dict read, atomic: no lock (the writers replace a topic's immutable snapshot under it; this runs for
        # every partition of every Produce and Fetch)
        return self._topics.get(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        with self._lock:
            for t in self._topics.values():
                if t.topic_id == topic_id:
                    return t
            return None

    def all_topics(self) -> list[TopicMetadata]:
        with self._lock:
            return sorted(self._topics.values(), key=lambda t: t.name)

    @property
    def topics_by_name(self) -> Mapping[str, TopicMetadata]:
        """The topics by name, live (the map :meth:`contains_partition` reads; the same object for the cache's life:
        a single broker's compiled produce append is lent it)."""
        return self._topics

    def contains_partition(self, topic: str, partition: int) -> bool:
        t = self._topics.get(topic)  # (get_topic's one dict read, without its frame: every partition of every Produce)
        return t is not None and 0 <= partition < t.num_partitions

    @property
    def producer_id_block_end(self) -> int:
        """No producer id at or above this was handed out by :meth:`next_producer_id` (persisted)."""
        with self._lock:
            return self._producer_id_block_end

    def next_producer_id(self) -> int:
        """A producer id never handed out before by this cluster (also across restarts)."""
        with self._lock:
            if self._next_producer_id >= self._producer_id_block_end:
                self._producer_id_block_end = self._next_producer_id + PRODUCER_ID_BLOCK_SIZE
                self._persist()
            pid = self._next_producer_id
            self._next_producer_id += 1
            return pid

    # --- writes -----------------------------------------------------------------------------------

    def create_topic(self, name: str, num_partitions: int, configs: dict[str, str] | None = None,
                     validate_only: bool = False) -> TopicMetadata:
        validate_topic_name(name)
        if num_partitions < 1:
            raise InvalidPartitionsError("Number of partitions must be larger than 0.")
        with self._lock:
            if name in self._topics:
                raise TopicExistsError(f"Topic '{name}' already exists.")
            collide = name.replace(".", "_")
            for other in self._topics:
                if other.replace(".", "_") == collide:
                    raise InvalidTopicError(f"Topic '{name}' collides with existing topic: {other}")
            md = TopicMetadata(name, uuid.uuid4(), num_partitions, dict(configs or {}))
            if not validate_only:
                self._topics[name] = md
                self._persist()
            return md

    def delete_topic(self, name: str) -> TopicMetadata:
        with self._lock:
            md = self._topics.pop(name, None)
            if md is None:
                raise UnknownTopicOrPartitionError(f"Topic {name} not found")
            self._persist()
            return md

    def set_partition_count(self, name: str, count: int, validate_only: bool = False) -> TopicMetadata:
        with self._lock:
            md = self._topics.get(name)
            if md is None:
                raise UnknownTopicOrPartitionError(f"Topic {name} not found")
            if count < md.num_partitions:
                raise InvalidPartitionsError(f"Topic currently has {md.num_partitions} partitions, which is higher "
                                             f"than the requested {count}.")
            if count == md.num_partitions:
                raise InvalidPartitionsError(f"Topic already has {md.num_partitions} partitions.")
            new = replace(md, num_partitions=count)
            if not validate_only:
                self._topics[name] = new
                self._persist()
            return new

    def set_topic_configs(self, name: str, configs: dict[str, str]) -> TopicMetadata:
        with self._lock:
            md = self._topics.get(name)
            if md is None:
                raise UnknownTopicOrPartitionError(f"Topic {name} not found")
            new = replace(md, configs=dict(configs))
            self._topics[name] = new
            self._persist()
            return new


def _listener_endpoint(registration: dict[str, Any], listener_name: str | None) -> tuple[str, int] | None:
    """A broker registration's endpoint on ``listener_name`` (matched case-insensitively), None when it has no
    such listener; ``listener_name`` None, or a registration without a listener list (an image written before
    brokers registered their listeners): the registered inter-broker host and port."""
    listeners = registration.get("listeners")
    if listener_name is None or not listeners:
        return str(registration["host"]), int(registration["port"])
    wanted = listener_name.upper()
    for ep in listeners:
        if str(ep["name"]).upper() == wanted:
            return str(ep["host"]), int(ep["port"])
    return None

"""The producer's view of cluster metadata (Java ``ProducerMetadata`` + ``MetadataSnapshot`` lookups).

On top of :class:`~pykafka_client.network.metadata.Metadata` it

* tracks the topics the producer uses (``add``) and forgets those idle for ``metadata.max.idle.ms``,
  so metadata requests name only those topics;
* lets ``send()`` wait for a topic's partitions (``await_update``) with a condition variable;
* keeps per-cluster indexes (partitions by topic, partitions by leader node, available partitions) that
  the accumulator and the partitioner read on every call, rebuilt once per metadata update;
* reads leader hints from produce responses through the base class (KIP-951,
  ``Metadata.update_partition_leadership``); its indexes follow the hinted cluster at the next lookup.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from pykafka_client.config import LONG_MAX
from pykafka_client.network.cluster import Cluster, PartitionInfo
from pykafka_client.network.metadata import Metadata
from pykafka_client.protocol.messages import MetadataRequest
from pykafka_client.structs import Node, TopicPartition


class MetadataSnapshot:
    """The lookups of one cluster (Java ``MetadataSnapshot``): partitions by topic, partitions by leader node,
    available partitions and leaders, built once per metadata update and never changed (a new cluster gets a new
    snapshot). The Sender takes one per iteration (:meth:`ProducerMetadata.retain_topics_and_fetch_snapshot`) and
    reads it in the accumulator's ``ready`` and ``drain``; the leader epochs seen out of band are read live, as
    :meth:`ProducerMetadata.leader_and_epoch` reads them."""

    __slots__ = ("available", "by_node", "by_topic", "cluster", "leaders", "seen_epochs")

    def __init__(self, cluster: Cluster, seen_epochs: dict[tuple[str, int], int]) -> None:
        self.cluster = cluster
        #: the metadata's leader epochs seen out of band (its dict, changed in place: read, never written here)
        self.seen_epochs = seen_epochs
        by_topic: dict[str, list[PartitionInfo]] = {}
        by_node: dict[int, list[TopicPartition]] = {}
        leaders: dict[tuple[str, int], tuple[Node | None, int | None]] = {}
        for (topic, partition), info in cluster.partitions.items():
            by_topic.setdefault(topic, []).append(info)
            leaders[(topic, partition)] = (info.leader, info.leader_epoch)
            if info.leader is not None:
                by_node.setdefault(info.leader.id, []).append(TopicPartition(topic, partition))
        for infos in by_topic.values():
            infos.sort(key=lambda p: p.partition)
        for tps in by_node.values():
            tps.sort()
        self.by_topic = by_topic
        self.by_node = by_node
        self.leaders = leaders
        self.available = {t: [p.partition for p in infos if p.leader is not None] for t, infos in by_topic.items()}

    def partition_count_for_topic(self, topic: str) -> int | None:
        infos = self.by_topic.get(topic)
        return len(infos) if infos else None

    def available_partitions_for_topic(self, topic: str) -> Sequence[int]:
        return self.available.get(topic, ())

    def leader_and_epoch(self, tp: tuple[str, int]) -> tuple[Node | None, int | None]:
        """The leader of ``tp`` (None if unknown) and its epoch, respecting out-of-band newer epochs."""
        # (tp itself as the key: a TopicPartition is a tuple, equal to and hashed as the (topic, partition) keys)
        found = self.leaders.get(tp)
        if found is None:
            return None, None
        leader, epoch = found
        seen = self.seen_epochs.get(tp)
        if seen is not None and epoch is not None and seen > epoch:
            return None, seen
        return leader, epoch

    def partitions_for_node(self, node_id: int) -> Sequence[TopicPartition]:
        return self.by_node.get(node_id, ())


#: The attribute (a ProducerMetadata slot) that holds what ``fetch()`` returns: the kernel's send path reads the
#: current cluster there, without fetch()'s Python frame, once per record (``SendRecord``'s
#: ``cluster_at = (metadata, CLUSTER_ATTRIBUTE)``).
CLUSTER_ATTRIBUTE = "_cluster"
#: The attribute (a ProducerMetadata slot) that holds the time before which no topic expires (``retain_topics`` has
#: nothing to do): the kernel's Sender round reads it there, with ``CLUSTER_ATTRIBUTE`` and ``index``, to do what
#: :meth:`ProducerMetadata.retain_topics_and_fetch_snapshot` does without its frame (``Sender``'s round setup).
RETAIN_AT_ATTRIBUTE = "_retain_at_ms"


class ProducerMetadata(Metadata):
    """Metadata restricted to the producer's topics, with fast lookups for the hot path."""

    #: What the kernel's send path reads once per record, in slots (read at fixed offsets instead of from the
    #: instance dict): the topic expiries, the idle time, the index, and Metadata's current cluster (``fetch()``,
    #: read through ``CLUSTER_ATTRIBUTE``).
    __slots__ = ("_cluster", "_retain_at_ms", "index", "metadata_idle_ms", "topic_expiry")

    def __init__(self, *args: Any, metadata_idle_ms: int = 300_000, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.metadata_idle_ms = metadata_idle_ms
        #: topic -> expiry (monotonic ms); read by the kernel's send_record as ``add_and_count`` reads it (which
        #: remembers until when a topic's expiry is fresh: an expiry only grows, and is removed once passed)
        self.topic_expiry: dict[str, int] = {}
        #: no topic expires before this (ms): the earliest expiry when retain_topics last looked, lowered by add (an
        #: expiry only grows otherwise), so retain_topics has nothing to look at before then (the Sender asks per
        #: iteration)
        self._retain_at_ms = LONG_MAX
        self._new_topics: set[str] = set()
        #: the lookups of the current cluster (replaced whole; stale when its ``cluster`` is not ``fetch()``)
        self.index = MetadataSnapshot(self.fetch(), self._last_seen_leader_epochs)
        self._update_cond = threading.Condition()
        self.add_listener(self._on_update)

    # --- topics ------------------------------------------------------------------------------------

    def add(self, topic: str, now_ms: int) -> None:
        """Keep ``topic`` in the metadata requests; a new topic asks for a (partial) update."""
        expiry = self.topic_expiry.get(topic)
        if expiry is not None and expiry - now_ms > self.metadata_idle_ms // 2:
            return  # fresh enough: no lock on the hot path
        with self._lock:
            if topic not in self.topic_expiry:
                self._new_topics.add(topic)
                self.request_update_for_new_topics()
            expiry = self.topic_expiry[topic] = now_ms + self.metadata_idle_ms
            if expiry < self._retain_at_ms:
                self._retain_at_ms = expiry

    def add_and_count(self, topic: str, now_ms: int) -> int | None:
        """``add(topic, now_ms)`` then ``partition_count_for_topic(topic)`` in one call (the send hot path)."""
        expiry = self.topic_expiry.get(topic)
        if expiry is None or expiry - now_ms <= self.metadata_idle_ms // 2:
            self.add(topic, now_ms)
        idx = self.index
        if idx.cluster is not self._cluster:  # fetch_metadata_snapshot() inlined: this runs once per send
            idx = self.fetch_metadata_snapshot()
        infos = idx.by_topic.get(topic)
        return len(infos) if infos else None

    def current_partition_count(self, topic: str) -> int | None:
        """The partition count of ``topic`` if the topic index is that of the current cluster, without a lock
        and without rebuilding a stale index: None when the topic is unknown or the index is stale (then use
        :meth:`partition_count_for_topic`). The async producer's ``send`` fast path; the index is replaced
        whole, never changed in place, so a reader sees one consistent index."""
        idx = self.index
        if idx.cluster is not self._cluster:
            return None
        infos = idx.by_topic.get(topic)
        return len(infos) if infos else None

    def contains_topic(self, topic: str) -> bool:
        return topic in self.topic_expiry

    def request_update_for_topic(self, topic: str) -> int:
        with self._lock:
            if topic in self._new_topics:
                return self.request_update_for_new_topics()
            return self.request_update()

    def topics_to_request(self) -> list[str] | None:
        with self._lock:
            if self._need_partial_update and not self._need_full_update and self._new_topics:
                return sorted(self._new_topics)
            return sorted(self.topic_expiry)

    def new_metadata_request(self) -> tuple[MetadataRequest, bool]:
        """A request for the new topics only (a partial update), else for all producer topics, which counts
        as a full update (Java ``ProducerMetadata.newMetadataRequestBuilder``): only a partial update keeps
        the cached partitions of topics it did not ask for."""
        with self._lock:
            partial = self._need_partial_update and not self._need_full_update and bool(self._new_topics)
            topics = sorted(self._new_topics) if partial else sorted(self.topic_expiry)
        body = MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=self.allow_auto_topic_creation,
        )
        return body, partial

    def retain_topics(self, now_ms: int) -> None:
        """Forget topics not used for ``metadata.max.idle.ms``."""
        if now_ms < self._retain_at_ms:
            return  # none has expired yet: no lock, no look at each topic (the common case, every Sender iteration)
        with self._lock:
            expired: list[str] | None = None
            earliest = LONG_MAX
            for t, exp in self.topic_expiry.items():  # a loop, not a comprehension: no call per Sender iteration
                if exp <= now_ms:
                    if expired is None:
                        expired = []
                    expired.append(t)
                elif exp < earliest:
                    earliest = exp
            self._retain_at_ms = earliest
            if expired is not None:
                for t in expired:
                    del self.topic_expiry[t]
                    self._new_topics.discard(t)

    def _on_update(self, cluster: Cluster) -> None:
        self.index = MetadataSnapshot(cluster, self._last_seen_leader_epochs)
        with self._lock:
            self._new_topics -= {t for t in self._new_topics if t in self.index.by_topic}
        with self._update_cond:
            self._update_cond.notify_all()

    def await_update(self, last_version: int, timeout_s: float) -> bool:
        """Block until the update version moves past ``last_version`` (real time), or the timeout. True if it did."""
        with self._update_cond:
            return self._update_cond.wait_for(lambda: self.update_version() > last_version or self.is_closed(), timeout_s)

    def close(self) -> None:
        super().close()
        with self._update_cond:
            self._update_cond.notify_all()

    # --- hot-path lookups ---------------------------------------------------------------------------

    def fetch_metadata_snapshot(self) -> MetadataSnapshot:
        """The lookups of the current cluster (built at the first call after an update): what the Sender's
        ``ready`` and ``drain`` read in one iteration (Java ``fetchMetadataSnapshot``)."""
        idx = self.index
        cluster = self._cluster  # what fetch() returns, without its call
        if idx.cluster is not cluster:
            idx = self.index = MetadataSnapshot(cluster, self._last_seen_leader_epochs)
        return idx

    def retain_topics_and_fetch_snapshot(self, now_ms: int) -> MetadataSnapshot:
        """:meth:`retain_topics` then :meth:`fetch_metadata_snapshot`: the Sender's metadata step of an iteration in
        one call (their common case, nothing to forget and the snapshot current, without either's frame)."""
        if now_ms >= self._retain_at_ms:
            self.retain_topics(now_ms)
        idx = self.index
        if idx.cluster is not self._cluster:
            idx = self.fetch_metadata_snapshot()
        return idx

    # (the partitioner's two lookups read the snapshot's fields, not through its methods: a call less on send()'s path)
    def partition_count_for_topic(self, topic: str) -> int | None:
        infos = self.fetch_metadata_snapshot().by_topic.get(topic)
        return len(infos) if infos else None

    def available_partitions_for_topic(self, topic: str) -> Sequence[int]:
        return self.fetch_metadata_snapshot().available.get(topic, ())

    def partitions_for_topic(self, topic: str) -> list[PartitionInfo]:
        return list(self.fetch_metadata_snapshot().by_topic.get(topic, ()))

    def leader_and_epoch(self, tp: tuple[str, int]) -> tuple[Node | None, int | None]:
        """The leader of ``tp`` (None if unknown) and its epoch, respecting out-of-band newer epochs."""
        return self.fetch_metadata_snapshot().leader_and_epoch(tp)

    def partitions_for_node(self, node_id: int) -> Sequence[TopicPartition]:
        return self.fetch_metadata_snapshot().partitions_for_node(node_id)

    def node_by_id(self, node_id: int) -> Node | None:
        return self.fetch().node_by_id(node_id)

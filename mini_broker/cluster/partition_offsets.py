"""The high watermark of a topic partition another broker leads, asked of its leader with ListOffsets (LATEST)
over the inter-broker listener (Kafka's ``PartitionMetadataClient`` of KIP-1226): the group coordinator's
DescribeShareGroupOffsets measures each share partition's lag against it, whichever broker leads it."""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from mini_broker.cluster.broker_connection import BrokerConnection
from pykafka_client.errors_base import KafkaError
from pykafka_client.protocol.messages import ListOffsetsRequest, ListOffsetsResponse
from pykafka_client.structs import TopicPartition

if TYPE_CHECKING:
    from mini_broker.cluster.replication import ClusterReplication

log = logging.getLogger(__name__)

#: ListOffsets' "latest" timestamp (the high watermark)
LATEST = -1
#: a version that answers one offset per partition with its leader epoch
LIST_OFFSETS_VERSION = 4
#: a consumer's replica id (not a follower's)
CONSUMER_REPLICA_ID = -1


class RemoteLatestOffsets:
    """``latest_offset(tp)``: the partition's (high watermark, leader epoch) from its leader (None: no leader, or
    it did not answer within ``timeout_ms``: the lag is then not known)."""

    def __init__(self, cluster: ClusterReplication, timeout_ms: int = 5000) -> None:
        self._cluster = cluster
        self._timeout_s = timeout_ms / 1000
        self._client_id = f"broker-{cluster.broker_id}-partition-offsets"
        self._lock = threading.Lock()
        self._connections: dict[int, BrokerConnection] = {}

    def latest_offset(self, tp: TopicPartition) -> tuple[int, int] | None:
        leader, _ = self._cluster.current_leader(tp.topic, tp.partition)
        if leader < 0:
            return None
        L = ListOffsetsRequest
        request = L(replica_id=CONSUMER_REPLICA_ID, isolation_level=0, topics=[L.ListOffsetsTopic(
            name=tp.topic, partitions=[L.ListOffsetsPartition(partition_index=tp.partition, timestamp=LATEST)])])
        with self._lock:
            conn = self._connections.get(leader)
            if conn is None:
                conn = self._connections[leader] = BrokerConnection(
                    lambda: self._cluster.broker_endpoint(leader), self._client_id,
                    self._cluster.inter_broker_security)
            try:
                response = conn.send_and_receive(request, LIST_OFFSETS_VERSION, self._timeout_s)
            except (OSError, KafkaError) as e:
                log.warning("event=latest_offset_unknown topic=%s partition=%d leader=%d error=%r", tp.topic,
                            tp.partition, leader, e)
                return None
        assert isinstance(response, ListOffsetsResponse)
        for topic in response.topics:
            for p in topic.partitions:
                if p.partition_index == tp.partition and not p.error_code:
                    return int(p.offset), int(p.leader_epoch)
        return None

    def close(self) -> None:
        with self._lock:
            for conn in self._connections.values():
                conn.close()
            self._connections.clear()

"""What API handlers can reach: the broker's components, bundled (Kafka passes these to KafkaApis)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mini_broker.config import KafkaConfig
from mini_broker.metrics import BrokerMetrics
from mini_broker.network.request_channel import Request
from mini_broker.security.auth_helper import ALLOW_ALL, RequestAuth, client_ip
from mini_broker.server.metadata_cache import MetadataCache
from pykafka_client.errors_base import BrokerResponseError
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import Time

if TYPE_CHECKING:
    from mini_broker.group.group_coordinator import GroupCoordinator
    from mini_broker.producer_state.producer_id_manager import ProducerIdManager
    from mini_broker.security.authorizer import StandardAuthorizer
    from mini_broker.security.scram_credentials import ScramCredentialStore
    from mini_broker.server.faults import FaultInjector
    from mini_broker.server.replica_manager import ReplicaManager
    from mini_broker.share.coordinator import ShareGroupCoordinator
    from mini_broker.share.partition_manager import SharePartitionManager
    from mini_broker.share.share_coordinator import ShareStateShards
    from mini_broker.transaction.seams import TransactionVerifier, TxnMarkerWriter
    from mini_broker.transaction.transaction_coordinator import TransactionCoordinator


#: ListOffsets' "latest" timestamp: the high watermark
LATEST_TIMESTAMP = -1


@dataclass(frozen=True)
class BrokerEndPoint:
    """An advertised listener after binding (port resolved)."""

    listener_name: str
    host: str
    port: int


@dataclass(eq=False)
class BrokerContext:
    config: KafkaConfig
    node_id: int
    metadata_cache: MetadataCache
    replica_manager: ReplicaManager
    metrics: BrokerMetrics
    time: Time
    endpoints: list[BrokerEndPoint] = field(default_factory=list)
    #: This broker's classic group coordinator (the broker creates it before it serves requests and shuts it
    #: down with it; every broker owns its own).
    group_coordinator: GroupCoordinator | None = None
    #: Producer ids for InitProducerId (None: the MetadataCache allocator is used).
    producer_id_manager: ProducerIdManager | None = None
    #: This broker's transaction coordinator (the transaction APIs' handlers reach it here; None: none).
    transaction_coordinator: TransactionCoordinator | None = None
    #: This broker's transaction coordinator, as the partition logs see it (None: no transactions served).
    transaction_verifier: TransactionVerifier | None = None
    #: How the transaction coordinator writes COMMIT/ABORT markers (the WriteTxnMarkers path).
    txn_marker_writer: TxnMarkerWriter | None = None
    #: The ACL authorizer (``authorizer.class.name``); None: no authorization, every request is allowed.
    authorizer: StandardAuthorizer | None = None
    #: TEST-ONLY fault injection (see ``mini_broker.server.faults``); None in normal runs.
    faults: FaultInjector | None = None
    #: SCRAM credentials (AlterUserScramCredentials / DescribeUserScramCredentials and the SASL listeners)
    scram_credentials: ScramCredentialStore | None = None
    #: KIP-932 share group membership, on the group coordinator's runtime (None: not served)
    share_groups: ShareGroupCoordinator | None = None
    #: KIP-932 share partitions and share sessions of this broker's partitions (None: not served)
    share_partitions: SharePartitionManager | None = None
    #: KIP-932 share-partition state this broker's share coordinator keeps (the share state APIs; None: none)
    share_state: ShareStateShards | None = None
    #: the high watermark of a topic partition another broker leads (a cluster: asked of its leader; None: not
    #: known), for :meth:`latest_offset`
    remote_latest_offset: Callable[[TopicPartition], tuple[int, int] | None] | None = None

    def auth(self, request: Request) -> RequestAuth:
        """The authorization checks of ``request``'s principal and client host (see mini_broker.security)."""
        if self.authorizer is None:
            return ALLOW_ALL  # no allocation per request while authorization is off (the common case)
        return RequestAuth(self.authorizer, request.context.principal, client_ip(request.context.client_address))

    def latest_offset(self, tp: TopicPartition) -> tuple[int, int] | None:
        """(high watermark, leader epoch) of a topic partition: this broker's when it leads it, else its leader's
        (None: not known)."""
        try:
            _, offset, epoch = self.replica_manager.fetch_offset_for_timestamp(tp, LATEST_TIMESTAMP, 0)
            return offset, epoch
        except BrokerResponseError:  # not led here
            return None if self.remote_latest_offset is None else self.remote_latest_offset(tp)

    def endpoint_for(self, listener_name: str) -> BrokerEndPoint:
        """The advertised endpoint of the listener a request came in on (else the first one)."""
        for ep in self.endpoints:
            if ep.listener_name == listener_name:
                return ep
        return self.endpoints[0]

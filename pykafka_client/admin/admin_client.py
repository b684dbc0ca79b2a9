"""The public admin client (Java: ``admin.KafkaAdminClient``), synchronous.

Threading model: the AdminClient owns a NetworkClient and drives it *in the caller's thread* for the
duration of each call (no background I/O thread). Calls are serialized by one lock, so an AdminClient
may be shared by threads but runs one operation at a time. Between calls nothing happens on the
network (idle connections are closed by the broker or by ``connections.max.idle.ms``).

Every operation takes ``timeout`` in float seconds (default ``default.api.timeout.ms``); each request
within it is bounded by ``request.timeout.ms``. Disconnects and retriable broker errors are retried
with ``retry.backoff.ms`` until the timeout, which raises :class:`KafkaTimeoutError` (naming the API, the
item, the broker last tried and the last error). A group's or transactional id's coordinator that cannot be
reached (its broker died) is looked up again with FindCoordinator, as one answering NOT_COORDINATOR. Broker errors are
raised as their specific :mod:`pykafka_client.errors` class (for multi-item calls: the first failing
item's error, naming the item; the other items were still processed).

Calls that cannot succeed fail fast: an unknown topic raises UnknownTopicOrPartitionError from the
broker's answer (describe_topics, delete_topics, create_partitions, describe_configs) or after one
metadata round trip (list_offsets). As in Java, a broker resource whose id is not (yet) in the metadata
is waited for until the timeout (the broker may be starting).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any

from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_table import api
from pykafka_client.admin.config import AdminClientConfig
from pykafka_client.admin.group_types import (
    AlterConfigOp,
    ConsumerGroupDescription,
    ConsumerGroupListing,
    ShareGroupDescription,
    SharePartitionOffsetInfo,
)
from pykafka_client.admin.handlers.abort_transaction import AbortTransactionHandler
from pykafka_client.admin.handlers.alter_client_quotas import AlterClientQuotasHandler
from pykafka_client.admin.handlers.alter_consumer_group_offsets import AlterConsumerGroupOffsetsHandler
from pykafka_client.admin.handlers.alter_partition_reassignments import AlterPartitionReassignmentsHandler
from pykafka_client.admin.handlers.alter_share_group_offsets import AlterShareGroupOffsetsHandler
from pykafka_client.admin.handlers.alter_user_scram_credentials import AlterUserScramCredentialsHandler
from pykafka_client.admin.handlers.create_acls import CreateAclsHandler
from pykafka_client.admin.handlers.create_partitions import CreatePartitionsHandler
from pykafka_client.admin.handlers.create_topics import CreateTopicsHandler
from pykafka_client.admin.handlers.delete_acls import DeleteAclsHandler
from pykafka_client.admin.handlers.delete_consumer_group_offsets import DeleteConsumerGroupOffsetsHandler
from pykafka_client.admin.handlers.delete_consumer_groups import DeleteConsumerGroupsHandler
from pykafka_client.admin.handlers.delete_records import DeleteRecordsHandler
from pykafka_client.admin.handlers.delete_share_group_offsets import DeleteShareGroupOffsetsHandler
from pykafka_client.admin.handlers.delete_share_groups import DeleteShareGroupsHandler
from pykafka_client.admin.handlers.delete_topics import DeleteTopicsHandler
from pykafka_client.admin.handlers.describe_acls import DescribeAclsHandler
from pykafka_client.admin.handlers.describe_client_quotas import DescribeClientQuotasHandler
from pykafka_client.admin.handlers.describe_cluster import DescribeClusterHandler
from pykafka_client.admin.handlers.describe_configs import DescribeConfigsHandler
from pykafka_client.admin.handlers.describe_consumer_groups import DescribeConsumerGroupsHandler
from pykafka_client.admin.handlers.describe_log_dirs import DescribeLogDirsHandler
from pykafka_client.admin.handlers.describe_producers import DescribeProducersHandler
from pykafka_client.admin.handlers.describe_share_groups import DescribeShareGroupsHandler
from pykafka_client.admin.handlers.describe_topics import DescribeTopicsHandler
from pykafka_client.admin.handlers.describe_transactions import DescribeTransactionsHandler
from pykafka_client.admin.handlers.describe_user_scram_credentials import DescribeUserScramCredentialsHandler
from pykafka_client.admin.handlers.elect_leaders import ElectLeadersHandler
from pykafka_client.admin.handlers.incremental_alter_configs import IncrementalAlterConfigsHandler
from pykafka_client.admin.handlers.list_consumer_group_offsets import ListConsumerGroupOffsetsHandler
from pykafka_client.admin.handlers.list_consumer_groups import ListConsumerGroupsHandler
from pykafka_client.admin.handlers.list_groups import ListGroupsHandler
from pykafka_client.admin.handlers.list_offsets import ListOffsetsHandler
from pykafka_client.admin.handlers.list_partition_reassignments import ListPartitionReassignmentsHandler
from pykafka_client.admin.handlers.list_share_group_offsets import ListShareGroupOffsetsHandler
from pykafka_client.admin.handlers.list_topics import ListTopicsHandler
from pykafka_client.admin.handlers.list_transactions import ListTransactionsHandler
from pykafka_client.admin.types import (
    AbortTransactionSpec,
    ClientQuotaAlteration,
    ClientQuotaEntity,
    ClientQuotaFilter,
    ClusterDescription,
    ConfigEntry,
    ConfigResource,
    CreateTopicResult,
    ElectionType,
    IsolationLevel,
    ListOffsetsResultInfo,
    LogDirDescription,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    PartitionReassignment,
    ProducerState,
    TopicDescription,
    TransactionDescription,
    TransactionListing,
    TransactionState,
    UserScramCredentialDeletion,
    UserScramCredentialsDescription,
    UserScramCredentialUpsertion,
)
from pykafka_client.client_utils import create_network_client
from pykafka_client.errors_base import KafkaError
from pykafka_client.network.metadata import Metadata
from pykafka_client.network.network_client import NetworkClient
from pykafka_client.network.transport.selectable import Selectable
from pykafka_client.protocol.acl import ANY_ACL, AclBinding, AclBindingFilter
from pykafka_client.structs import OffsetAndMetadata, PartitionMapping, TopicPartition
from pykafka_client.utils.time import SYSTEM_TIME, Time


class AdminClient:
    """Administer topics, partitions and configurations; inspect the cluster and offsets.

    ``AdminClient({"bootstrap.servers": "localhost:9092"})``; use as a context manager or call
    :meth:`close`. ``selector``/``time`` are injectable for tests.
    """

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        *,
        time: Time = SYSTEM_TIME,
        selector: Selectable | None = None,
        **overrides: Any,
    ) -> None:
        """``config`` maps Kafka's dotted names to values; keyword arguments name the same keys with
        ``_`` for ``.`` (``AdminClient(bootstrap_servers="host:9092")``) and win over ``config``."""
        self.config = AdminClientConfig(config, **overrides)
        c = self.config
        metadata = Metadata(
            int(c["retry.backoff.ms"]),
            int(c["retry.backoff.max.ms"]),
            int(c["metadata.max.age.ms"]),
            allow_auto_topic_creation=False,
        )
        client = create_network_client(
            c,
            metadata,
            client_id=str(c["client.id"]) or "pykafka-admin",
            max_in_flight_requests_per_connection=1,
            time=time,
            selector=selector,
        )
        self.metadata = metadata
        self._ctx = AdminContext(
            client,
            metadata,
            time,
            default_timeout_ms=int(c["default.api.timeout.ms"]),
            request_timeout_ms=int(c["request.timeout.ms"]),
            retry_backoff_ms=int(c["retry.backoff.ms"]),
            retries=int(c["retries"]),
            bootstrap_servers=",".join(c["bootstrap.servers"]),
        )

    # --- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        """Close every connection. Idempotent."""
        self._ctx.close()

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    @property
    def network_client(self) -> NetworkClient:
        return self._ctx.client

    # --- cluster -------------------------------------------------------------------------------

    def describe_cluster(self, timeout: float | None = None) -> ClusterDescription:
        """The cluster id, controller and brokers (DescribeCluster, or Metadata for older brokers)."""
        return api("describe_cluster", DescribeClusterHandler).call(self._ctx, timeout)

    def describe_log_dirs(
        self, broker_ids: Iterable[int] | None = None, timeout: float | None = None
    ) -> dict[int, dict[str, LogDirDescription]]:
        """Per broker (all when None), per log directory path: its error, its replicas' sizes and lags, and its
        volume's total/usable bytes (DescribeLogDirs). Raises the first broker-level error."""
        return api("describe_log_dirs", DescribeLogDirsHandler).call(self._ctx, broker_ids, timeout)

    # --- topics --------------------------------------------------------------------------------

    def create_topics(
        self, new_topics: Iterable[NewTopic], timeout: float | None = None, validate_only: bool = False
    ) -> dict[str, CreateTopicResult]:
        """Create topics; returns one result per topic. Raises the first topic's error (e.g.
        TopicExistsError) after all were attempted."""
        return api("create_topics", CreateTopicsHandler).call(self._ctx, new_topics, timeout, validate_only)

    def delete_topics(self, topics: Iterable[str], timeout: float | None = None) -> None:
        """Delete topics by name. Raises the first topic's error (e.g. UnknownTopicOrPartitionError)."""
        api("delete_topics", DeleteTopicsHandler).call(self._ctx, topics, timeout)

    def create_partitions(
        self, new_partitions: Mapping[str, NewPartitions], timeout: float | None = None, validate_only: bool = False
    ) -> None:
        """Increase partition counts. Raises the first topic's error (e.g. InvalidPartitionsError)."""
        api("create_partitions", CreatePartitionsHandler).call(self._ctx, new_partitions, timeout, validate_only)

    def describe_topics(self, topics: Iterable[str], timeout: float | None = None) -> dict[str, TopicDescription]:
        """Partitions, leaders, replicas and ISR of each topic. Raises UnknownTopicOrPartitionError (or
        another topic error) for the first topic that failed."""
        return api("describe_topics", DescribeTopicsHandler).call(self._ctx, topics, timeout)

    def list_topics(self, timeout: float | None = None) -> set[str]:
        """Names of all non-internal topics."""
        return api("list_topics", ListTopicsHandler).call(self._ctx, timeout)

    # --- partition placement (KIP-455, KIP-460) --------------------------------------------------

    def elect_leaders(self, election_type: ElectionType | int, partitions: Iterable[TopicPartition] | None = None,
                      timeout: float | None = None) -> dict[TopicPartition, KafkaError | None]:
        """Elect leaders (ElectionType.PREFERRED: the first replica; UNCLEAN: any alive replica of a leaderless
        partition). Per partition None (elected) or its error (e.g. ElectionNotNeededError); ``partitions``
        None: every partition, and only those elected are returned."""
        return api("elect_leaders", ElectLeadersHandler).call(self._ctx, election_type, partitions, timeout)

    def alter_partition_reassignments(self, reassignments: Mapping[TopicPartition, Sequence[int] | None],
                                      timeout: float | None = None) -> None:
        """Move partitions to new replicas (None: cancel an ongoing move). The new replicas copy the log and
        join the ISR, then leadership moves off a removed leader and the removed replicas are dropped. Raises
        the first partition's error (e.g. InvalidReplicaAssignmentError)."""
        api("alter_partition_reassignments", AlterPartitionReassignmentsHandler).call(self._ctx, reassignments,
                                                                                      timeout)

    def list_partition_reassignments(self, partitions: Iterable[TopicPartition] | None = None,
                                     timeout: float | None = None) -> dict[TopicPartition, PartitionReassignment]:
        """The ongoing reassignments (of ``partitions``; None: all)."""
        return api("list_partition_reassignments", ListPartitionReassignmentsHandler).call(self._ctx, partitions,
                                                                                           timeout)

    # --- client quotas -------------------------------------------------------------------------

    def alter_client_quotas(
        self, entries: Iterable[ClientQuotaAlteration], timeout: float | None = None, validate_only: bool = False
    ) -> dict[ClientQuotaEntity, BaseException | None]:
        """Set or remove client quotas (AlterClientQuotas); returns each entity's error or None. Raises the
        first entity's error (e.g. InvalidRequestError for an unknown key) after all were attempted."""
        return api("alter_client_quotas", AlterClientQuotasHandler).call(self._ctx, entries, timeout, validate_only)

    def describe_client_quotas(
        self, quota_filter: ClientQuotaFilter | None = None, timeout: float | None = None
    ) -> dict[ClientQuotaEntity, dict[str, float]]:
        """The client quotas set for the entities ``quota_filter`` matches (all when None)."""
        return api("describe_client_quotas", DescribeClientQuotasHandler).call(self._ctx, quota_filter, timeout)

    # --- ACLs ----------------------------------------------------------------------------------

    def create_acls(self, acls: Iterable[AclBinding], timeout: float | None = None
                    ) -> dict[AclBinding, BaseException | None]:
        """Create ACL bindings (CreateAcls); returns each binding's error or None. Raises the first binding's
        error (e.g. InvalidRequestError for a pattern type that is not LITERAL/PREFIXED) after all were attempted;
        SecurityDisabledError when the broker has no authorizer, ClusterAuthorizationFailedError without ALTER
        on the cluster."""
        return api("create_acls", CreateAclsHandler).call(self._ctx, acls, timeout)

    def describe_acls(self, acl_filter: AclBindingFilter = ANY_ACL, timeout: float | None = None
                      ) -> list[AclBinding]:
        """The ACL bindings ``acl_filter`` selects (DescribeAcls; all of them by default). Needs DESCRIBE on the
        cluster (else ClusterAuthorizationFailedError)."""
        return api("describe_acls", DescribeAclsHandler).call(self._ctx, acl_filter, timeout)

    def delete_acls(self, filters: Iterable[AclBindingFilter], timeout: float | None = None
                    ) -> dict[AclBindingFilter, list[AclBinding]]:
        """Delete the bindings each filter selects (DeleteAcls); returns per filter the bindings it removed.
        Raises the first filter's error after all were applied."""
        return api("delete_acls", DeleteAclsHandler).call(self._ctx, filters, timeout)

    # --- SCRAM credentials -----------------------------------------------------------------------

    def alter_user_scram_credentials(
        self, alterations: Iterable[UserScramCredentialUpsertion | UserScramCredentialDeletion],
        timeout: float | None = None,
    ) -> dict[str, BaseException | None]:
        """Create, replace or delete users' SCRAM credentials (AlterUserScramCredentials; the password is salted
        here and never sent). Returns each user's error or None; raises the first user's error (e.g.
        UnacceptableCredentialError for too few iterations, ResourceNotFoundError for deleting a missing one)
        after all were attempted."""
        return api("alter_user_scram_credentials", AlterUserScramCredentialsHandler).call(self._ctx, alterations, timeout)

    def describe_user_scram_credentials(
        self, users: Iterable[str] | None = None, timeout: float | None = None
    ) -> dict[str, UserScramCredentialsDescription]:
        """The mechanisms and iteration counts of ``users``' SCRAM credentials (every user that has one when
        None). A named user without any raises ResourceNotFoundError."""
        return api("describe_user_scram_credentials", DescribeUserScramCredentialsHandler).call(self._ctx, users, timeout)

    # --- configs -------------------------------------------------------------------------------

    def describe_configs(
        self, resources: Iterable[ConfigResource], timeout: float | None = None
    ) -> dict[ConfigResource, dict[str, ConfigEntry]]:
        """Configuration entries of topics / brokers. Broker resources go to that broker."""
        return api("describe_configs", DescribeConfigsHandler).call(self._ctx, resources, timeout)

    # --- consumer groups, records and incremental configs (issue 14) ---------------------------

    def list_consumer_groups(
        self, timeout: float | None = None, types: Iterable[str] | None = None
    ) -> list[ConsumerGroupListing]:
        """Every group of every broker (ListGroups to each), sorted by group id; with ``types`` (``"classic"``,
        ``"consumer"``) only groups of those types (needs ListGroups v5, Kafka 3.7+)."""
        return api("list_consumer_groups", ListConsumerGroupsHandler).call(self._ctx, timeout, types)

    def describe_consumer_groups(
        self, group_ids: Iterable[str], timeout: float | None = None
    ) -> dict[str, ConsumerGroupDescription]:
        """State, assignor and members (with their assignments) of each group. A group the broker does not
        know is described with state ``Dead`` and no members, as Kafka does. Consumer groups (KIP-848) are
        described by ConsumerGroupDescribe (``type`` ``consumer``, epochs, current and target assignments),
        the others by DescribeGroups, as Java's admin client."""
        return api("describe_consumer_groups", DescribeConsumerGroupsHandler).call(self._ctx, group_ids, timeout)

    def delete_consumer_groups(self, group_ids: Iterable[str], timeout: float | None = None) -> None:
        """Delete empty groups with their committed offsets. Raises GroupNotEmptyError for a group with
        members, GroupIdNotFoundError for an unknown one (the first failing group; the others were tried)."""
        api("delete_consumer_groups", DeleteConsumerGroupsHandler).call(self._ctx, group_ids, timeout)

    def list_groups(self, timeout: float | None = None, types: Iterable[str] | None = None) -> list[ConsumerGroupListing]:
        """Every group of every broker, of every type (Java ``Admin.listGroups``), sorted by group id; with
        ``types`` (``"classic"``, ``"consumer"``, ``"share"``) only groups of those types (ListGroups v5)."""
        return api("list_groups", ListGroupsHandler).call(self._ctx, timeout, types)

    # --- share groups (KIP-932) --------------------------------------------------------------------------

    def describe_share_groups(
        self, group_ids: Iterable[str], timeout: float | None = None
    ) -> dict[str, ShareGroupDescription]:
        """State, epochs, assignor and members (with their assignments) of each share group (ShareGroupDescribe
        to its coordinator). Raises GroupIdNotFoundError for a group id that is not a share group (the first
        failing group; the others were asked)."""
        return api("describe_share_groups", DescribeShareGroupsHandler).call(self._ctx, group_ids, timeout)

    def delete_share_groups(self, group_ids: Iterable[str], timeout: float | None = None) -> None:
        """Delete empty share groups with their share partitions' state. Raises GroupNotEmptyError for a group
        with members, GroupIdNotFoundError for an unknown one (the first failing group; the others were tried)."""
        api("delete_share_groups", DeleteShareGroupsHandler).call(self._ctx, group_ids, timeout)

    def list_share_group_offsets(
        self, group_id: str, partitions: Iterable[tuple[str, int]] | None = None, timeout: float | None = None
    ) -> dict[TopicPartition, SharePartitionOffsetInfo | None]:
        """The start offset, leader epoch and lag (None from a broker older than Kafka 4.2) of each share
        partition of ``group_id`` (all it has, or those of ``partitions``; None for one the group has not
        initialized yet). Raises GroupIdNotFoundError for a group id that is not a share group."""
        return api("list_share_group_offsets", ListShareGroupOffsetsHandler).call(
            self._ctx, group_id, partitions, timeout)

    def alter_share_group_offsets(
        self, group_id: str, offsets: PartitionMapping[int], timeout: float | None = None
    ) -> None:
        """Set the share-partition start offsets of ``group_id``, which must have no members (GroupNotEmptyError
        otherwise; a group id no group holds becomes an empty share group, as in Kafka 4.2): their in-flight records
        are dropped and the group's consumers read on from the new offsets."""
        api("alter_share_group_offsets", AlterShareGroupOffsetsHandler).call(self._ctx, group_id, offsets, timeout)

    def delete_share_group_offsets(self, group_id: str, topics: Iterable[str], timeout: float | None = None) -> None:
        """Delete the share-partition state of ``topics`` from ``group_id``, which must have no members
        (GroupNotEmptyError otherwise): its consumers start those partitions again at ``share.auto.offset.reset``."""
        api("delete_share_group_offsets", DeleteShareGroupOffsetsHandler).call(self._ctx, group_id, topics, timeout)

    def list_consumer_group_offsets(
        self, group_id: str, partitions: Iterable[tuple[str, int]] | None = None, timeout: float | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """The committed offsets of ``group_id`` (all of them, or those of ``partitions``); partitions
        without a committed offset are left out."""
        return api("list_consumer_group_offsets", ListConsumerGroupOffsetsHandler).call(self._ctx, group_id, partitions, timeout)

    def alter_consumer_group_offsets(
        self, group_id: str, offsets: PartitionMapping[OffsetAndMetadata | int], timeout: float | None = None
    ) -> None:
        """Commit ``offsets`` for ``group_id`` as an admin (no member, generation -1): the group must have
        no active members, else the broker refuses (UnknownMemberIdError; Kafka's rule)."""
        api("alter_consumer_group_offsets", AlterConsumerGroupOffsetsHandler).call(self._ctx, group_id, offsets, timeout)

    def delete_consumer_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition], timeout: float | None = None
    ) -> dict[TopicPartition, BaseException | None]:
        """Delete ``group_id``'s committed offsets of ``partitions`` (OffsetDelete). A group-level error is
        raised (GroupIdNotFoundError; NonEmptyGroupError when the group has active members, Kafka's rule for a
        classic group); each partition's value is None (deleted) or its error (GroupSubscribedToTopicError: the
        group's members still subscribe to the topic)."""
        return api("delete_consumer_group_offsets", DeleteConsumerGroupOffsetsHandler).call(
            self._ctx, group_id, partitions, timeout)

    def delete_records(
        self, before_offsets: PartitionMapping[int], timeout: float | None = None
    ) -> dict[TopicPartition, int]:
        """Delete the records of each partition below the given offset (-1: the high watermark), asked of
        each partition's leader; returns each partition's new low watermark."""
        return api("delete_records", DeleteRecordsHandler).call(self._ctx, before_offsets, timeout)

    def incremental_alter_configs(
        self, configs: Mapping[ConfigResource, Iterable[AlterConfigOp]], timeout: float | None = None,
        validate_only: bool = False,
    ) -> None:
        """Set, delete, append to or subtract from config overrides of topics and brokers (broker resources
        go to that broker). Raises the first resource's error after all were attempted."""
        api("incremental_alter_configs", IncrementalAlterConfigsHandler).call(self._ctx, configs, timeout, validate_only)

    # --- offsets -------------------------------------------------------------------------------

    def list_offsets(
        self,
        specs: PartitionMapping[OffsetSpec],
        timeout: float | None = None,
        isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
    ) -> dict[TopicPartition, ListOffsetsResultInfo]:
        """Earliest / latest / max-timestamp / by-timestamp offsets, asked of each partition's leader;
        keyed by TopicPartition (equal to the ``(topic, partition)`` tuples it accepts).

        A topic the cluster does not have, or a partition past its partition count, raises
        UnknownTopicOrPartitionError after one metadata round trip (as Java since KAFKA-15425); a
        partition without a leader (an election in progress) is retried until the timeout.
        """
        return api("list_offsets", ListOffsetsHandler).call(self._ctx, specs, timeout, isolation_level)

    # --- transactions -------------------------------------------------------------------------

    def describe_transactions(self, transactional_ids: Iterable[str],
                              timeout: float | None = None) -> dict[str, TransactionDescription]:
        """State, producer id/epoch, timeout, start time and partitions of each transactional id, asked of its
        coordinator. An unknown id raises TransactionalIdNotFoundError naming it."""
        return api("describe_transactions", DescribeTransactionsHandler).call(self._ctx, transactional_ids, timeout)

    def list_transactions(self, states: Iterable[TransactionState] = (), producer_ids: Iterable[int] = (),
                          duration_ms: int = -1, timeout: float | None = None) -> list[TransactionListing]:
        """Every transactional id of every broker, filtered by state, producer id and (``duration_ms`` >= 0)
        a transaction start more than that long ago (ids with no open transaction match that filter too, as
        in Kafka: combine it with ``states=[TransactionState.ONGOING]``)."""
        return api("list_transactions", ListTransactionsHandler).call(
            self._ctx, states, producer_ids, duration_ms, timeout)

    def abort_transaction(self, spec: AbortTransactionSpec, timeout: float | None = None) -> None:
        """End a partition's open transaction by writing an ABORT marker to its leader (Java
        ``abortTransaction``), for a hanging transaction that no coordinator will finish (see
        ``pykafka transactions find-hanging``). Take the producer id and epoch, and the coordinator epoch,
        from :meth:`describe_producers`. A stale producer epoch raises InvalidProducerEpochError and a stale
        coordinator epoch TransactionCoordinatorFencedError; an unknown partition UnknownTopicOrPartitionError."""
        api("abort_transaction", AbortTransactionHandler).call(self._ctx, spec, timeout)

    # --- producers -----------------------------------------------------------------------------

    def describe_producers(self, partitions: Iterable[tuple[str, int]], timeout: float | None = None
                           ) -> dict[TopicPartition, list[ProducerState]]:
        """The active idempotent/transactional producers of each partition (keyed by TopicPartition), asked of its leader (Java
        ``describeProducers``): producer id and epoch, last sequence and timestamp, coordinator epoch and the
        start offset of its open transaction (None when none). Errors as :meth:`list_offsets`."""
        return api("describe_producers", DescribeProducersHandler).call(self._ctx, partitions, timeout)


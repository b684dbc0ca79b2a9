"""The async admin client: every :class:`~pykafka_client.admin.AdminClient` operation as a coroutine.

The sync AdminClient drives its NetworkClient in the calling thread, one operation at a time; here each
operation runs on a worker thread (``anyio.to_thread``), so the event loop never waits for the network.
Operations from several tasks queue up on the admin's lock, in a worker thread each. Cancelling a task
stops its waiting; the operation itself runs to its end or its ``timeout`` (a request already sent may
still take effect: check, as after the sync KafkaTimeoutError).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

import anyio

from pykafka_client.admin import AdminClient
from pykafka_client.admin.group_types import (
    AlterConfigOp,
    ConsumerGroupDescription,
    ConsumerGroupListing,
    ShareGroupDescription,
    SharePartitionOffsetInfo,
)
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
from pykafka_client.errors import IllegalStateError
from pykafka_client.errors_base import KafkaError
from pykafka_client.protocol.acl import ANY_ACL, AclBinding, AclBindingFilter
from pykafka_client.structs import OffsetAndMetadata, PartitionMapping, TopicPartition

T = TypeVar("T")


class AsyncAdminClient:
    """See the module docstring; arguments, results and errors are the sync AdminClient's."""

    def __init__(self, config: Mapping[str, Any] | None = None, **overrides: Any) -> None:
        self._admin = AdminClient(config, **overrides)
        self.config = self._admin.config
        self._closed = False

    @property
    def sync_admin(self) -> AdminClient:
        return self._admin

    async def _run(self, fn: Callable[[], T]) -> T:
        if self._closed:
            raise IllegalStateError("The admin client has already been closed.")
        return await anyio.to_thread.run_sync(fn, abandon_on_cancel=True)

    async def describe_cluster(self, timeout: float | None = None) -> ClusterDescription:
        return await self._run(lambda: self._admin.describe_cluster(timeout))

    async def describe_log_dirs(
        self, broker_ids: Iterable[int] | None = None, timeout: float | None = None
    ) -> dict[int, dict[str, LogDirDescription]]:
        return await self._run(lambda: self._admin.describe_log_dirs(broker_ids, timeout))

    async def create_topics(
        self, new_topics: Iterable[NewTopic], timeout: float | None = None, validate_only: bool = False
    ) -> dict[str, CreateTopicResult]:
        return await self._run(lambda: self._admin.create_topics(new_topics, timeout, validate_only))

    async def delete_topics(self, topics: Iterable[str], timeout: float | None = None) -> None:
        await self._run(lambda: self._admin.delete_topics(topics, timeout))

    async def create_partitions(
        self, new_partitions: Mapping[str, NewPartitions], timeout: float | None = None, validate_only: bool = False
    ) -> None:
        await self._run(lambda: self._admin.create_partitions(new_partitions, timeout, validate_only))

    async def elect_leaders(self, election_type: ElectionType | int, partitions: Iterable[TopicPartition] | None = None,
                            timeout: float | None = None) -> dict[TopicPartition, KafkaError | None]:
        return await self._run(lambda: self._admin.elect_leaders(election_type, partitions, timeout))

    async def alter_partition_reassignments(self, reassignments: Mapping[TopicPartition, Sequence[int] | None],
                                            timeout: float | None = None) -> None:
        await self._run(lambda: self._admin.alter_partition_reassignments(reassignments, timeout))

    async def list_partition_reassignments(self, partitions: Iterable[TopicPartition] | None = None,
                                           timeout: float | None = None) -> dict[TopicPartition, PartitionReassignment]:
        return await self._run(lambda: self._admin.list_partition_reassignments(partitions, timeout))

    async def describe_topics(self, topics: Iterable[str], timeout: float | None = None) -> dict[str, TopicDescription]:
        return await self._run(lambda: self._admin.describe_topics(topics, timeout))

    async def list_topics(self, timeout: float | None = None) -> set[str]:
        return await self._run(lambda: self._admin.list_topics(timeout))

    async def alter_client_quotas(
        self, entries: Iterable[ClientQuotaAlteration], timeout: float | None = None, validate_only: bool = False
    ) -> dict[ClientQuotaEntity, BaseException | None]:
        return await self._run(lambda: self._admin.alter_client_quotas(entries, timeout, validate_only))

    async def alter_user_scram_credentials(
        self, alterations: Iterable[UserScramCredentialUpsertion | UserScramCredentialDeletion],
        timeout: float | None = None,
    ) -> dict[str, BaseException | None]:
        return await self._run(lambda: self._admin.alter_user_scram_credentials(alterations, timeout))

    async def describe_user_scram_credentials(
        self, users: Iterable[str] | None = None, timeout: float | None = None
    ) -> dict[str, UserScramCredentialsDescription]:
        return await self._run(lambda: self._admin.describe_user_scram_credentials(users, timeout))

    async def describe_client_quotas(
        self, quota_filter: ClientQuotaFilter | None = None, timeout: float | None = None
    ) -> dict[ClientQuotaEntity, dict[str, float]]:
        return await self._run(lambda: self._admin.describe_client_quotas(quota_filter, timeout))

    async def create_acls(self, acls: Iterable[AclBinding], timeout: float | None = None
                          ) -> dict[AclBinding, BaseException | None]:
        return await self._run(lambda: self._admin.create_acls(acls, timeout))

    async def describe_acls(self, acl_filter: AclBindingFilter = ANY_ACL, timeout: float | None = None
                            ) -> list[AclBinding]:
        return await self._run(lambda: self._admin.describe_acls(acl_filter, timeout))

    async def delete_acls(self, filters: Iterable[AclBindingFilter], timeout: float | None = None
                          ) -> dict[AclBindingFilter, list[AclBinding]]:
        return await self._run(lambda: self._admin.delete_acls(filters, timeout))

    async def describe_configs(
        self, resources: Iterable[ConfigResource], timeout: float | None = None
    ) -> dict[ConfigResource, dict[str, ConfigEntry]]:
        return await self._run(lambda: self._admin.describe_configs(resources, timeout))

    async def incremental_alter_configs(
        self,
        configs: Mapping[ConfigResource, Iterable[AlterConfigOp]],
        timeout: float | None = None,
        validate_only: bool = False,
    ) -> None:
        await self._run(lambda: self._admin.incremental_alter_configs(configs, timeout, validate_only))

    async def list_consumer_groups(
        self, timeout: float | None = None, types: Iterable[str] | None = None
    ) -> list[ConsumerGroupListing]:
        return await self._run(lambda: self._admin.list_consumer_groups(timeout, types))

    async def describe_consumer_groups(
        self, group_ids: Iterable[str], timeout: float | None = None
    ) -> dict[str, ConsumerGroupDescription]:
        return await self._run(lambda: self._admin.describe_consumer_groups(group_ids, timeout))

    async def delete_consumer_groups(self, group_ids: Iterable[str], timeout: float | None = None) -> None:
        await self._run(lambda: self._admin.delete_consumer_groups(group_ids, timeout))

    async def list_groups(self, timeout: float | None = None,
                          types: Iterable[str] | None = None) -> list[ConsumerGroupListing]:
        return await self._run(lambda: self._admin.list_groups(timeout, types))

    async def describe_share_groups(
        self, group_ids: Iterable[str], timeout: float | None = None
    ) -> dict[str, ShareGroupDescription]:
        return await self._run(lambda: self._admin.describe_share_groups(group_ids, timeout))

    async def delete_share_groups(self, group_ids: Iterable[str], timeout: float | None = None) -> None:
        await self._run(lambda: self._admin.delete_share_groups(group_ids, timeout))

    async def list_share_group_offsets(
        self, group_id: str, partitions: Iterable[tuple[str, int]] | None = None, timeout: float | None = None
    ) -> dict[TopicPartition, SharePartitionOffsetInfo | None]:
        return await self._run(lambda: self._admin.list_share_group_offsets(group_id, partitions, timeout))

    async def alter_share_group_offsets(
        self, group_id: str, offsets: PartitionMapping[int], timeout: float | None = None
    ) -> None:
        await self._run(lambda: self._admin.alter_share_group_offsets(group_id, offsets, timeout))

    async def delete_share_group_offsets(self, group_id: str, topics: Iterable[str],
                                         timeout: float | None = None) -> None:
        await self._run(lambda: self._admin.delete_share_group_offsets(group_id, topics, timeout))

    async def list_consumer_group_offsets(
        self, group_id: str, partitions: Iterable[tuple[str, int]] | None = None, timeout: float | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        return await self._run(lambda: self._admin.list_consumer_group_offsets(group_id, partitions, timeout))

    async def alter_consumer_group_offsets(
        self, group_id: str, offsets: PartitionMapping[OffsetAndMetadata | int], timeout: float | None = None
    ) -> None:
        await self._run(lambda: self._admin.alter_consumer_group_offsets(group_id, offsets, timeout))

    async def delete_consumer_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition], timeout: float | None = None
    ) -> dict[TopicPartition, BaseException | None]:
        return await self._run(lambda: self._admin.delete_consumer_group_offsets(group_id, partitions, timeout))

    async def delete_records(
        self, before_offsets: PartitionMapping[int], timeout: float | None = None
    ) -> dict[TopicPartition, int]:
        return await self._run(lambda: self._admin.delete_records(before_offsets, timeout))

    async def list_offsets(
        self,
        specs: PartitionMapping[OffsetSpec],
        timeout: float | None = None,
        isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
    ) -> dict[TopicPartition, ListOffsetsResultInfo]:
        return await self._run(lambda: self._admin.list_offsets(specs, timeout, isolation_level))

    async def describe_transactions(
        self, transactional_ids: Iterable[str], timeout: float | None = None
    ) -> dict[str, TransactionDescription]:
        return await self._run(lambda: self._admin.describe_transactions(transactional_ids, timeout))

    async def list_transactions(
        self,
        states: Iterable[TransactionState] = (),
        producer_ids: Iterable[int] = (),
        duration_ms: int = -1,
        timeout: float | None = None,
    ) -> list[TransactionListing]:
        return await self._run(lambda: self._admin.list_transactions(states, producer_ids, duration_ms, timeout))

    async def abort_transaction(self, spec: AbortTransactionSpec, timeout: float | None = None) -> None:
        await self._run(lambda: self._admin.abort_transaction(spec, timeout))

    async def describe_producers(
        self, partitions: Iterable[tuple[str, int]], timeout: float | None = None
    ) -> dict[TopicPartition, list[ProducerState]]:
        return await self._run(lambda: self._admin.describe_producers(partitions, timeout))

    async def close(self) -> None:
        """Close every connection (waits, on a worker thread, for an operation still running). Idempotent."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._admin.close)

    async def __aenter__(self) -> AsyncAdminClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
